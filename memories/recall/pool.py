"""One candidate pool for short- and long-term memories: normalise, apply domain authority,
re-score (de-duplication is `dedup.py`). Layer 1 values never enter it; they decide conflicts."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memories.facts import normalise_fact
from memories.ltm.selectors import LtmHit
from memories.recall.semantic import SEMANTIC_MARGIN
from memories.stm.items import StmItem, Trust
from profiles.domains import AUTHORITATIVE_DOMAINS

SOURCE_PRIORITY = {"redis": 100, "ltm": 50, "history": 10}
REDIS_DOMAINS = ("task_state", "session_state", "current_decision")
CARD_TEXT_CHARS = 600  # a card's text in the injection before any shortening
CLOSE_IN_MEANING = 0.75  # the word overlap a short-term item close in meaning counts as
# The cosine a card's closeness to the query is measured above (`card_closeness`).
CARD_COSINE_FLOOR = 0.75

# Short-term memory types map onto the design's Redis-owned domains.
_STM_TYPE_DOMAINS = {
    "decision": "current_decision",
    "constraint": "task_state",
    "observation": "task_state",
    "hypothesis": "task_state",
    "fact": "session_state",
    "preference": "session_state",
}
_CARD_TYPE_DOMAINS = {"episodic_case": "similar_case", "preference": "preference"}
# A promoted or reflected card is what a reviewer approved; an imported one is outside data.
_CARD_SOURCE_KINDS = {"promoted_from_stm": "reviewer", "reflection": "reviewer", "import": "import"}
_WORD = re.compile(r"[a-z0-9]+|[\u3400-\u9fff]")


@dataclass
class Weights:
    recency: float = 0.25
    relevance: float = 0.45
    importance: float = 0.25
    confidence: float = 0.05
    decay_per_hour: float = 0.03
    card_cosine_floor: float = CARD_COSINE_FLOOR


@dataclass
class MemoryCandidate:
    """A memory from any layer in one shape; `parts` holds the score's terms once scored."""

    memory_id: str
    source: str  # redis | ltm
    memory_type: str
    domain: str
    text: str  # what the injection shows
    summary: str  # the shortened form used when over budget
    core: str  # the fact's own words, compared across layers
    canonical_fact_key: str
    fact_value: str
    fingerprint: str
    entities: list[str]
    importance: float
    confidence: float
    updated_at: float
    raw_relevance: float
    occurred_at: float = 0.0  # the event time of what it remembers (0: unknown)
    provenance: dict[str, Any] = field(default_factory=dict)
    derived_from: list[str] = field(default_factory=list)  # short-term ids a card came from
    weight: float = 1.0  # a card's forgetting weight; short-term items keep 1
    cosine: float = 0.0  # the query's cosine to it, where a vector branch found it (else 0)
    said_at: float = 0.0  # a short-term item's: when its statement was last said (0: unknown)
    read_by_meaning: bool = False  # a short-term item no word list read (`write/meaning.py`)
    # When a later statement of the user about the same subject was said (`disagreeing.py`);
    # and whether this one is the latest of such statements.
    later_differing: float = 0.0
    latest_differing: bool = False
    relevance: float = 0.0
    score: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)
    # The estimate that it answers the query, and its parts (`answering.py`).
    answer: float = 0.0
    answer_parts: dict[str, float] = field(default_factory=dict)
    source_kind: str = ""  # whose word: user, assistant, tool, proposal, llm, reviewer, import
    trust: str = Trust.UNTRUSTED

    @property
    def is_trusted(self) -> bool:
        return self.trust == Trust.TRUSTED

    @property
    def source_priority(self) -> int:
        return SOURCE_PRIORITY[self.source]


@dataclass(frozen=True)
class Dropped:
    memory_id: str
    source: str
    reason: str


def in_scope(
    items: Iterable[StmItem], *, task_id: str, session_id: str
) -> tuple[list[StmItem], list[Dropped]]:
    """The items a recall in this task and session may see, and the others as dropped: a
    task's working memory (its tool results, the assistant's conclusions) stays in that task,
    though the entity index or a user-wide match finds it from another."""
    kept: list[StmItem] = []
    dropped: list[Dropped] = []
    for item in items:
        if item.in_scope(task_id=task_id, session_id=session_id):
            kept.append(item)
        else:
            where = f"task {item.task_id}" if item.task_id else f"session {item.session_id}"
            reason = f"working memory of {where} ({item.source.get('kind')})"
            dropped.append(Dropped(item.id, "redis", reason))
    return kept, dropped


