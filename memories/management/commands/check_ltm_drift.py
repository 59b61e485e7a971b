from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.ltm.rebuild import ltm_drift
from memories.management.drift import drift_verdict, drift_write
from memoryproject.errors import StoreUnavailable


class Command(BaseCommand):
    help = "Report (and with --repair fix) cards whose ids or versions differ between "
    help += "PostgreSQL, Elasticsearch and Milvus (check_drift checks every store)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repair", action="store_true", help="reindex or remove what differs")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = ltm_drift(repair=options["repair"])
        except StoreUnavailable as exc:
            raise CommandError(str(exc)) from exc
        drift_write(self.stdout, report)
        drift_verdict(self.stdout, clean=report.clean, repaired=options["repair"])
