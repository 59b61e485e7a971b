"""Precision and recall of the rule extractor on the labelled zh + en set, per memory type.

Each labelled text (tests/data/extraction_labelled.jsonl: the design's examples, sentences
written in both languages, and turns of the LoCoMo development split) is one user message; the
rule extractor reads it and the default write policy judges each candidate, and what the
policy accepts is compared with the labels: `constraint`, `remember` (a request to the
assistant to remember), `preference`, `fact` (a stated fact) and `decision`. Figures are given
for the tuning part and for the held-out check part apart; `key` is the share of labelled keys
(`preference.answer_style`, `project_metadata.default_env`, ...) the accepted items carry.

Then every turn of the whole LoCoMo development split goes through the same path (each turn a
user message of its speaker, one session per conversation session), and the script prints how
many items that makes, by type, and the extractor's cost per sentence.

    .venv/bin/python benchmarks/extraction.py
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path

from _setup import LOCOMO, ROOT, django_setup

LABELLED = ROOT / "tests" / "data" / "extraction_labelled.jsonl"
TYPES = ("constraint", "remember", "preference", "fact", "decision")
TARGETS = {"constraint": ("precision", 0.9), "remember": ("precision", 0.9)}
TARGETS.update({"preference": ("precision", 0.9), "fact": ("recall", 0.7)})


def main() -> None:
    django_setup()
    from memories.vocabulary import default_vocabulary
    from memories.write.extractors import ExtractionContext, RuleExtractor, split_sentences
    from memories.write.policy import ExistingState, PolicySettings, decide

    vocabulary = default_vocabulary()
    settings = PolicySettings()
    extractor = RuleExtractor()

    def accepted(events: list[dict], user: str, session: str) -> list:
        context = ExtractionContext(
            user_id=user, session_id=session, task_id="", vocabulary=vocabulary
        )
        found = extractor.extract(events=events, context=context)
        fresh = ExistingState()  # each text is judged alone, as the first of its session
        return [
            c
            for c in found
            if decide(c, existing=fresh, settings=settings, vocabulary=vocabulary).accepted
        ]

    def types_of(candidates: list) -> set[str]:
        found = {c.memory_type for c in candidates} & set(TYPES)
        return found | ({"remember"} if any(c.remember for c in candidates) else set())

    rows = [json.loads(line) for line in Path(LABELLED).read_text(encoding="utf-8").splitlines()]
    print(f"labelled set: {len(rows)} texts ({Counter(r['lang'] for r in rows)})")
    misses: list[str] = []
    for part in ("tune", "check"):
        chosen = [r for r in rows if r["split"] == part]
        counts = {t: Counter() for t in TYPES}
        keys = Counter()
        for row in chosen:
            event = {"seq": 1, "id": row["id"], "role": "user", "content": row["text"]}
            candidates = accepted([event], "u_bench", f"s_{row['id']}")
            predicted, gold = types_of(candidates), set(row["labels"])
            for kind in TYPES:
                if kind in predicted and kind in gold:
                    counts[kind]["tp"] += 1
                elif kind in predicted:
                    counts[kind]["fp"] += 1
                elif kind in gold:
                    counts[kind]["fn"] += 1
            if row.get("key"):
                keys["labelled"] += 1
                keys["found"] += any(c.canonical_fact_key == row["key"] for c in candidates)
            if predicted != gold and part == "tune":
                got = f"{sorted(gold)} got {sorted(predicted)}"
                misses.append(f"  {row['id']} {got}: {row['text']}")
        print(f"\n{part} part: {len(chosen)} texts")
        print(f"  {'type':<11} {'gold':>5} {'found':>6} {'precision':>10} {'recall':>7}  target")
        for kind in TYPES:
            tp, fp, fn = counts[kind]["tp"], counts[kind]["fp"], counts[kind]["fn"]
            precision = tp / (tp + fp) if tp + fp else float("nan")
            recall = tp / (tp + fn) if tp + fn else float("nan")
            target = ""
            if kind in TARGETS:
                measure, floor = TARGETS[kind]
                value = precision if measure == "precision" else recall
                target = f"{measure} >= {floor}: {'met' if value >= floor else 'NOT MET'}"
            figures = f"{tp + fn:>5} {tp + fp:>6} {precision:>10.3f} {recall:>7.3f}"
            print(f"  {kind:<11} {figures}  {target}")
        if keys["labelled"]:
            print(f"  key         {keys['found']}/{keys['labelled']} labelled keys carried")
    if misses:
        print("\ntuning part, texts whose types differ from their labels:")
        print("\n".join(misses))

    # --- the whole LoCoMo development split ---------------------------------------------
    conversations = json.loads(LOCOMO.read_text())
    items: Counter[str] = Counter()
    turns = sentences = 0
    started = time.perf_counter()
    for conversation in conversations:
        sessions = conversation["conversation"]
        for name, session in sessions.items():
            if not re.fullmatch(r"session_\d+", name):
                continue
            by_speaker: dict[str, list[dict]] = {}
            for seq, turn in enumerate(session, start=1):
                event = {"seq": seq, "id": turn["dia_id"], "role": "user", "content": turn["text"]}
                by_speaker.setdefault(turn["speaker"], []).append(event)
                turns += 1
                sentences += len(split_sentences(turn["text"]))
            for speaker, events in by_speaker.items():
                for candidate in accepted(events, speaker, f"{conversation['sample_id']}:{name}"):
                    items[candidate.memory_type] += 1
                    items["(remember)"] += candidate.remember
    elapsed = time.perf_counter() - started
    print(f"\nLoCoMo dev split: {turns} turns, {sentences} sentences, every turn a user message")
    total = sum(count for kind, count in items.items() if kind != "(remember)")
    print(f"  {total} items accepted: " + ", ".join(f"{k} {v}" for k, v in items.most_common()))
    print(
        f"  extraction + policy: {elapsed * 1e3 / turns:.3f} ms per turn, "
        f"{elapsed * 1e6 / sentences:.0f} µs per sentence"
    )


if __name__ == "__main__":
    main()
