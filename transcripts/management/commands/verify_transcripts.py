from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from transcripts.models import Session
from transcripts.selectors import transcript_verify


class Command(BaseCommand):
    help = "Re-hash stored transcript segments and report every broken chain."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant (slug)")
        parser.add_argument("--session", help="only this session id")

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
        if broken:
            raise CommandError(f"{broken} session(s) failed verification")
