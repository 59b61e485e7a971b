from collections import defaultdict
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from memories.ltm.embedder import embedder
from memories.write.meaning import (
    KINDS,
    PROBE_FILE,
    kind_probe_train,
    labelled_sentences,
)

DATA = Path(settings.BASE_DIR) / "tests" / "data"


class Command(BaseCommand):
    help = (
        "Train the probe that reads what a user's sentence states by meaning on the tuning "
        "parts of the labelled sets, print how it reads the held-out parts, and write it "
        "(memories/data/statement_probe.npz)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--extraction", type=Path, default=DATA / "extraction_labelled.jsonl")
        parser.add_argument("--everyday", type=Path, default=DATA / "everyday_statements.jsonl")
        parser.add_argument("--output", type=Path, default=PROBE_FILE)
        parser.add_argument("--l2", type=float, default=0.1)
        parser.add_argument("--dry-run", action="store_true", help="measure, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        rows = labelled_sentences(extraction=options["extraction"], everyday=options["everyday"])
        model = embedder()
        vectors = model.embed_passages([row.text for row in rows])
        tuning = [i for i, row in enumerate(rows) if row.tuning]
        probe = kind_probe_train(
            vectors[tuning],
            [rows[i].kind for i in tuning],
            model_name=model.model_name,
            l2=options["l2"],
        )
        held = [i for i, row in enumerate(rows) if not row.tuning]
        read = probe.kinds_of(vectors[held])
        by_group: dict[tuple[str, str], list[bool]] = defaultdict(list)
        for i, (kind, _) in zip(held, read, strict=True):
            by_group[rows[i].lang, rows[i].kind].append(kind == rows[i].kind)
        self.stdout.write(f"trained on {len(tuning)} sentences; held out {len(held)}:")
        for lang in ("en", "zh"):
            shown = ", ".join(
                f"{kind} {100 * sum(hits) / len(hits):.1f}% ({len(hits)})"
                for kind in KINDS
                if (hits := by_group.get((lang, kind)))
            )
            self.stdout.write(f"  {lang}: {shown}")
        if not options["dry_run"]:
            probe.save(options["output"])
            self.stdout.write(f"wrote {options['output']}")
