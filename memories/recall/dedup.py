"""De-duplication of the pool: one candidate per fact, whichever layer holds it.

By canonical key, then fingerprint, then near-identical text, and a card derived from a
short-term item present; a history hit saying what a memory says gives way to it, and an
agent's turn quoting a memory of the user's is an echo of it, not a second source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from memories.facts import normalise_fact
from memories.recall.pool import Dropped, MemoryCandidate

NEAR_DUPLICATE_SIMILARITY = 0.9
HISTORY_CONTAINMENT = 0.8  # share of a memory's trigrams a history text holds to say the same
MIN_ECHO_CHARS = 12  # a memory this short ("ok", a name) is no quotation of it
_NUMBER = re.compile(r"\d+(?:[.:]\d+)*")


def deduplicate(
    candidates: Iterable[MemoryCandidate],
    known: Sequence[tuple[str, str]] = (),
) -> tuple[list[MemoryCandidate], list[Dropped]]:
    """Keep one candidate per fact: by canonical key, then fingerprint, then near-identical
    text (and a card derived from a short-term item present); the higher source priority wins,
    then the higher relevance.

    A history hit that says what a kept memory says gives way to it, and the memory cites the
    event (`provenance.also_said_in`). An assistant's or a tool's turn that repeats a memory of
    the user's (`known`: memory id and text of the live items, chosen or not, such as a standing
    rule) is an **echo** of it, the agent quoting its injected memory, not a second source: it
    is dropped as well."""
    ordered = sorted(candidates, key=lambda c: (-c.source_priority, -c.raw_relevance))
    quoted: list[tuple[str, str]] | None = None  # the known memories' normalised texts, once
    kept: list[MemoryCandidate] = []
    dropped: list[Dropped] = []
    by_key: dict[str, MemoryCandidate] = {}
    by_fingerprint: dict[str, MemoryCandidate] = {}
    by_id: dict[str, MemoryCandidate] = {}
    seen_texts: list[tuple[str, MemoryCandidate]] = []  # normalised core text of each kept
    by_event: dict[str, MemoryCandidate] = {}  # transcript event ids a kept memory came from
    for candidate in ordered:
        normal = normalise_fact(candidate.core)
        twin, why = (
            _same_as_memory(candidate, normal, by_event, seen_texts)
            if candidate.source == "history"
            else (None, "")
        )
        if twin is None and candidate.source == "history" and _spoken_by_agent(candidate):
            if quoted is None:
                quoted = [(memory_id, normalise_fact(text)) for memory_id, text in known]
            echoed = _echo_of(normal, quoted)
            if echoed:
                dropped.append(Dropped(candidate.memory_id, candidate.source, f"echo of {echoed}"))
                continue
        if twin is not None:
            # a history hit saying what a short-term item or a card says: the memory cites it
            cited = twin.provenance.setdefault("also_said_in", [])
            cited.extend(e for e in candidate.provenance.get("event_ids", []) if e not in cited)
        elif candidate.canonical_fact_key and candidate.canonical_fact_key in by_key:
            twin, why = by_key[candidate.canonical_fact_key], "canonical_fact_key"
        elif candidate.fingerprint in by_fingerprint:
            twin, why = by_fingerprint[candidate.fingerprint], "fingerprint"
        elif any(ref in by_id for ref in candidate.derived_from):
            ref = next(r for r in candidate.derived_from if r in by_id)
            twin, why = by_id[ref], "promoted_from"
        else:
            twin = _near_identical(normal, seen_texts)
            why = "near_identical_text"
        if twin is not None:
            dropped.append(
                Dropped(
                    candidate.memory_id, candidate.source, f"duplicate of {twin.memory_id} ({why})"
                )
            )
            continue
        kept.append(candidate)
        by_id[candidate.memory_id] = candidate
        by_fingerprint[candidate.fingerprint] = candidate
        if candidate.source != "history":
            for event_id in _event_ids(candidate):
                by_event.setdefault(event_id, candidate)
        if candidate.canonical_fact_key:
            by_key[candidate.canonical_fact_key] = candidate
        seen_texts.append((normal, candidate))
    return kept, dropped


def _spoken_by_agent(candidate: MemoryCandidate) -> bool:
    return str(candidate.provenance.get("role", "")) in ("assistant", "tool")


def _echo_of(normal: str, quoted: Sequence[tuple[str, str]]) -> str:
    """The id of a known memory (normalised text) whose words the text holds (or most of its
    trigrams)."""
    mine: frozenset[str] | None = None
    for memory_id, theirs in quoted:
        if len(theirs) < MIN_ECHO_CHARS:
            continue
        if theirs in normal:
            return memory_id
        mine = mine if mine is not None else _shingles(normal)
        their_shingles = _shingles(theirs)
        if len(mine & their_shingles) >= HISTORY_CONTAINMENT * len(their_shingles):
            return memory_id
    return ""


def _event_ids(candidate: MemoryCandidate) -> list[str]:
    """Transcript event ids a short-term item or card names as its source."""
    ids = [str(i) for i in candidate.provenance.get("message_ids", []) or []]
    for ref in candidate.provenance.get("source_refs", []) or []:
        kind, _, value = str(ref).partition(":")
        if kind in ("message_ids", "event_ids") and value:
            ids.append(value)
    return ids


def _same_as_memory(
    candidate: MemoryCandidate,
    normal: str,
    by_event: dict[str, MemoryCandidate],
    kept: list[tuple[str, MemoryCandidate]],
) -> tuple[MemoryCandidate | None, str]:
    """The short-term item or card a history hit says the same as: one whose words an
    assistant's or a tool's turn repeats, or one that holds all of the user's turn (made from
    it or not). A sentence of a longer turn of the user's does not: the turn says more, and the
    user's line is dropped as a duplicate only when what stays holds it."""
    for event_id in candidate.provenance.get("event_ids", []):
        twin = by_event.get(event_id)
        if twin is not None and _holds(normalise_fact(twin.core), normal):
            return twin, "same_event"
    mine: frozenset[str] | None = None
    for theirs, other in kept:
        if other.source == "history" or not theirs:
            continue
        if not _spoken_by_agent(candidate):
            # the user's own turn says more than a sentence of it: dropped only when held
            if _holds(theirs, normal):
                return other, "said_in_history"
            continue
        if theirs in normal:
            return other, "said_in_history"
        mine = mine if mine is not None else _shingles(normal)
        their_shingles = _shingles(theirs)
        shared = len(mine & their_shingles)
        if their_shingles and shared / len(their_shingles) >= HISTORY_CONTAINMENT:
            return other, "said_in_history"
    return None, ""