def content_fingerprint(text: str) -> str:
    """The same fact worded identically (case and punctuation aside), whichever layer holds it."""
    return hashlib.sha256(normalise_fact(text).encode()).hexdigest()[:24]


def query_terms(text: str) -> set[str]:
    """Lower-case Latin words and single CJK characters; CJK bigrams added for word order."""
    tokens = _WORD.findall(text.lower())
    terms = set(tokens)
    for first, second in zip(tokens, tokens[1:], strict=False):
        if len(first) == 1 == len(second) and not first.isascii() and not second.isascii():
            terms.add(first + second)
    return terms


def stm_candidate(
    item: StmItem,
    *,
    terms: set[str],
    entities: Sequence[str],
    task_id: str,
    session_id: str,
    closeness: float | None = None,
) -> MemoryCandidate:
    """`closeness`: the item's margin above the query's background when it counts as close
    in meaning (`semantic.py`, `own_world.py`)."""
    text = item.summary
    item_terms = query_terms(" ".join((text, item.fact_value, " ".join(item.entities))))
    overlap = len(terms & item_terms) / len(terms) if terms else 0.0
    if closeness is not None:
        # Close in meaning: as relevant as holding most of its words, and the closer the more.
        overlap = max(overlap, CLOSE_IN_MEANING * min(1.0, max(0.0, closeness) / SEMANTIC_MARGIN))
    wanted = {e.lower() for e in entities}
    entity_hits = sum(1 for e in item.entities if e.lower() in wanted)
    # Lexical overlap first; being about the same task, session or entities adds context.
    raw = (
        overlap
        + 0.5 * min(entity_hits, 2)
        + (0.5 if task_id and item.task_id == task_id else 0.0)
        + (0.25 if session_id in item.sessions else 0.0)
    )
    key = item.canonical_fact_key
    return MemoryCandidate(
        memory_id=item.id,
        source="redis",
        memory_type=item.memory_type,
        domain=_key_domain(key) or _STM_TYPE_DOMAINS.get(item.memory_type, "session_state"),
        text=text,
        summary=_short(text),
        core=text,
        canonical_fact_key=key,
        fact_value=item.fact_value,
        fingerprint=content_fingerprint(text),
        entities=list(item.entities),
        importance=item.importance,
        confidence=item.confidence,
        updated_at=item.updated_at,
        raw_relevance=raw,
        occurred_at=item.created_at,
        provenance={
            "message_ids": item.message_ids,
            "tool_call_ids": list(item.source.get("tool_call_ids", [])),
            "task_id": item.task_id,
            "sessions": item.sessions,
            **({"supersedes": item.supersedes} if item.supersedes else {}),
            **({"said_at": str(item.detail["said_at"])} if item.detail.get("said_at") else {}),
        },
        source_kind=item.source_kind,
        trust=item.trust,
        said_at=_timestamp(item.detail.get("said_at")),
        read_by_meaning=str(item.detail.get("reason", "")).startswith("reads as a"),
    )


def ltm_candidate(hit: LtmHit, *, cosine: float = 0.0) -> MemoryCandidate:
    card = hit.card
    summary = card.get("summary") or card.get("title") or ""
    content = card.get("content") or ""
    text = f"{summary} — {content}" if summary and content and content != summary else summary
    text = _short(text or content, CARD_TEXT_CHARS)
    refs = [str(r) for r in card.get("source_refs", []) or []]
    tags = [str(t) for t in card.get("tags", []) or []]
    key = next((t.split(":", 1)[1] for t in tags if t.startswith("key:")), "")
    source_kind = _CARD_SOURCE_KINDS.get(str(card.get("source_type") or ""), "import")
    return MemoryCandidate(
        memory_id=hit.memory_id,
        source="ltm",
        memory_type=card.get("memory_type", ""),
        domain=_key_domain(key)
        or _CARD_TYPE_DOMAINS.get(card.get("memory_type", ""), "semantic_hint"),
        text=text,
        summary=_short(card.get("title") or summary),
        core=summary or content,
        canonical_fact_key=key,
        fact_value="",
        fingerprint=content_fingerprint(summary or content),
        entities=list(card.get("entities", []) or []),
        importance=float(card.get("importance", 0.5)),
        confidence=float(card.get("confidence", 0.8)),
        updated_at=_timestamp(card.get("updated_at")),
        raw_relevance=hit.score,
        occurred_at=_timestamp(card.get("occurred_at") or card.get("created_at")),
        provenance={
            "source_refs": refs,
            "lexical_rank": hit.lexical_rank,
            "vector_rank": hit.vector_rank,
        },
        derived_from=[r.split(":", 1)[1] for r in refs if r.startswith("stm_item_ids:")],
        source_kind=source_kind,
        trust=Trust.TRUSTED if source_kind == "reviewer" else Trust.UNTRUSTED,
        cosine=cosine,
    )


