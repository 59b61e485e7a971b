"""One pool of candidates from every layer, and what of it is injected: de-duplicate, apply
domain authority, re-score, estimate how likely each answers the query (`answering.py`) and
keep those that answer, at most `k`; with `cutoff` off, the top `k` by score that are not weak."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memories.recall.answering import Question, answering, estimate_all
from memories.recall.asking import Asking
from memories.recall.context import ContextBlocks
from memories.recall.dedup import deduplicate
from memories.recall.matching import Routed
from memories.recall.pool import Dropped, MemoryCandidate, Weights, apply_authority, rescore
from memories.recall.query_profile import Intent
from memories.recall.trace import Trace
from memories.stm.store import now_seconds


def question_of(routed: Routed, asking: Asking) -> Question:
    profile = routed.profile
    meaning = asking.meaning() if asking.search is not None else None
    return Question(
        terms=profile.content_terms,
        alternates=routed.alternates,
        names=routed.names,
        background=meaning[1] if meaning is not None else None,
        margins=routed.margins,
        task_id=profile.active_task_id,
        about_task=profile.intent in Intent.TASK_INTENTS,
        about_world=profile.about_world,
    )


def choose(
    candidates: list[MemoryCandidate],
    blocks: ContextBlocks,
    policy: dict[str, Any],
    k: int,
    trace: Trace,
    known: Sequence[tuple[str, str]],
    question: Question,
    *,
    cutoff: bool,
) -> list[MemoryCandidate]:
    """De-duplicate, apply domain authority, re-score; of the top k that are not weak, those that
    answer the query, best first (with `cutoff` off, all of them, in the score's order)."""
    pooled, dropped = deduplicate(candidates, known)
    trace.dropped.extend(dropped)
    pooled, dropped = apply_authority(pooled, authoritative=blocks.authoritative)
    trace.dropped.extend(dropped)
    rescore(pooled, weights=_weights(policy), now=now_seconds())
    # Long-term and history hits passed the relevance floor and are ranked by their fusion
    # (rank-based: its ratios say nothing of strength); min_relevance judges short-term items.
    weak = {
        c.memory_id for c in pooled if c.source == "redis" and c.relevance < policy["min_relevance"]
    }
    for candidate in pooled:
        if candidate.memory_id in weak:
            why = f"weak match ({candidate.relevance:.2f})"
            trace.dropped.append(Dropped(candidate.memory_id, candidate.source, why))
    pooled = [c for c in pooled if c.memory_id not in weak]
    for candidate in pooled[k:]:
        trace.dropped.append(Dropped(candidate.memory_id, candidate.source, f"below top {k}"))
    top = pooled[:k]
    estimate_all(top, question)
    if not cutoff:
        return top
    answers = answering(top)
    answered = {c.memory_id for c in answers}
    for candidate in top:
        if candidate.memory_id not in answered:
            why = f"does not answer ({candidate.answer:.2f})"
            trace.dropped.append(Dropped(candidate.memory_id, candidate.source, why))
    return answers


def _weights(policy: dict[str, Any]) -> Weights:
    return Weights(
        recency=policy["recency_weight"],
        relevance=policy["relevance_weight"],
        importance=policy["importance_weight"],
        confidence=policy["confidence_weight"],
        decay_per_hour=policy["recency_decay_per_hour"],
    )
