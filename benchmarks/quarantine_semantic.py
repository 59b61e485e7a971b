"""Would closeness in meaning catch the injections the quarantine's patterns miss? Measured in
process on the labelled set (tests/data/quarantine_labelled.jsonl) with the service's own screen
by meaning (memoryproject/quarantine_meaning.py), its shipped exemplars (the tuning part,
memories/data/injection_exemplars.npz) and its probe (memories/data/injection_probe.npz,
trained on the tuning part and the earlier fresh parts: on those its figures are in sample).

As the service does, only a text's sentences holding a cue word (vocabulary kind
`injection_cue`) are embedded, the first three, as recall embeds a query (the configured
embedder). A sentence is held by meaning when its nearest hostile exemplar is at least `floor`
close and closer by `margin` than its nearest benign one, or when the probe reads it as hostile;
a text is held when the patterns hold it or one of its sentences is. The margin and floor are
chosen on the tuning part alone (each text left out of its own neighbours), as the smallest
margin and floor with no more than
`--max-benign` of its benign texts held; the held-out and fresh parts are then reported at that
choice, beside the patterns alone, with the embedding's cost per sentence.

    .venv/bin/python benchmarks/quarantine_semantic.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from _setup import ROOT, django_setup

DATA = ROOT / "tests" / "data" / "quarantine_labelled.jsonl"
MARGINS = [round(0.005 * step, 3) for step in range(0, 11)]
FLOORS = [0.80, 0.84, 0.86, 0.88, 0.90]
PARTS = ("tune", "held_out", "fresh", "fresh2", "fresh3", "fresh4", "fresh5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-benign", type=float, default=0.01)
    parser.add_argument(
        "--uncued",
        action="store_true",
        help="embed every sentence, cue or not, as the service does for what becomes the "
        "user's word (user events, rules, profile values)",
    )
    parser.add_argument(
        "--false-positives",
        action="store_true",
        help="also count what the screen would hold among the LoCoMo development split's user "
        "turns and the agent-question set's statements (all benign)",
    )
    args = parser.parse_args()
    django_setup()
    import numpy as np

    from memories.ltm.embedder import embedder
    from memories.quarantine.exemplars import exemplars_for, meaning_screen_of
    from memories.vocabulary import default_vocabulary, screen_of
    from memoryproject.quarantine_meaning import (
        Closeness,
        MeaningScreen,
        exemplars_subset,
        held_by,
    )

    model = embedder()
    costs: list[float] = []
    vectors: dict[str, np.ndarray] = {}

    def embed(sentence: str) -> np.ndarray:
        if sentence not in vectors:
            started = time.perf_counter()
            vectors[sentence] = model.embed_query(sentence)
            costs.append((time.perf_counter() - started) * 1000)
        return vectors[sentence]

    patterns = screen_of(default_vocabulary())
    screen = meaning_screen_of(model_name=model.model_name, embed=embed)
    if args.uncued:
        screen = screen.uncued()
    exemplars = exemplars_for(model_name=model.model_name, embed=embed)
    position = {text: index for index, text in enumerate(exemplars.texts)}
    rows = [json.loads(line) for line in Path(DATA).read_text(encoding="utf-8").splitlines()]
    by_pattern = [bool(patterns.text(row["text"])) for row in rows]

    def closeness_of(row: dict) -> list[Closeness]:
        judge = screen
        if row["text"] in position:  # a tuning text is no neighbour of its own
            keep = np.ones(len(exemplars.texts), dtype=bool)
            keep[position[row["text"]]] = False
            judge = MeaningScreen(
                embed=embed,
                exemplars=exemplars_subset(exemplars, keep),
                margin=screen.margin,
                floor=screen.floor,
                cues=screen.cues,
                every_sentence=screen.every_sentence,
            )
        return [judge.closeness(embed(sentence)) for sentence in screen.sentences(row["text"])]

    closeness = [closeness_of(row) for row in rows]

    def held(i: int, margin: float, floor: float) -> bool:
        return by_pattern[i] or any(held_by(c, margin=margin, floor=floor) for c in closeness[i])

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
    embedded = sum(1 for c in closeness if c)
    print(
        f"{len(rows)} texts, {embedded} with a cue sentence ({len(vectors)} sentences); "
        f"embedding p50 {statistics.median(costs):.1f} ms a sentence"
    )
    print(f"configured: margin {screen.margin}, floor {screen.floor}")
    print(f"chosen on the tuning part: margin {chosen[0]}, floor {chosen[1]}\n")
    print(f"{'part':10} {'screen':18} {'hostile held':>14} {'benign held':>12}")
    for part in PARTS:
        for label, margin in (("patterns", None), ("patterns+meaning", chosen[0])):
            h, hn, b, bn = figures(part, margin, chosen[1])
            if not hn or not bn:
                continue
            print(f"{part:10} {label:18} {f'{h}/{hn}':>9} {100 * h / hn:4.0f}% {f'{b}/{bn}':>7}")
    for part in PARTS[2:]:
        print(f"\n{part} hostile texts still missed:")
        for i, row in enumerate(rows):
            if row["part"] == part and row["label"] == "hostile" and not held(i, *chosen):
                print(f"  {row['text']}")
    if args.false_positives:
        configured = (screen.margin, screen.floor)
        for name, texts in (
            ("LoCoMo user turns", locomo_user_turns()),
            ("agent statements", agent_statements()),
        ):
            started = time.perf_counter()
            flagged = [
                text
                for text in texts
                if patterns.text(text)
                or any(
                    held_by(
                        screen.closeness(embed(sentence)), margin=configured[0], floor=configured[1]
                    )
                    for sentence in screen.sentences(text)
                )
            ]
            took = time.perf_counter() - started
            print(
                f"\n{name}: {len(flagged)} of {len(texts)} held at the configured margin "
                f"({100 * len(flagged) / len(texts):.2f}%), {took:.0f} s"
            )
            for text in flagged[:20]:
                print(f"  {text[:160]}")


def locomo_user_turns() -> list[str]:
    from _setup import locomo_turns

    return [turn["content"].split(": ", 1)[-1] for turn in locomo_turns() if turn["role"] == "user"]


def agent_statements() -> list[str]:
    data = json.loads(
        (ROOT / "tests" / "data" / "agent_questions.json").read_text(encoding="utf-8")
    )
    return [
        statement["text"]
        for persona in data["personas"]
        for session in persona["sessions"]
        for statement in session["statements"]
    ]


if __name__ == "__main__":
    main()
