from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.ltm.services import ltm_reindex
from memoryproject.errors import StoreUnavailable
from profiles.models import Tenant


class Command(BaseCommand):
    help = "Rebuild the Elasticsearch and Milvus indexes of long-term cards from PostgreSQL."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant's cards (slug), rewritten in place")
        parser.add_argument("--batch-size", type=int, default=256)

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"No tenant {options['tenant']!r}.")

        def progress(done: int, total: int) -> None:
            width = 30
            filled = width * done // max(total, 1)
            bar = "#" * filled + "." * (width - filled)
            self.stdout.write(f"\r[{bar}] {done}/{total} cards", ending="")
            self.stdout.flush()

        try:
            written = ltm_reindex(
                tenant=tenant, batch_size=options["batch_size"], progress=progress
            )
        except StoreUnavailable as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"\nreindexed {written} cards")
