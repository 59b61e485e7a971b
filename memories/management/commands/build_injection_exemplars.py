from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from memories.ltm.embedder import embedder
from memories.quarantine.exemplars import (
    EXEMPLAR_FILE,
    exemplars_embed,
    exemplars_save,
    tuning_rows,
)

LABELLED_SET = Path(settings.BASE_DIR) / "tests" / "data" / "quarantine_labelled.jsonl"


class Command(BaseCommand):
    help = (
        "Embed the labelled set's tuning part with the configured embedder and write the "
        "quarantine's exemplars (memories/data/injection_exemplars.npz)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--labelled", type=Path, default=LABELLED_SET)
        parser.add_argument("--output", type=Path, default=EXEMPLAR_FILE)

    def handle(self, *args: Any, **options: Any) -> None:
        rows = tuning_rows(options["labelled"])
        model = embedder()
        exemplars = exemplars_embed(rows=rows, embed=model.embed_query, model_name=model.model_name)
        exemplars_save(exemplars, options["output"])
        hostile = sum(1 for _, reason in rows if reason)
        self.stdout.write(
            f"{len(rows)} exemplars ({hostile} hostile) embedded with {model.model_name} "
            f"into {options['output']}"
        )
