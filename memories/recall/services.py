"""Recall: query profile → routing → Layer 1 blocks → one candidate pool → scoring → budget.

The orchestration of one recall and its pool. The steps it calls live beside it: Layer 1 in
`layer1.py`, the short-term probe in `probe.py`, the query profile and route in `matching.py`,
the budget and rendering in `render.py`, the record in `recording.py`.

Every decision is recorded (`trace.py`) so `explain` can show it. A layer that fails or exceeds
its time budget is skipped and named in `degraded`; recall answers from the rest.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import DatabaseError

from memories.ltm.selectors import card_weights, cards_exist
from memories.recall.asking import (
    Asking,
    apply_time,
    memory_candidates,
    policy_value,
    settle_route,
    start_asking,
    start_early,
)
from memories.recall.context import ContextBlocks, compose_blocks
from memories.recall.disagreeing import mark_disagreeing
from memories.recall.layer1 import Layer1, layer1_read, user_document
from memories.recall.matching import Routed, route_by_meaning, route_first
from memories.recall.pool import (
    Dropped,
    MemoryCandidate,
    Weights,
    apply_authority,
    deduplicate,
    in_scope,
    query_terms,
    rescore,
    stm_candidate,
)
from memories.recall.probe import stm_items_fetch
from memories.recall.query_profile import QueryProfile
from memories.recall.recording import recall_record, recall_recordable
from memories.recall.relevance import related_words
from memories.recall.render import Injection, fit_and_render
from memories.recall.routing import LAYERS, Route
from memories.recall.standing import standing_rules
from memories.recall.task_record import task_record_candidates, task_record_query
from memories.recall.trace import Trace, explain, why
from memories.stm.store import now_seconds, recall_stm_store
from memories.vocabulary import Vocabulary
from memoryproject.errors import Invalid, StoreUnavailable
from memoryproject.metrics import observe_recall
from memoryproject.redaction import redact_text
from memoryproject.redis_keys import Owner
from profiles.models import Tenant

RELEVANT_RAW_SCORE = 0.25  # a short-term item below this raw relevance does not count as found


@dataclass(frozen=True)
class RecallRequest:
    user_id: str
    session_id: str
    query: str
    task_id: str = ""
    project: str = ""
    workspace: str = ""
    budget_tokens: int | None = None
    k: int | None = None
    layers: tuple[str, ...] = ()
    explain: bool = False
    user_stated_only: bool = False  # only what is the user's word (trusted sources)


@dataclass
class RecallResult:
    recall_id: str
    blocks: ContextBlocks
    items: list[MemoryCandidate]
    injection_text: str
    token_estimate: int
    budget_tokens: int
    degraded: list[str]
    language: str
    shortened: list[str] = field(default_factory=list)  # items shown by their summary
    latency_ms: dict[str, float] = field(default_factory=dict)  # per layer and store, and total
    explain: dict[str, Any] | None = None


def recall(*, tenant: Tenant, request: RecallRequest) -> RecallResult:
    """Everything an agent should know before its next turn, within the token budget."""
    unknown = set(request.layers) - set(LAYERS)
    if unknown:
        raise Invalid(
            f"layers must be among {', '.join(LAYERS)}.", fields={"layers": sorted(unknown)}
        )
    # Task ids are stored redacted (they name Redis keys): look them up the same way.
    request = replace(request, task_id=redact_text(request.task_id))
    trace = Trace()
    started = time.perf_counter()
    # 0. A recall names its session's own user (or a session yet to start) and creates nothing.
    recorded = recall_recordable(
        tenant=tenant, session_id=request.session_id, user_id=request.user_id, trace=trace
    )
    # 1. Layer 1 from the cache; the tenant document is needed for the word lists and policy.
    layer1 = layer1_read(tenant=tenant, user_id=request.user_id, trace=trace)
    policy = layer1.policy
    has_history = layer1.owner is not None and bool(policy.get("history_enabled", True))
    has_cards = _has_cards(tenant, request, trace)
    # A question about the past starts its searches now, while Redis is read.
    early = start_early(
        tenant=tenant,
        user_id=request.user_id,
        session_id=request.session_id,
        query=request.query,
        project=request.project,
        task_id=request.task_id,
        policy=policy,
        vocabulary=layer1.vocabulary,
        forced_layers=request.layers,
        has_history=has_history,
        has_cards=has_cards,
    )
    # 2. Runtime state from Redis (ids and entities only), then the query profile and route.
    routed = route_first(
        layer1=layer1,
        query=request.query,
        session_id=request.session_id,
        task_id=request.task_id,
        forced_layers=request.layers,
        trace=trace,
    )
    profile, decided = routed.profile, routed.decided
    k = request.k or policy["default_k"]
    # 3. Ask the layers: long-term memory and history in the background (lexical branches
    # first), Layer 1 and Redis meanwhile.
    asking = start_asking(
        tenant=tenant,
        user_id=request.user_id,
        session_id=request.session_id,
        query=request.query,
        project=request.project,
        profile=profile,
        decided=decided,
        policy=policy,
        forced_layers=request.layers,
        has_history=has_history,
        has_cards=has_cards,
        alternates=routed.alternates,
        related_words=related_words(profile.content_terms, layer1.vocabulary),
        early=early,
    )
    if early is not None:
        trace.notes.append(
            "long-term memory and history: asked before the runtime state was read"
            if asking.search is early
            else "long-term memory and history: asked early, then left unread (the rules answer)"
        )
    blocks = _blocks(tenant, request, layer1, decided, trace)
    close = route_by_meaning(
        routed=routed, owner=layer1.owner, asking=asking, forced_layers=request.layers, trace=trace
    )
    decided = routed.decided
    stm_candidates = _stm_candidates(request, layer1.owner, routed, policy, trace, close)
    ltm_candidates, history_candidates = _memory_candidates(
        tenant, request, asking, profile, decided, policy, trace
    )
    history_candidates += _task_record(tenant, request, layer1, routed, stm_candidates, trace)
    history_candidates = _not_replaced(history_candidates, layer1.owner, trace)
    # 4. One pool: de-duplicate, apply domain authority, re-score, keep the top k.
    pooled = [*stm_candidates, *ltm_candidates, *history_candidates]
    if request.user_stated_only:
        pooled = _user_stated(pooled, trace)
    live = [*routed.probe.items.values(), *routed.probe.user_items.values()]
    # The user's live items, chosen or not: an agent's turn quoting one is an echo of it.
    chosen = _pool(pooled, blocks, policy, k, trace, [(item.id, item.summary) for item in live])
    _date_disagreeing(chosen, layer1.vocabulary, trace)
    # The user's live constraints and preferences reach the blocks, whatever the session.
    blocks.constraints["standing"] = standing_rules(
        live,
        authoritative=blocks.authoritative,
        shown={c.memory_id for c in chosen},
        now=now_seconds(),
    )
    # 5. Fit to the budget and render in the user's language.
    budget = request.budget_tokens or policy["default_budget_tokens"]
    language = _language(blocks, profile)
    injection = _fit(blocks, chosen, budget, language, profile, request.session_id, trace)

    recall_id = f"rcl_{uuid.uuid4().hex[:20]}"
    if recorded:
        recall_record(
            tenant=tenant,
            recall_id=recall_id,
            user_id=request.user_id,
            session_id=request.session_id,
            task_id=request.task_id,
            owner=layer1.owner,
            injection=injection,
            trace=trace,
        )
    else:
        trace.notes.append("the session has not started: this recall is not recorded")
    trace.latency_ms["total"] = round((time.perf_counter() - started) * 1000, 2)
    observe_recall(trace.latency_ms, trace.degraded)
    explained = None
    if request.explain:
        explained = explain(
            profile=profile, decided=decided, trace=trace, shortened=injection.shortened
        )
    return RecallResult(
        recall_id=recall_id,
        blocks=blocks,
        items=injection.items,
        injection_text=injection.text,
        token_estimate=injection.token_estimate,
        budget_tokens=budget,
        degraded=trace.degraded,
        language=language,
        shortened=injection.shortened,
        latency_ms=trace.latency_ms,
        explain=explained,
    )


def _has_cards(tenant: Tenant, request: RecallRequest, trace: Trace) -> bool:
    """Whether long-term memory holds a card this recall could find (no card: no search)."""
    if request.layers and "ltm" not in request.layers:
        return False
    if cards_exist(tenant=tenant, user_id=request.user_id):
        return True
    trace.notes.append("ltm: neither the user nor the tenant has an active card; not searched")
    return False


def _blocks(
    tenant: Tenant, request: RecallRequest, layer1: Layer1, decided: Route, trace: Trace
) -> ContextBlocks:
    """The three Layer 1 blocks for the request's project and workspace."""
    user_doc = layer1.user_doc
    if decided.postgres and layer1.user_cached.fresh:
        # The user's exact values were asked for: read them from PostgreSQL, not the cache.
        # (Tenant-wide rows are rebuilt above whenever a change made their cache stale.)
        user_doc = (
            user_document(
                tenant=tenant, user_id=request.user_id, cached=layer1.user_cached, trace=trace
            )
            or user_doc
        )
    blocks = compose_blocks(
        tenant_doc=layer1.tenant_doc,
        user_doc=user_doc or {},
        project=request.project,
        workspace=request.workspace,
    )
    if request.project and blocks.project != request.project:
        trace.notes.append(f"project {request.project!r} is unknown; no project filter applied")
    return blocks


