import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from memories.ltm.embedder import embedder
from memories.quarantine.exemplars import (
    EXEMPLAR_FILE,
    PROBE_FILE,
    PROBE_PARTS,
    exemplars_embed,
    exemplars_save,
    meaning_screen_of,
    probe_build,
    probe_save,
    tuning_rows,
)

LABELLED_SET = Path(settings.BASE_DIR) / "tests" / "data" / "quarantine_labelled.jsonl"
# Ordinary conversation for the probe's threshold: the LoCoMo development split beside the
# checkout, where the team keeps it.
LOCOMO_DEV = Path(settings.BASE_DIR).parent / "shared" / "data" / "locomo" / "locomo_dev.json"


def locomo_texts(path: Path) -> list[str]:
    """Every turn's text of a LoCoMo-format file."""
    texts = []
    for conversation in json.loads(path.read_text(encoding="utf-8")):
        for name, turns in conversation["conversation"].items():
            if name.startswith("session_") and isinstance(turns, list):
                texts += [str(turn["text"]) for turn in turns]
    return texts


class Command(BaseCommand):
    help = (
        "Embed the labelled set's tuning part with the configured embedder and write the "
        "quarantine's exemplars (memories/data/injection_exemplars.npz); train its probe on "
        "the tuning and earlier fresh parts (memories/data/injection_probe.npz)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--labelled", type=Path, default=LABELLED_SET)
        parser.add_argument("--output", type=Path, default=EXEMPLAR_FILE)
        parser.add_argument("--probe-output", type=Path, default=PROBE_FILE)
        parser.add_argument(
            "--ordinary",
            type=Path,
            default=LOCOMO_DEV,
            help="a LoCoMo-format file of ordinary conversation for the probe's threshold",
        )

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
        ordinary_path: Path = options["ordinary"]
        if ordinary_path.exists():
            ordinary = locomo_texts(ordinary_path)
        else:
            ordinary = []
            self.stderr.write(f"no {ordinary_path}: the probe's threshold ignores ordinary text")
        screen = meaning_screen_of(
            model_name=model.model_name, embed=model.embed_query, with_probe=False
        )
        probe, counts = probe_build(
            rows=tuning_rows(options["labelled"], parts=PROBE_PARTS),
            ordinary=ordinary,
            embed=model.embed_query,
            model_name=model.model_name,
            screen=screen,
        )
        probe_save(probe, options["probe_output"])
        self.stdout.write(
            f"probe trained on {counts['sentences']} sentences ({counts['hostile']} hostile) of "
            f"{', '.join(PROBE_PARTS)}; threshold {probe.threshold:.3f} "
            f"({counts['ordinary read']} of {len(ordinary)} ordinary turns read) "
            f"into {options['probe_output']}"
        )
