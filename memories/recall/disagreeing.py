"""The user's statements that disagree: one subject, said on different days, in other words.

A later statement replaces an earlier one at write time only when the service can tell
(`write/supersede.py`: a key, or the same frame with another value). Where it cannot ("I'm an
ICU nurse at Mercy General." / "I work as a flight attendant for Delta."), recall does not
guess either: when the injection holds two of the user's own statements about one subject said
on different days, each carries its date, the earlier says that a later statement differs and
the latest says it is the latest. The agent sees which is newer; nothing is hidden.

One subject: the same frame (`supersede.replaces`, on the looser share only where the later
statement says it changes something, as on the write path), or closeness in meaning above a
floor per script. The floors are the 97th percentile of the cosines of statement pairs that
answer one question and do not disagree (the agent-question set's tuning personas), checked
against the tuning changes of `tests/data/memory_changes.jsonl`;
`benchmarks/disagreeing_pairs.py` prints both parts, the held-out one apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memories.ltm.embedder import embedder
from memories.ltm.text import bm25_terms
from memories.recall.pool import MemoryCandidate
from memories.stm.items import MemoryType
from memories.vocabulary import Vocabulary
from memories.write.supersede import replaces
from memoryproject.errors import StoreUnavailable

# Close enough in meaning to be about one subject, by script (a multilingual model puts
# Chinese sentences closer to each other than English ones).
SAME_SUBJECT_COSINE = {"latin": 0.877, "cjk": 0.922}
# Statements said within this many seconds of each other are one telling, never a change.
MIN_APART_SECONDS = 3600
STATEMENT_TYPES = frozenset({MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.DECISION})
_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True)
class Statement:
    """A user's statement as the injection shows it, with when it was said."""

    key: str  # the candidate's memory id
    text: str
    said_at: float


@dataclass(frozen=True)
class Disagreement:
    earlier: str  # memory id of the statement said first
    later: str
    later_said_at: float


def disagreements(statements: Sequence[Statement], vocabulary: Vocabulary) -> list[Disagreement]:
    """Each pair of statements about one subject said apart, the earlier first."""
    ordered = sorted(statements, key=lambda s: s.said_at)
    pairs = [
        (old, new)
        for i, old in enumerate(ordered)
        for new in ordered[i + 1 :]
        if new.said_at - old.said_at >= MIN_APART_SECONDS and _differ(old.text, new.text)
    ]
    if not pairs:
        return []
    closeness = _closeness(ordered)
    found = []
    for old, new in pairs:
        cued = vocabulary.matches("update_cue", new.text)
        same_frame = replaces(new.text, old.text, cued=cued)
        if same_frame or closeness.get((old.key, new.key), 0.0) >= _floor(old.text, new.text):
            found.append(Disagreement(old.key, new.key, new.said_at))
    return found


def mark_disagreeing(chosen: Sequence[MemoryCandidate], vocabulary: Vocabulary) -> int:
    """Date the chosen statements of the user that disagree: the earlier learns when a later
    one differs, the latest that it is the latest. The number of statements marked earlier."""
    statements = [
        Statement(c.memory_id, c.core, c.said_at or c.occurred_at)
        for c in chosen
        if _is_statement(c) and (c.said_at or c.occurred_at)
    ]
    if len(statements) < 2:
        return 0
    by_id = {c.memory_id: c for c in chosen}
    found = disagreements(statements, vocabulary)
    for pair in found:
        earlier = by_id[pair.earlier]
        earlier.later_differing = max(earlier.later_differing, pair.later_said_at)
    for pair in found:
        later = by_id[pair.later]
        later.latest_differing = not later.later_differing
    return len({pair.earlier for pair in found})


def _is_statement(candidate: MemoryCandidate) -> bool:
    """What the user said themselves: a short-term statement of theirs or a turn of theirs."""
    if candidate.source_kind != "user":
        return False
    if candidate.source == "history":
        return True
    return (
        candidate.source == "redis"
        and candidate.is_trusted
        and candidate.memory_type in STATEMENT_TYPES
    )


def _differ(a: str, b: str) -> bool:
    """Not one statement said twice, nor one holding the other."""
    mine, theirs = set(bm25_terms(a)), set(bm25_terms(b))
    return bool(mine and theirs) and not (mine <= theirs or theirs <= mine)


def _floor(a: str, b: str) -> float:
    script = "cjk" if _CJK.search(a) or _CJK.search(b) else "latin"
    return SAME_SUBJECT_COSINE[script]


def _closeness(statements: Sequence[Statement]) -> dict[tuple[str, str], float]:
    """Cosines between the statements' embeddings; empty when nothing embeds them (then the
    frame alone decides)."""
    try:
        vectors = np.asarray(
            embedder().embed_passages([s.text for s in statements]), dtype=np.float32
        )
    except StoreUnavailable:
        return {}
    cosines = vectors @ vectors.T
    return {
        (a.key, b.key): float(cosines[i, j])
        for i, a in enumerate(statements)
        for j, b in enumerate(statements)
        if i != j
    }