def _stm_candidates(
    request: RecallRequest,
    owner: Owner | None,
    routed: Routed,
    policy: dict[str, Any],
    trace: Trace,
    close: dict[str, float],
) -> list[MemoryCandidate]:
    """Layer 2's candidates; marks the profile when they fall short, so Layer 3 is asked."""
    decided, profile = routed.decided, routed.profile
    terms = query_terms(request.query)
    candidates: list[MemoryCandidate] = []
    if decided.redis and owner is not None and "redis" not in trace.degraded:
        items = stm_items_fetch(owner=owner, probe=routed.probe, profile=profile, trace=trace)
        items = list({i.id: i for i in [*items, *routed.matched]}.values())
        items, elsewhere = in_scope(
            items, task_id=profile.active_task_id, session_id=request.session_id
        )
        trace.dropped.extend(elsewhere)
        candidates = [
            stm_candidate(
                item,
                terms=terms,
                entities=profile.entities,
                task_id=profile.active_task_id,
                session_id=request.session_id,
                closeness=close.get(item.id),
            )
            for item in items
        ]
    elif decided.redis and "redis" not in trace.degraded:
        trace.notes.append("redis: the user has no short-term memory yet")
    if decided.redis:
        # Layer 3 is the second step when Layer 2 comes back short (or could not answer).
        relevant = [c for c in candidates if c.raw_relevance > RELEVANT_RAW_SCORE]
        if len(relevant) < policy["redis_sufficient_count"]:
            profile.redis_result_insufficient = True
    return candidates