def apply_authority(
    candidates: Iterable[MemoryCandidate], *, authoritative: Mapping[str, Any]
) -> tuple[list[MemoryCandidate], list[Dropped]]:
    """PostgreSQL owns profile/permission/config/project_metadata; Redis owns task and session
    state, so a long-term copy of it is stale; the rest of long-term memory supplements."""
    kept: list[MemoryCandidate] = []
    dropped: list[Dropped] = []
    for candidate in candidates:
        reason = ""
        if candidate.domain in AUTHORITATIVE_DOMAINS or candidate.domain == "preference":
            key = candidate.canonical_fact_key
            if key in authoritative and _value_text(authoritative[key]) != _value_text(
                candidate.fact_value
            ):
                reason = f"conflicts with PostgreSQL's {key} = {authoritative[key]}"
        elif candidate.source == "ltm" and candidate.domain in REDIS_DOMAINS:
            reason = f"{candidate.domain} belongs to short-term memory"
        if reason:
            dropped.append(Dropped(candidate.memory_id, candidate.source, reason))
        else:
            kept.append(candidate)
    return kept, dropped


def rescore(candidates: list[MemoryCandidate], *, weights: Weights, now: float) -> None:
    """final = (α·recency + β·relevance + γ·importance + δ·confidence) × weight, with relevance
    scaled so each source's best is 1 (raw scores of different layers are not comparable) and
    weight the card's forgetting weight (1 for short-term items).

    A card is as recent as what it remembers (`occurred_at`), not as its approval, a short-term
    item as its statement was said (`said_at`), not as its extraction; and being a card adds
    trust, not relevance: its relevance is also held to how close it is to the query
    beside the history entry closest to it (`card_closeness`), so the best of a few loosely
    related cards does not count as much as the turn that answers."""
    best: dict[str, float] = {}
    for candidate in candidates:
        best[candidate.source] = max(best.get(candidate.source, 0.0), candidate.raw_relevance)
    closest_history = max((c.cosine for c in candidates if c.source == "history"), default=0.0)
    for candidate in candidates:
        top = best[candidate.source]
        candidate.relevance = candidate.raw_relevance / top if top > 0 else 0.0
        if candidate.source == "ltm":
            candidate.relevance *= card_closeness(
                candidate.cosine, closest_history, floor=weights.card_cosine_floor
            )
        when = candidate.updated_at
        if candidate.source == "ltm" and candidate.occurred_at:
            when = candidate.occurred_at
        elif candidate.said_at:
            when = min(when, candidate.said_at)
        age_hours = max(0.0, now - when) / 3600 if when else 1e6
        parts = {
            "recency": weights.recency * math.exp(-weights.decay_per_hour * age_hours),
            "relevance": weights.relevance * candidate.relevance,
            "importance": weights.importance * candidate.importance,
            "confidence": weights.confidence * candidate.confidence,
        }
        candidate.parts = {name: round(value, 4) for name, value in parts.items()}
        candidate.score = round(sum(parts.values()) * candidate.weight, 4)
    candidates.sort(key=lambda c: (-c.score, -c.source_priority, c.memory_id))


def card_closeness(cosine: float, closest_history: float, *, floor: float) -> float:
    """How close a card is to the query as a share of the closest history entry's closeness,
    both measured above `floor` (the cosine of unrelated text); 1 when no history entry was
    found by meaning or the card is at least as close, and when the card's own is unknown (a
    card found by its words alone is given the farthest cosine its vector branch returned)."""
    if closest_history <= floor or cosine <= 0 or cosine >= closest_history:
        return 1.0
    return max(0.0, cosine - floor) / (closest_history - floor)


def _key_domain(key: str) -> str:
    return key.split(".", 1)[0] if "." in key and ":" not in key else ""


def _value_text(value: Any) -> str:
    return normalise_fact(value if isinstance(value, str) else str(value))


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _timestamp(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return 0.0
    return 0.0