def _holds(theirs: str, normal: str) -> bool:
    """Whether the text `theirs` holds all of `normal` (or nearly: most of its trigrams, and
    every number: "Python 3.12" does not hold "Python 3.9")."""
    if normal in theirs:
        return True
    mine = _shingles(normal)
    return (
        bool(mine)
        and len(mine & _shingles(theirs)) >= HISTORY_CONTAINMENT * len(mine)
        and _numbers(normal) <= _numbers(theirs)
    )


def _numbers(text: str) -> frozenset[str]:
    return frozenset(_NUMBER.findall(text))


def _near_identical(text: str, kept: list[tuple[str, MemoryCandidate]]) -> MemoryCandidate | None:
    """A kept candidate whose text shares >= NEAR_DUPLICATE_SIMILARITY of its trigrams."""
    mine: frozenset[str] | None = None
    for theirs, other in kept:
        # Trigram Jaccard >= t needs the shorter text to be at least t of the longer one.
        short, long = sorted((len(text), len(theirs)))
        if short < NEAR_DUPLICATE_SIMILARITY * long:
            continue
        mine = mine if mine is not None else _shingles(text)
        if _jaccard(mine, _shingles(theirs)) >= NEAR_DUPLICATE_SIMILARITY and _numbers(
            text
        ) == _numbers(theirs):
            return other
    return None


@lru_cache(maxsize=4096)
def _shingles(normal: str) -> frozenset[str]:
    return frozenset(normal[i : i + 3] for i in range(max(1, len(normal) - 2)))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)
