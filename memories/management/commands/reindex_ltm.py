from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.ltm.rebuild import ltm_reindex
from memories.management.options import progress_bar, tenant_option
from memoryproject.errors import StoreUnavailable


class Command(BaseCommand):
    help = "Rebuild the Elasticsearch and Milvus indexes of long-term cards from PostgreSQL."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant's cards (slug), rewritten in place")
        parser.add_argument("--batch-size", type=int, default=256)

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_option(options["tenant"])
        progress = progress_bar(self.stdout, "cards")

        try:
            written = ltm_reindex(
                tenant=tenant, batch_size=options["batch_size"], progress=progress
            )
        except StoreUnavailable as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"\nreindexed {written} cards")
