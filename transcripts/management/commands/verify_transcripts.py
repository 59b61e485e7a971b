from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from transcripts.models import Session
from transcripts.selectors import orphan_objects, transcript_verify
from transcripts.services import orphan_objects_remove


class Command(BaseCommand):
    help = (
        "Re-hash stored transcript segments and report every broken chain; report (and with "
        "--remove-orphans delete) objects in transcript storage that no segment names."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant (slug)")
        parser.add_argument("--session", help="only this session id")
        parser.add_argument(
            "--remove-orphans",
            action="store_true",
            help="delete orphan objects older than --orphan-min-age (an append in flight "
            "writes its object before its row commits)",
        )
        parser.add_argument(
            "--orphan-min-age",
            type=int,
            default=600,
            metavar="SECONDS",
            help="orphans younger than this are reported, never removed (default 600)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        sessions = Session.objects.select_related("tenant").order_by("pk")
        if options["tenant"]:
            sessions = sessions.filter(tenant__slug=options["tenant"])
        if options["session"]:
            sessions = sessions.filter(external_id=options["session"])
        broken = checked = 0
        for session in sessions.iterator():
            report = transcript_verify(session=session)
            checked += 1
            if not report.ok:
                broken += 1
                for problem in report.problems:
                    self.stdout.write(
                        f"BROKEN {session.tenant.slug}/{session.external_id} segment "
                        f"{problem['segment']} ({problem['path']}): {problem['reason']}"
                    )
        self.stdout.write(f"{checked} session(s) checked, {broken} broken")
        self._orphans(sessions=sessions, options=options)
        if broken:
            raise CommandError(f"{broken} session(s) failed verification")

    def _orphans(self, *, sessions: Any, options: dict[str, Any]) -> None:
        if options["session"]:
            scopes = [{"session": session} for session in sessions]
        elif options["tenant"]:
            tenant_ids = {session.tenant_id for session in sessions}
            scopes = [{"tenant_id": tenant_id} for tenant_id in sorted(tenant_ids)]
        else:
            scopes = [{}]
        cutoff = timezone.now() - timedelta(seconds=options["orphan_min_age"])
        found = 0
        old: list[str] = []
        for scope in scopes:
            for orphan in orphan_objects(**scope):
                found += 1
                empty = ", empty" if orphan.size == 0 else ""
                self.stdout.write(
                    f"ORPHAN {orphan.name} ({orphan.size} bytes{empty}, "
                    f"modified {orphan.modified_at.isoformat(timespec='seconds')})"
                )
                if orphan.modified_at <= cutoff:
                    old.append(orphan.name)
        removed = orphan_objects_remove(names=old) if options["remove_orphans"] and old else []
        summary = f"{found} orphan object(s)"
        if options["remove_orphans"]:
            summary += f", {len(removed)} removed"
        elif old:
            summary += f"; --remove-orphans deletes the {len(old)} older than the minimum age"
        self.stdout.write(summary)
