"""Short-term memory across sessions: the user's standing rules, and a bounded user-wide match.

A live, trusted constraint or preference (the user said it, a reviewer approved it or a trusted
key wrote it) is the user's current rule whatever the session it was said in,
so the newest of them (at most `STANDING_PER_TYPE` of each) always reach the blocks
(`constraints_block.standing`, one line each in the profile section). Beyond the session, task
and entity indexes, the query is matched against the user's newest `USER_PROBE` live items;
those holding enough of its content terms (or close enough in meaning, `semantic.py`) join the
pool as short-term candidates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memories.facts import normalise_fact
from memories.recall.relevance import Alternates, holding_of
from memories.stm.items import StmItem

STANDING_TYPES = ("constraint", "preference")
STANDING_PER_TYPE = 5
USER_PROBE = 100  # newest live items of the user matched against every query with content terms


def standing_indexes() -> list[tuple[str, str, int]]:
    """The index heads read with the runtime probe: the type indexes and the user's newest."""
    return [("type", kind, STANDING_PER_TYPE * 2) for kind in STANDING_TYPES] + [
        ("recent", "", USER_PROBE)
    ]


def standing_rules(
    items: Iterable[StmItem],
    *,
    authoritative: Mapping[str, Any],
    shown: set[str],
    now: float,
) -> list[dict[str, Any]]:
    """The user's live constraints and preferences not already among the chosen items, newest
    first; one PostgreSQL holds under the same key with another value is left out."""
    rules: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for item in sorted(items, key=lambda i: -i.updated_at):
        if item.memory_type not in STANDING_TYPES or not item.is_live(now) or item.id in shown:
            continue
        if not item.is_trusted:  # not the user's word: never a rule (held ones are not here)
            continue
        key = item.canonical_fact_key
        if key in authoritative and normalise_fact(str(authoritative[key])) != normalise_fact(
            item.fact_value
        ):
            continue
        if counts.get(item.memory_type, 0) >= STANDING_PER_TYPE:
            continue
        counts[item.memory_type] = counts.get(item.memory_type, 0) + 1
        rules.append(
            {
                "memory_id": item.id,
                "memory_type": item.memory_type,
                "text": item.summary,
                "sessions": list(item.sessions),
                "message_ids": list(item.message_ids),
            }
        )
    return rules


def user_matches(
    items: Sequence[StmItem],
    *,
    terms: Sequence[str],
    floor: float,
    names: set[str],
    now: float,
    alternates: Alternates | None = None,
) -> tuple[list[StmItem], list[StmItem]]:
    """The user's live items (from any session) that hold the query: firmly (at least `floor`
    of its content terms, and two of them or a name), and partly (at least `floor` of them, but
    only one); a partial hold counts once its meaning agrees (`relevance.py`, `semantic.py`)."""
    if not terms:
        return [], []
    alternates = alternates or {}
    anchors = [
        {_anchor(term), *(_anchor(t) for members in alternates.get(term, ()) for t in members)}
        for term in terms
    ]
    firm: list[StmItem] = []
    partial: list[StmItem] = []
    for item in items:
        if not item.is_live(now):
            continue
        text = " ".join((item.summary, item.fact_value, " ".join(item.entities)))
        # Segmenting and stemming 100 texts per recall is most of its own time; a text that
        # cannot hold enough terms even by their first letters is left out before that.
        lowered = text.lower()
        present = sum(any(anchor in lowered for anchor in own) for own in anchors)
        if present < floor * len(terms):
            continue
        holding = holding_of(terms, text, alternates)
        if holding.firmly(floor, names):
            firm.append(item)
        elif holding.partly(floor):
            partial.append(item)
    return firm, partial


def _anchor(term: str) -> str:
    """What a text holding `term` surely contains: a segmented Chinese word itself, the first
    three letters of a stemmed English word (stemming changes endings only)."""
    return term[:3] if term.isascii() else term
