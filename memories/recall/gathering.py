"""The candidates of each layer for one recall: Layer 2's items, the task's own record, long-term
memory and history once routing settled whether to ask them; history entries a later statement
replaced, cards no longer active and, on request, what is not the user's word are left out."""

from __future__ import annotations

import time
from typing import Any

from django.db import DatabaseError

from memories.ltm.selectors import card_weights
from memories.recall.asking import Asking, policy_value, settle_route
from memories.recall.layer1 import Layer1
from memories.recall.matching import Routed
from memories.recall.memory_hits import apply_time, memory_candidates
from memories.recall.pool import Dropped, MemoryCandidate, in_scope, query_terms, stm_candidate
from memories.recall.probe import stm_items_fetch
from memories.recall.query_profile import QueryProfile
from memories.recall.request import RecallRequest
from memories.recall.routing import Route
from memories.recall.task_record import task_record_candidates, task_record_query
from memories.recall.trace import Trace, why
from memories.stm.store import recall_stm_store
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_keys import Owner
from profiles.models import Tenant

RELEVANT_RAW_SCORE = 0.25  # a short-term item below this raw relevance does not count as found


def stm_candidates(
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


def task_record(
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


def ltm_and_history(
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


def not_replaced(
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


def user_stated(candidates: list[MemoryCandidate], trace: Trace) -> list[MemoryCandidate]:
    """Only the user's word: what an assistant, a tool, an agent or an import said is left out."""
    for candidate in candidates:
        if not candidate.is_trusted:
            why = f"not stated by the user ({candidate.source_kind or 'unknown'})"
            trace.dropped.append(Dropped(candidate.memory_id, candidate.source, why))
    return [c for c in candidates if c.is_trusted]


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
