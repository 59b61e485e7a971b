"""Would closeness in meaning catch the injections the quarantine's patterns miss? Measured in
process on the labelled set (tests/data/quarantine_labelled.jsonl), nothing built into the
service yet.

Every text is embedded as recall embeds a query (the configured embedder). A text is held by
meaning when its nearest hostile text of the tuning part is at least `floor` close and closer
by `margin` than its nearest benign one; the screen holds it as well when the patterns do. The
margin and floor are chosen on the tuning part alone (each text left out of its own
neighbours), as the smallest margin and floor with no more than `--max-benign` of its benign
texts held; the held-out and fresh parts are then reported at that choice, beside the patterns
alone, with the embedding's cost per text.

    .venv/bin/python benchmarks/quarantine_semantic.py
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

from _setup import ROOT, django_setup

DATA = ROOT / "tests" / "data" / "quarantine_labelled.jsonl"
VOCABULARY = ROOT / "memories" / "data" / "vocabulary.json"
MARGINS = [round(0.005 * step, 3) for step in range(0, 11)]
FLOORS = [0.80, 0.84, 0.86, 0.88, 0.90]
PARTS = ("tune", "held_out", "fresh")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-benign", type=float, default=0.01)
    args = parser.parse_args()
    django_setup()
    import numpy as np

    from memories.ltm.embedder import embedder
    from memoryproject.quarantine import InjectionScreen

    kinds = {
        "injection_override": "instruction_override",
        "injection_disclosure": "prompt_disclosure",
        "injection_role": "role_change",
        "injection_marker": "fake_marker",
    }
    vocabulary = json.loads(VOCABULARY.read_text(encoding="utf-8"))
    screen = InjectionScreen(
        {reason: [re.compile(p, re.I) for p in vocabulary[kind]] for kind, reason in kinds.items()}
    )
    rows = [json.loads(line) for line in Path(DATA).read_text(encoding="utf-8").splitlines()]
    model = embedder()
    costs = []
    vectors = []
    for row in rows:
        started = time.perf_counter()
        vectors.append(model.embed_query(row["text"]))
        costs.append((time.perf_counter() - started) * 1000)
    matrix = np.asarray(vectors)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    tune = [i for i, row in enumerate(rows) if row["part"] == "tune"]
    hostile = np.array([i for i in tune if rows[i]["label"] == "hostile"])
    benign = np.array([i for i in tune if rows[i]["label"] == "benign"])
    by_pattern = [bool(screen.text(row["text"])) for row in rows]

    def nearest(i: int, among: np.ndarray) -> float:
        others = among[among != i]
        return float((matrix[others] @ matrix[i]).max())

    closeness = [(nearest(i, hostile), nearest(i, benign)) for i in range(len(rows))]

    def held(i: int, margin: float, floor: float) -> bool:
        near_hostile, near_benign = closeness[i]
        return by_pattern[i] or (near_hostile >= floor and near_hostile - near_benign >= margin)

    def figures(part: str, margin: float | None, floor: float) -> tuple[int, int, int, int]:
        rows_of = [i for i, row in enumerate(rows) if row["part"] == part]
        flag = (lambda i: by_pattern[i]) if margin is None else (lambda i: held(i, margin, floor))
        h = [i for i in rows_of if rows[i]["label"] == "hostile"]
        b = [i for i in rows_of if rows[i]["label"] == "benign"]
        return sum(map(flag, h)), len(h), sum(map(flag, b)), len(b)

    chosen = None
    for margin in MARGINS:
        for floor in FLOORS:
            _, _, benign_held, benign_count = figures("tune", margin, floor)
            if benign_held / benign_count <= args.max_benign:
                chosen = (margin, floor)
                break
        if chosen:
            break
    assert chosen, "no margin keeps the tuning part's benign texts within the bound"
    print(f"{len(rows)} texts; embedding p50 {statistics.median(costs):.1f} ms a text")
    print(f"chosen on the tuning part: margin {chosen[0]}, floor {chosen[1]}\n")
    print(f"{'part':10} {'screen':18} {'hostile held':>14} {'benign held':>12}")
    for part in PARTS:
        for label, margin in (("patterns", None), ("patterns+meaning", chosen[0])):
            h, hn, b, bn = figures(part, margin, chosen[1])
            print(f"{part:10} {label:18} {f'{h}/{hn}':>9} {100 * h / hn:4.0f}% {f'{b}/{bn}':>7}")
    print("\nfresh hostile texts still missed:")
    for i, row in enumerate(rows):
        if row["part"] == "fresh" and row["label"] == "hostile" and not held(i, *chosen):
            print(f"  {row['text']}")


if __name__ == "__main__":
    main()
