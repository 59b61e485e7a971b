"""Choose and check when recall dates two of the user's statements as disagreeing
(`memories/recall/disagreeing.py`), in process (no service).

- Changes (`tests/data/memory_changes.jsonl`): the `before` and `after` statement of each
  change, said twenty days apart. **Dated** when recall would mark the pair.
- Agreeing pairs (`tests/data/agent_questions.json`): for each question, the four statements of
  its persona closest to it in meaning (what recall could inject together), taken in pairs said
  in different sessions. None of them disagrees, so a marked pair is a **false** one.

It prints, per part and script, the 97th percentile of the agreeing pairs' cosines (the floor
is this figure on the tuning part) and the dated and false shares at the floors in use: the
held-out figures are the ones to quote.

    .venv/bin/python benchmarks/disagreeing_pairs.py
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict

from _setup import ROOT, django_setup

CHANGES = ROOT / "tests" / "data" / "memory_changes.jsonl"
QUESTIONS = ROOT / "tests" / "data" / "agent_questions.json"
DAY = 86400.0
CLOSEST = 4


def main() -> None:
    django_setup()
    import numpy as np

    from memories.ltm.embedder import embedder
    from memories.recall.disagreeing import Statement, disagreements
    from memories.vocabulary import default_vocabulary

    model = embedder()
    words = default_vocabulary()
    dated: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for line in CHANGES.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        pair = [Statement("before", row["before"], 0.0), Statement("after", row["after"], 20 * DAY)]
        dated[(row["part"], row["lang"])].append(bool(disagreements(pair, words)))

    false: dict[tuple[str, str], list[bool]] = defaultdict(list)
    cosines: dict[tuple[str, str], list[float]] = defaultdict(list)
    for persona in json.loads(QUESTIONS.read_text())["personas"]:
        part = "tune" if persona["split"] == "tune" else "held_out"
        said = [
            Statement(s["id"], s["text"], -session["days_ago"] * DAY)
            for session in persona["sessions"]
            for s in session["statements"]
        ]
        vectors = np.asarray(model.embed_passages([s.text for s in said]), dtype=np.float32)
        for case in persona["cases"]:
            query = np.asarray(model.embed_query(case["question"]), dtype=np.float32)
            closest = np.argsort(-(vectors @ query))[:CLOSEST]
            for i, j in itertools.combinations(closest, 2):
                if said[i].said_at == said[j].said_at:
                    continue
                cosines[(part, persona["lang"])].append(float(vectors[i] @ vectors[j]))
                false[(part, persona["lang"])].append(
                    bool(disagreements([said[i], said[j]], words))
                )

    print(f"{'part':9} {'lang':4} {'changes':>7} {'dated%':>7} {'pairs':>6} {'false%':>7} "
          f"{'p97 cosine':>10}")  # fmt: skip
    for part in ("tune", "held_out"):
        for lang in ("en", "zh"):
            changes, agreeing = dated[(part, lang)], false[(part, lang)]
            p97 = float(np.percentile(cosines[(part, lang)], 97))
            print(
                f"{part:9} {lang:4} {len(changes):7} {100 * np.mean(changes):7.1f}"
                f" {len(agreeing):6} {100 * np.mean(agreeing):7.1f} {p97:10.3f}"
            )


if __name__ == "__main__":
    main()
