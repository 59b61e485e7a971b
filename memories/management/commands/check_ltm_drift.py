from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.ltm.services import ltm_drift
from memoryproject.errors import StoreUnavailable


class Command(BaseCommand):
    help = "Report (and with --repair fix) cards whose ids or versions differ between "
    help += "PostgreSQL, Elasticsearch and Milvus."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repair", action="store_true", help="reindex or remove what differs")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = ltm_drift(repair=options["repair"])
        except StoreUnavailable as exc:
            raise CommandError(str(exc)) from exc
        for kind in ("missing", "stale", "extra"):
            for index, ids in getattr(report, kind).items():
                for memory_id in ids:
                    self.stdout.write(f"{kind:8} {index:14} {memory_id}")
        if report.clean:
            self.stdout.write("no drift")
        elif options["repair"]:
            self.stdout.write("repaired")
        else:
            raise CommandError("drift found; run with --repair to fix it")
