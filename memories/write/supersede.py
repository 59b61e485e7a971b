"""Whether a user's new statement replaces one they made before, in other words than a key.

A keyed statement replaces the live item of its key when its value differs (`upsert.lua`). An
unkeyed one replaces an earlier statement of the same user when both say the same thing of the
same subject with another value: the same frame ("The backend runs on Python 3.9." / "The
backend runs on Python 3.12.", "小程序基础库版本是 2.25.3。" / "小程序基础库版本为 3.3.4。"), told
apart by their values (numbers, names, handles). The frame is the statement's index terms
without its values and without words that frame anything ("I", "use", "now"); two frames match
when they share at least two terms and most of their terms, or fewer of them when the new
statement says it changes something ("now", "switched", "改成", "搬到": `update_cue`). A match
that is no longer is left alone: the service does not guess (recall dates what it injects).

The thresholds were chosen on the tuning part of `tests/data/memory_changes.jsonl`, with every
other statement of the labelled sets as what must not be replaced, and reported on its held-out
part by `benchmarks/memory_lifecycle.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memories.ltm.text import bm25_terms
from memories.stm.items import MemoryType, StmItem, Trust
from memories.vocabulary import Vocabulary
from memories.write.candidates import SourceKind

# Types whose statements one later statement may replace: what the user tells of their world.
REPLACEABLE_TYPES = frozenset({MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.DECISION})
# Share of the two frames' terms they must share, without and with an update cue.
SAME_FRAME = 0.5
SAME_FRAME_WITH_CUE = 0.34
MIN_SHARED_TERMS = 2
# Values: a capitalised word not opening the sentence, anything holding a digit, a handle or
# an address.
_VALUE = re.compile(r"(?<=\S\s)[A-Z][\w'.#-]*|[\w.+-]*\d[\w.:/#@+-]*|@[\w.]+|[\w.+-]+@[\w.-]+")
# Index terms that frame any statement and tell no subject apart.
_FRAMING = frozenset(
    {"i", "i'm", "m", "we", "re", "we'r", "my", "our", "now", "use", "run", "move", "work",
     "go", "get", "keep", "have", "s", "it", "new", "one", "first", "last", "week", "month",
     "day", "today", "yesterday", "switch", "chang", "updat", "no", "longer", "instead",
     "also", "still", "just", "pleas"}
)  # fmt: skip


@dataclass(frozen=True)
class Frame:
    """A statement's index terms, and those of its values."""

    values: frozenset[str]
    every_term: frozenset[str]

    @classmethod
    def of(cls, text: str) -> Frame:
        values = frozenset(term for value in _VALUE.findall(text) for term in bm25_terms(value))
        return cls(values, frozenset(bm25_terms(text)))


def replaces(new: str, old: str, *, cued: bool) -> bool:
    """Whether the statement `new` says what `old` said with another value."""
    return frame_replaces(Frame.of(new), Frame.of(old), cued=cued)


def frame_replaces(mine: Frame, theirs: Frame, *, cued: bool) -> bool:
    """`replaces` on frames read once (a caller comparing many pairs reads each text once)."""
    # A value both name ("Python" in "runs on Python 3.9" / "… 3.12") is part of the frame.
    differing = mine.values ^ theirs.values
    mine_frame = mine.every_term - differing - _FRAMING
    theirs_frame = theirs.every_term - differing - _FRAMING
    shared = mine_frame & theirs_frame
    either = mine_frame | theirs_frame
    if len(shared) < min(MIN_SHARED_TERMS, len(either)) or not shared:
        return False
    other_value = bool(mine.values - theirs.values) or bool(
        mine.every_term - theirs.every_term and theirs.every_term - mine.every_term
    )
    if not other_value:
        return False
    return len(shared) / len(either) >= (SAME_FRAME_WITH_CUE if cued else SAME_FRAME)


def replaced_statement(
    item: StmItem, earlier: Sequence[StmItem], vocabulary: Vocabulary
) -> StmItem | None:
    """The user's live statement `item` replaces, newest first among `earlier`, or None."""
    if not replaceable(item):
        return None
    text = str(item.detail.get("text") or item.summary)
    cued = vocabulary.matches("update_cue", text)
    said = str(item.detail.get("said_at") or "")
    for old in earlier:
        if old.id == item.id or not replaceable(old) or old.fingerprint == item.fingerprint:
            continue
        old_said = str(old.detail.get("said_at") or "")
        if said and old_said and old_said > said:
            continue  # a statement read late replaces nothing said after it
        if replaces(text, str(old.detail.get("text") or old.summary), cued=cued):
            return old
    return None


def replaceable(item: StmItem) -> bool:
    """A statement the user made themselves (in a transcript: an agent's proposal is left to
    its key and its writer) about their world, with no key of its own."""
    return (
        item.memory_type in REPLACEABLE_TYPES
        and item.trust == Trust.TRUSTED
        and item.source_kind == SourceKind.USER
        and not item.canonical_fact_key
    )