def _task_record(
    tenant: Tenant,
    request: RecallRequest,
    layer1: Layer1,
    routed: Routed,
    stm_candidates: list[MemoryCandidate],
    trace: Trace,
) -> list[MemoryCandidate]:
    """What this task's own record holds of the words short-term memory lacks (`task_record`)."""
    profile, decided = routed.profile, routed.decided
    has_history = layer1.owner is not None and bool(layer1.policy.get("history_enabled", True))
    if not has_history or (request.layers and "history" not in request.layers):
        return []
    wanted = task_record_query(
        profile,
        session_id=request.session_id,
        stm_texts=[c.text for c in stm_candidates],
        alternates=routed.alternates,
    )
    if wanted is None:
        return []
    started = time.perf_counter()
    try:
        found, failed = task_record_candidates(
            tenant=tenant,
            user_id=request.user_id,
            query=request.query,
            wanted=wanted,
            alternates=routed.alternates,
        )
    except StoreUnavailable as exc:
        trace.fail("history", why(exc))
        return []
    finally:
        trace.latency_ms["history.task_record"] = round((time.perf_counter() - started) * 1000, 2)
    for branch in failed:
        trace.fail("history", f"{branch} failed or was too slow")
    reason = f"the task's own record: short-term memory does not hold {', '.join(wanted.missing)}"
    decided.reasons["history"] = [*decided.reasons.get("history", []), reason]
    decided.declined["history"] = []
    decided.history = True
    return found


def _memory_candidates(
    tenant: Tenant,
    request: RecallRequest,
    asking: Asking,
    profile: QueryProfile,
    decided: Route,
    policy: dict[str, Any],
    trace: Trace,
) -> tuple[list[MemoryCandidate], list[MemoryCandidate]]:
    """Long-term and history candidates, once Layer 2's answer settled whether to ask them."""
    # Whether the user's memory holds the query decides long-term memory and history.
    settled = settle_route(
        asking, profile, query=request.query, forced_layers=request.layers, fail=trace.fail
    )
    for layer in ("ltm", "history"):
        setattr(decided, layer, settled.asks(layer))
        decided.reasons[layer] = settled.reasons[layer]
        decided.declined[layer] = settled.declined[layer]
    ltm_candidates, history_candidates, left_out = memory_candidates(
        asking, decided, profile, fail=trace.fail, timings=trace.latency_ms
    )
    trace.dropped.extend(Dropped(*row) for row in left_out)
    ltm_candidates = _weighted(tenant, ltm_candidates, trace)
    apply_time(
        [*ltm_candidates, *history_candidates],
        asking.window,
        float(policy_value(policy, "time_boost")),
    )
    return ltm_candidates, history_candidates


