from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memories.ltm.embedder import embedder
from memories.recall.own_world import (
    EXEMPLAR_TEXTS,
    EXEMPLAR_VECTORS,
    OWN,
    exemplars_embed,
    exemplars_save,
)


class Command(BaseCommand):
    help = (
        "Embed recall's written examples of questions about the user's own world and about the "
        "world at large (memories/data/question_exemplars.tsv) with the configured embedder "
        "into memories/data/question_exemplars.npz."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--texts", type=Path, default=EXEMPLAR_TEXTS)
        parser.add_argument("--output", type=Path, default=EXEMPLAR_VECTORS)

    def handle(self, *args: Any, **options: Any) -> None:
        model = embedder()
        exemplars = exemplars_embed(
            embed=model.embed_query, model_name=model.model_name, path=options["texts"]
        )
        exemplars_save(exemplars, options["output"])
        own = sum(1 for label in exemplars.labels if label == OWN)
        self.stdout.write(
            f"{len(exemplars.texts)} exemplars ({own} own, {len(exemplars.texts) - own} world) "
            f"embedded with {model.model_name} into {options['output']}"
        )
