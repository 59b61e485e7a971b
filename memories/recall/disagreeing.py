"""The user's statements that disagree: one subject, said on different days, with other values.

A later statement replaces an earlier one at write time only when the service can tell
(`write/supersede.py`: a key, or the same frame with another value), and only between
short-term items. What is injected also holds the user's turns from history and items the
write path did not compare (one said before the other was kept, or of another type). When the
injection holds two of the user's own statements said on different days in the same frame with
another value, each carries its date, the earlier says that a later statement differs and the
latest says it is the latest. The agent sees which is newer; nothing is hidden or guessed.

One subject is the frame (`supersede.frame_replaces`, on the looser share only where the later
statement says it changes something, as on the write path), not closeness in meaning: a
multilingual embedding puts a conversation's sentences so close to each other that, on the
LoCoMo development split's tuning conversations, a floor chosen to date few of the agent
questions' agreeing statements dated most pairs of one speaker's sentences answering one
question (`benchmarks/disagreeing_pairs.py` prints both, and what the frame dates).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memories.recall.pool import MemoryCandidate
from memories.stm.items import MemoryType
from memories.vocabulary import Vocabulary
from memories.write.supersede import Frame, frame_replaces

# Statements said within this many seconds of each other are one telling, never a change.
MIN_APART_SECONDS = 3600
STATEMENT_TYPES = frozenset({MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.DECISION})


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
    """Each pair of statements in one frame with other values said apart, the earlier first."""
    ordered = sorted(statements, key=lambda s: s.said_at)
    # Each text is read once: a recall compares every pair of up to k statements.
    frames = [Frame.of(s.text) for s in ordered]
    cued = [vocabulary.matches("update_cue", s.text) for s in ordered]
    return [
        Disagreement(old.key, new.key, new.said_at)
        for i, old in enumerate(ordered)
        for j, new in enumerate(ordered[i + 1 :], start=i + 1)
        if new.said_at - old.said_at >= MIN_APART_SECONDS
        and _differ(frames[i].every_term, frames[j].every_term)
        and frame_replaces(frames[j], frames[i], cued=cued[j])
    ]


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


def _differ(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    """Not one statement said twice, nor one holding the other (by their index terms)."""
    return bool(mine and theirs) and not (mine <= theirs or theirs <= mine)
