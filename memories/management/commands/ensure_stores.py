from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memories.services import stores_ensure
from memoryproject.errors import StoreUnavailable


class Command(BaseCommand):
    help = "Create what every registered store needs: Elasticsearch templates and indexes, "
    help += "Milvus collections, Redis scripts."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            done = stores_ensure()
        except StoreUnavailable as exc:
            raise CommandError(str(exc)) from exc
        for line in done:
            self.stdout.write(f"ok  {line}")
