from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.history.rebuild import history_drift
from memories.management.drift import drift_verdict, drift_write
from memories.management.options import tenant_option
from memoryproject.errors import StoreUnavailable


class Command(BaseCommand):
    help = "Report (and with --repair fix) history entries that the transcript segments call "
    help += "for but Elasticsearch or Milvus lack, or that they hold without a live event "
    help += "(check_drift checks every store)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant (slug)")
        parser.add_argument("--repair", action="store_true", help="index or remove what differs")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_option(options["tenant"])
        try:
            report = history_drift(tenant=tenant, repair=options["repair"])
        except StoreUnavailable as exc:
            raise CommandError(str(exc)) from exc
        drift_write(self.stdout, report)
        drift_verdict(self.stdout, clean=report.clean, repaired=options["repair"])
