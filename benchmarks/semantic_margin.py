"""Choose recall's closeness-in-meaning margin on the agent-question set's tuning part and
report it on the held-out part, in process (no service): the statements of each persona are
embedded as the worker embeds short-term items, every question and unrelated question as recall
embeds a query, and each question's margin above its background (`memories/recall/semantic.py`)
is compared with the statements'.

For each margin on a grid it prints, per part and language: the share of questions whose
expected statement lies at least that far above the background ("found by meaning"), and the
share of unrelated questions with any statement that far above it ("unrelated reached"). The
margin chosen is the smallest whose unrelated share on the tuning part stays within
`--max-unrelated` (both languages); the held-out figures at it are the ones to quote.

    .venv/bin/python benchmarks/semantic_margin.py
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from _setup import ROOT, django_setup

DATA = ROOT / "tests" / "data" / "agent_questions.json"
GRID = [round(0.01 * step, 2) for step in range(0, 17)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--max-unrelated", type=float, default=0.02)
    parser.add_argument(
        "--background",
        choices=("reference-mean", "reference-nearest3", "user-median"),
        default="reference-mean",
        help="what a cosine is judged against: recall's (the default) or an alternative tried",
    )
    args = parser.parse_args()
    django_setup()
    import numpy as np

    from memories.ltm.embedder import embedder
    from memories.recall.semantic import _reference, background

    model = embedder()

    def base_of(query: np.ndarray, cosines: np.ndarray) -> float:
        if args.background == "reference-nearest3":
            return float(np.sort(_reference() @ query)[-3:].mean())
        if args.background == "user-median":
            return float(np.median(cosines))
        return background(query)

    personas = json.loads(args.data.read_text())["personas"]
    # (split, lang, kind) -> list of (margin of the expected statement, best margin of any)
    rows: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for persona in personas:
        statements = [s for session in persona["sessions"] for s in session["statements"]]
        ids = [s["id"] for s in statements]
        passages = model.embed_passages([s["text"] for s in statements])
        for case in persona["cases"]:
            query = model.embed_query(case["question"])
            cosines = passages @ query
            base = base_of(query, cosines)
            expected = max(float(cosines[ids.index(i)]) for i in case["expects"])
            rows[(persona["split"], persona["lang"], "case")].append(expected - base)
        for unrelated in persona["unrelated"]:
            query = model.embed_query(unrelated["question"])
            cosines = passages @ query
            best = float(np.max(cosines)) - base_of(query, cosines)
            rows[(persona["split"], persona["lang"], "unrelated")].append(best)

    def share(split: str, lang: str, kind: str, margin: float) -> float:
        values = rows[(split, lang, kind)]
        return 100.0 * sum(v >= margin for v in values) / max(1, len(values))

    parts = [(split, lang) for split in ("tune", "heldout") for lang in ("en", "zh")]
    print(f"{'margin':>6}  " + "  ".join(f"{s:>7}-{lang}:found/unrel" for s, lang in parts))
    chosen = None
    for margin in GRID:
        cells = [
            f"{share(s, lang, 'case', margin):6.1f} / {share(s, lang, 'unrelated', margin):4.1f}   "
            for s, lang in parts
        ]
        print(f"{margin:6.2f}  " + "".join(cells))
        limit = 100 * args.max_unrelated
        if chosen is None and all(
            share("tune", lang, "unrelated", margin) <= limit for lang in ("en", "zh")
        ):
            chosen = margin
    print(f"\nchosen on the tuning part (unrelated reached <= {args.max_unrelated:.0%}): {chosen}")
    if chosen is not None:
        for split in ("tune", "heldout"):
            for lang in ("en", "zh"):
                found = share(split, lang, "case", chosen)
                reached = share(split, lang, "unrelated", chosen)
                print(
                    f"  {split:7} {lang}: found by meaning {found:5.1f}% of "
                    f"{len(rows[(split, lang, 'case')])}, unrelated reached {reached:4.1f}% of "
                    f"{len(rows[(split, lang, 'unrelated')])}"
                )


if __name__ == "__main__":
    main()
