"""History hits as recall candidates: the lowest source priority, with their provenance.

A history entry is what was said, not reviewed knowledge: it joins the pool after short-term
items and cards, so a history hit saying the same as either gives way to it in de-duplication,
and it is injected in a section of its own with its date.
"""

from __future__ import annotations

from memories.history.selectors import HistoryHit
from memories.recall.branches import FusedHit
from memories.recall.pool import MemoryCandidate, content_fingerprint
from memories.stm.items import Trust

HISTORY_TEXT_CHARS = 400  # an entry's text in the injection before any shortening


def history_candidate(fused: FusedHit) -> MemoryCandidate:
    hit: HistoryHit = fused.hit
    text = " ".join(hit.text.split())
    short = text if len(text) <= 120 else text[:119].rstrip() + "…"
    when = hit.occurred_at.timestamp()
    return MemoryCandidate(
        memory_id=hit.entry_id,
        source="history",
        memory_type="history",
        domain="history",
        text=text if len(text) <= HISTORY_TEXT_CHARS else text[: HISTORY_TEXT_CHARS - 1] + "…",
        summary=short,
        core=_core(text),
        canonical_fact_key="",
        fact_value="",
        fingerprint=content_fingerprint(_core(text)),
        entities=[],
        importance=0.3,
        confidence=0.6,
        updated_at=when,
        occurred_at=when,
        raw_relevance=fused.score,
        provenance={
            "event_ids": [hit.event_id],
            "session_id": hit.session_id,
            "role": hit.role,
            "occurred_at": hit.occurred_at.isoformat(),
            "branch_ranks": fused.ranks,
        },
        # What the user said is theirs; an assistant's turn or a tool's digest is data.
        source_kind=hit.role if hit.role in ("user", "tool") else "assistant",
        trust=Trust.TRUSTED if hit.role == "user" else Trust.UNTRUSTED,
        cosine=fused.cosine,
    )


def _core(text: str) -> str:
    """The words said, without a leading "speaker:" / "role:" prefix, so a short-term item or
    card holding the same sentence matches it."""
    head, sep, rest = text.partition(": ")
    return rest if sep and len(head) <= 40 and "\n" not in head else text
