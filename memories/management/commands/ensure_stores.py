from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memories.services import stores_ensure
from memoryproject.errors import StoreUnavailable


class Command(BaseCommand):
    help = "Create Elasticsearch templates and indexes, the Milvus collection, and Redis scripts."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            done = stores_ensure()
        except StoreUnavailable as exc:
            raise CommandError(str(exc)) from exc
        for line in done:
            self.stdout.write(f"ok  {line}")
