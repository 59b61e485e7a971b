"""When recall dates two of the user's statements as disagreeing
(`memories/recall/disagreeing.py`), in process (no service), on three kinds of pairs:

- **changes** (`tests/data/memory_changes.jsonl`): the `before` and `after` statement of each
  change, said twenty days apart: each should be dated.
- **agreeing** (`tests/data/agent_questions.json`): for each question, the four statements of
  its persona closest to it in meaning (what recall could inject together), in pairs said in
  different sessions. None disagrees: each dated one is a false one.
- **conversation** (the LoCoMo development split's tuning conversations, conv-26 and conv-30):
  for each question, the four sentences of the conversation closest to it, in pairs of one
  speaker's sentences said in different sessions. Nearly all are two things that both hold.

It prints the share dated as recall dates (by frame), and, for comparison, the share a floor
on the pair's cosine would date: the floor is the 97th percentile of the agreeing pairs'
cosines on the tuning part (per language), the closeness in meaning recall does not use
because of what it dates in a conversation.

    .venv/bin/python benchmarks/disagreeing_pairs.py
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from dataclasses import dataclass

from _setup import LOCOMO, ROOT, django_setup

CHANGES = ROOT / "tests" / "data" / "memory_changes.jsonl"
QUESTIONS = ROOT / "tests" / "data" / "agent_questions.json"
TUNING_CONVERSATIONS = ("conv-26", "conv-30")
DAY = 86400.0
CLOSEST = 4
MIN_SENTENCE_WORDS = 5


@dataclass
class Pair:
    dated: bool
    cosine: float


def main() -> None:
    django_setup()
    import numpy as np

    from memories.ltm.embedder import embedder
    from memories.recall.disagreeing import Statement, disagreements
    from memories.vocabulary import default_vocabulary
    from memories.write.statements import sentences_with_ends

    model = embedder()
    words = default_vocabulary()
    pairs: dict[tuple[str, str, str], list[Pair]] = defaultdict(list)

    def closest_pairs(
        kind: str, part: str, lang: str, said: list[Statement], questions: list[str]
    ) -> None:
        vectors = np.asarray(model.embed_passages([s.text for s in said]), dtype=np.float32)
        for question in questions:
            query = np.asarray(model.embed_query(question), dtype=np.float32)
            for i, j in itertools.combinations(np.argsort(-(vectors @ query))[:CLOSEST], 2):
                if said[i].said_at == said[j].said_at or said[i].key != said[j].key:
                    continue  # one session, or two speakers
                old, new = sorted((said[i], said[j]), key=lambda s: s.said_at)
                found = bool(disagreements([old, new], words))
                pairs[(kind, part, lang)].append(Pair(found, float(vectors[i] @ vectors[j])))

    for line in CHANGES.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        old = Statement("user", row["before"], 0.0)
        new = Statement("user", row["after"], 20 * DAY)
        vectors = np.asarray(model.embed_passages([old.text, new.text]), dtype=np.float32)
        found = bool(disagreements([old, new], words))
        pairs[("changes", row["part"], row["lang"])].append(
            Pair(found, float(vectors[0] @ vectors[1]))
        )

    for persona in json.loads(QUESTIONS.read_text())["personas"]:
        said = [
            Statement("user", s["text"], -session["days_ago"] * DAY)
            for session in persona["sessions"]
            for s in session["statements"]
        ]
        part = "tune" if persona["split"] == "tune" else "held_out"
        questions = [case["question"] for case in persona["cases"]]
        closest_pairs("agreeing", part, persona["lang"], said, questions)

    for sample in json.loads(LOCOMO.read_text()):
        if sample["sample_id"] not in TUNING_CONVERSATIONS:
            continue
        conversation = sample["conversation"]
        said = [
            Statement(turn["speaker"], sentence, number * 7 * DAY)
            for number in range(1, 100)
            for turn in conversation.get(f"session_{number}", [])
            for sentence, end in sentences_with_ends(turn["text"])
            if end != "?" and len(sentence.split()) >= MIN_SENTENCE_WORDS
        ]
        questions = [qa["question"] for qa in sample["qa"]]
        closest_pairs("conversation", "tune", "en", said, questions)

    floors = {
        lang: float(np.percentile([p.cosine for p in pairs[("agreeing", "tune", lang)]], 97))
        for lang in ("en", "zh")
    }
    print(f"cosine floors (97th percentile of agreeing tuning pairs): {floors}")
    print(f"{'pairs':12} {'part':9} {'lang':4} {'n':>5} {'dated%':>7} {'by cosine%':>10}")
    for (kind, part, lang), group in sorted(pairs.items()):
        dated = 100 * np.mean([p.dated for p in group])
        by_cosine = 100 * np.mean([p.cosine >= floors[lang] for p in group])
        print(f"{kind:12} {part:9} {lang:4} {len(group):5} {dated:7.1f} {by_cosine:10.1f}")


if __name__ == "__main__":
    main()
