"""How well recall's own-world score (`memories/recall/own_world.py`) tells a question about the
user's own world from one about the world at large, in process (no service), on the
agent-question set: its questions (own) against its unrelated questions (world).

Printed per part and language: how many of each, the AUC (the chance that a question of the
user's scores above an unrelated one), the share of each on the own side of zero, and the
closest any written example comes to any question of the set (the examples were written apart
from it: below 0.95 cosine, which tests/memories/recall/test_own_world.py checks too).

    .venv/bin/python benchmarks/own_world.py
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from _setup import ROOT, django_setup

DATA = ROOT / "tests" / "data" / "agent_questions.json"


def auc(positives: list[float], negatives: list[float]) -> float:
    pairs = [(p > n) + 0.5 * (p == n) for p in positives for n in negatives]
    return sum(pairs) / max(1, len(pairs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    django_setup()
    import numpy as np

    from memories.ltm.embedder import embedder
    from memories.recall.own_world import exemplars_load, own_world_score

    model = embedder()
    exemplars = exemplars_load()
    scores: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    closest = 0.0
    for persona in json.loads(args.data.read_text(encoding="utf-8"))["personas"]:
        asked = [("own", c["question"]) for c in persona["cases"]]
        asked += [("world", u["question"]) for u in persona["unrelated"]]
        for kind, question in asked:
            vector = np.asarray(model.embed_query(question), dtype=np.float32)
            scores[(persona["split"], persona["lang"], kind)].append(own_world_score(vector))
            closest = max(closest, float((exemplars.vectors @ vector).max()))

    print(f"{len(exemplars.texts)} written examples; nearest to a question: {closest:.3f}")
    print(f"{'part':8} {'lang':4} {'own':>4} {'world':>5} {'AUC':>6} {'own>0':>6} {'world<0':>7}")
    for split in ("tune", "heldout"):
        for lang in ("en", "zh"):
            own, world = scores[(split, lang, "own")], scores[(split, lang, "world")]
            own_side = 100 * sum(s > 0 for s in own) / max(1, len(own))
            world_side = 100 * sum(s < 0 for s in world) / max(1, len(world))
            print(
                f"{split:8} {lang:4} {len(own):4} {len(world):5} {auc(own, world):6.3f} "
                f"{own_side:5.1f}% {world_side:6.1f}%"
            )


if __name__ == "__main__":
    main()