def _not_replaced(
    candidates: list[MemoryCandidate], owner: Owner | None, trace: Trace
) -> list[MemoryCandidate]:
    """History entries whose statement a later one of the user replaced are left out: what was
    said is kept, but it is no longer current (the replacing item is what recall injects)."""
    event_ids = [str(e) for c in candidates for e in c.provenance.get("event_ids", [])]
    if owner is None or not event_ids or "redis" in trace.degraded:
        return candidates
    started = time.perf_counter()
    try:
        replaced = recall_stm_store().replacing(owner=owner, event_ids=event_ids)
    except StoreUnavailable as exc:
        trace.fail("redis", why(exc))
        return candidates
    finally:
        trace.timed("redis", started)
    kept = []
    for candidate in candidates:
        events = candidate.provenance.get("event_ids", [])
        by = next((replaced[e] for e in events if e in replaced), "")
        if by:
            trace.dropped.append(Dropped(candidate.memory_id, "history", f"replaced by {by}"))
        else:
            kept.append(candidate)
    return kept


def _user_stated(candidates: list[MemoryCandidate], trace: Trace) -> list[MemoryCandidate]:
    """Only the user's word: what an assistant, a tool, an agent or an import said is left out."""
    for candidate in candidates:
        if not candidate.is_trusted:
            why = f"not stated by the user ({candidate.source_kind or 'unknown'})"
            trace.dropped.append(Dropped(candidate.memory_id, candidate.source, why))
    return [c for c in candidates if c.is_trusted]


def _pool(
    candidates: list[MemoryCandidate],
    blocks: ContextBlocks,
    policy: dict[str, Any],
    k: int,
    trace: Trace,
    known: Sequence[tuple[str, str]] = (),
) -> list[MemoryCandidate]:
    """De-duplicate, apply domain authority, re-score; the top k that are not weak."""
    pooled, dropped = deduplicate(candidates, known)
    trace.dropped.extend(dropped)
    pooled, dropped = apply_authority(pooled, authoritative=blocks.authoritative)
    trace.dropped.extend(dropped)
    rescore(pooled, weights=_weights(policy), now=now_seconds())
    # Long-term and history hits passed the relevance floor and are ranked by their fusion
    # (rank-based: its ratios say nothing of strength); min_relevance judges short-term items.
    weak = [c for c in pooled if c.source == "redis" and c.relevance < policy["min_relevance"]]
    for candidate in weak:
        trace.dropped.append(
            Dropped(
                candidate.memory_id, candidate.source, f"weak match ({candidate.relevance:.2f})"
            )
        )
    pooled = [c for c in pooled if c not in weak]
    for candidate in pooled[k:]:
        trace.dropped.append(Dropped(candidate.memory_id, candidate.source, f"below top {k}"))
    return pooled[:k]


def _date_disagreeing(chosen: list[MemoryCandidate], vocabulary: Vocabulary, trace: Trace) -> None:
    earlier = mark_disagreeing(chosen, vocabulary)
    if earlier:
        trace.notes.append(f"{earlier} statement(s) of the user dated: a later one differs")


def _fit(
    blocks: ContextBlocks,
    chosen: list[MemoryCandidate],
    budget: int,
    language: str,
    profile: QueryProfile,
    session_id: str,
    trace: Trace,
) -> Injection:
    """The injection within the token budget; what did not fit is recorded as dropped."""
    injection = fit_and_render(
        blocks=blocks,
        candidates=chosen,
        budget_tokens=budget,
        language=language,
        task_id=profile.active_task_id if any(c.source == "redis" for c in chosen) else "",
        session_id=session_id,
    )
    for memory_id in injection.dropped:
        source = next(c.source for c in chosen if c.memory_id == memory_id)
        trace.dropped.append(Dropped(memory_id, source, "over the token budget"))
    return injection


def _weights(policy: dict[str, Any]) -> Weights:
    return Weights(
        recency=policy["recency_weight"],
        relevance=policy["relevance_weight"],
        importance=policy["importance_weight"],
        confidence=policy["confidence_weight"],
        decay_per_hour=policy["recency_decay_per_hour"],
    )


def _language(blocks: ContextBlocks, profile: QueryProfile) -> str:
    language = str(blocks.profile.get("language", "")).lower()
    if language.startswith("zh") or language in ("中文", "chinese"):
        return "zh"
    if language.startswith("en") or language == "english":
        return "en"
    return profile.language


# --- Layer 3 ---------------------------------------------------------------------------------
def _weighted(
    tenant: Tenant, candidates: list[MemoryCandidate], trace: Trace
) -> list[MemoryCandidate]:
    """Cards with the ledger's forgetting weight; cards no longer active are left out."""
    if not candidates:
        return candidates
    started = time.perf_counter()
    try:
        weights = card_weights(tenant=tenant, memory_ids=[c.memory_id for c in candidates])
    except DatabaseError as exc:
        trace.fail("postgres", why(exc))
        return candidates
    finally:
        trace.timed("postgres", started)
    kept = []
    for candidate in candidates:
        if candidate.memory_id not in weights:
            trace.dropped.append(Dropped(candidate.memory_id, "ltm", "no longer active"))
            continue
        candidate.weight = weights[candidate.memory_id]
        kept.append(candidate)
    return kept
