from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.history.rebuild import history_reindex
from memories.management.options import progress_bar, tenant_option
from memoryproject.errors import StoreUnavailable


class Command(BaseCommand):
    help = "Rebuild the episodic history indexes (Elasticsearch and Milvus) from the transcript "
    help += "segments; safe to rerun. A tenant with history switched off has its entries removed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant (slug)")
        parser.add_argument("--batch-size", type=int, default=256, help="entries per embedding")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_option(options["tenant"])
        progress = progress_bar(self.stdout, "events")

        try:
            result = history_reindex(
                tenant=tenant, batch_size=max(options["batch_size"], 1), progress=progress
            )
        except StoreUnavailable as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"\nreindexed {result.entries} history entries from {result.events} events of "
            f"{result.sessions} sessions; removed {result.removed}"
        )
        for slug in result.switched_off:
            self.stdout.write(f"history is switched off for {slug}: its entries were removed")
