"""Does this memory answer the query? One estimate per candidate, and the cut-off it decides.

Every candidate of the pool (short-term item, card, history entry) gets one estimate, the odds
that it answers the query turned into a probability, from what recall already knows of it:

- **margin**: its cosine above the query's background (`semantic.py`), where the query was
  embedded and a vector branch (or the short-term item's own vector) measured it;
- **gap**: how far its margin falls below the closest candidate's: what answers a question is
  the memory closest to it, and the estimate drops fast behind it;
- **words**: the share of the query's content terms (`relevance.content_terms`) its text holds,
  related words and stems included, and whether it holds them **firmly** (two of them, a name,
  or the query's only one);
- **task**: a short-term item of the task a question about the current task asks of;
- **history**: a history entry is a turn as it was said, not a statement read from it.

The weights (`WEIGHTS`) are a logistic regression fitted on the tuning parts of the agent-question
set and of LoCoMo (conversations conv-26 and conv-30), each item of a `cutoff: false` answer
labelled by whether it names an expected statement or an evidence turn
(`benchmarks/injection.py --cutoff off --dump`, `benchmarks/locomo_e2e.py --dump`), the two
sets weighed alike; they are reported on the held-out parts. Of the pool's top `k` by score
(what `cutoff: false` injects), injected are, in the order of the estimate, those at or above
`ANSWER_FLOOR`, and the best `FIRST` of the rest at or above `FIRST_FLOOR` (the closest few
answer a question about the user's memory, however close).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memories.recall.pool import MemoryCandidate
from memories.recall.relevance import MIN_HELD_TERMS, Alternates, holding_of

# Fitted on the tuning parts (see above).
WEIGHTS = {
    "bias": -1.094,
    "margin": -1.776,
    "unknown": -1.526,
    "gap": -46.788,
    "words": 2.69,
    "firm": 0.06,
    "task": 1.317,
    "history": -1.359,
}
ANSWER_FLOOR = 0.3
FIRST = 5
FIRST_FLOOR = 0.02
WORLD_DISCOUNT = 0.5  # of the words' share, for a question about the world


@dataclass(frozen=True)
class Question:
    """What the query gives the estimate: its content terms and names, its meaning's background,
    and the task it asks of."""

    terms: Sequence[str]
    alternates: Alternates = field(default_factory=dict)
    names: frozenset[str] = frozenset()
    background: float | None = None  # the query's cosine to plain statements (None: unknown)
    margins: Mapping[str, float] = field(default_factory=dict)  # short-term item id -> margin
    task_id: str = ""
    about_task: bool = False
    about_world: bool = False


def estimate_all(candidates: Sequence[MemoryCandidate], question: Question) -> None:
    """Sets each candidate's `answer` and `answer_parts`."""
    margins = [_margin(candidate, question) for candidate in candidates]
    best = max((m for m in margins if m is not None), default=None)
    for candidate, margin in zip(candidates, margins, strict=True):
        parts = _parts(candidate, margin, best, question)
        odds = sum(WEIGHTS[name] * value for name, value in parts.items())
        candidate.answer_parts = {name: round(value, 4) for name, value in parts.items()}
        candidate.answer = round(1 / (1 + math.exp(-odds)), 4)


def _parts(
    candidate: MemoryCandidate, margin: float | None, best: float | None, question: Question
) -> dict[str, float]:
    words, firm = 0.0, False
    if question.terms:
        text = " ".join((candidate.text, candidate.fact_value, *candidate.entities))
        holding = holding_of(question.terms, text, question.alternates)
        share = holding.share
        # one shared word and no name is weak evidence: half its share
        if holding.terms and not holding.holds(0.0, question.names):
            share /= 2
        words = share * (1 - WORLD_DISCOUNT) if question.about_world else share
        firm = words >= 0.5 and (len(holding.terms) >= MIN_HELD_TERMS or words >= 1.0)
    task_id = str(candidate.provenance.get("task_id") or "")
    in_task = candidate.source == "redis" and question.about_task and bool(task_id)
    return {
        "bias": 1.0,
        "margin": margin if margin is not None else 0.0,
        "unknown": float(margin is None),
        "gap": best - margin if margin is not None and best is not None else 0.0,
        "words": words,
        "firm": float(firm),
        "task": float(in_task and task_id == question.task_id),
        "history": float(candidate.source == "history"),
    }


def _margin(candidate: MemoryCandidate, question: Question) -> float | None:
    if candidate.source == "redis":
        return question.margins.get(candidate.memory_id)
    if question.background is None or candidate.cosine <= 0:
        return None
    return candidate.cosine - question.background


def answering(candidates: Sequence[MemoryCandidate]) -> list[MemoryCandidate]:
    """The candidates that answer, best first (their estimates set by `estimate_all`); a time the
    query names is a filter: what falls inside it comes before what does not."""
    ranked = sorted(
        candidates,
        key=lambda c: (
            c.provenance.get("in_time_window") is False,
            -c.answer,
            -c.score,
            c.memory_id,
        ),
    )
    return [
        c
        for rank, c in enumerate(ranked)
        if c.answer >= ANSWER_FLOOR or (rank < FIRST and c.answer >= FIRST_FLOOR)
    ]
