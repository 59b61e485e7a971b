"""Recall: query profile → routing → Layer 1 blocks → one candidate pool → scoring → budget.

The orchestration of one recall. The steps it calls live beside it: Layer 1 in `layer1.py`, the
short-term probe in `probe.py`, the query profile and route in `matching.py`, each layer's
candidates in `gathering.py`, the pool and what of it answers in `choosing.py` (the estimate in
`answering.py`), the budget and rendering in `render.py`, the record in `recording.py`.

Every decision is recorded (`trace.py`) so `explain` can show it. A layer that fails or exceeds
its time budget is skipped and named in `degraded`; recall answers from the rest.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

from memories.ltm.selectors import cards_exist
from memories.recall.asking import (
    start_asking,
    start_early,
)
from memories.recall.choosing import choose, question_of
from memories.recall.context import ContextBlocks, compose_blocks
from memories.recall.disagreeing import mark_disagreeing
from memories.recall.gathering import (
    ltm_and_history,
    not_replaced,
    stm_candidates,
    task_record,
    user_stated,
)
from memories.recall.layer1 import Layer1, layer1_read, user_document
from memories.recall.matching import route_by_meaning, route_first
from memories.recall.pool import (
    Dropped,
    MemoryCandidate,
)
from memories.recall.query_profile import QueryProfile
from memories.recall.recording import recall_record, recall_recordable
from memories.recall.relevance import related_words
from memories.recall.render import Injection, fit_and_render
from memories.recall.request import RecallRequest, RecallResult
from memories.recall.routing import LAYERS, Route
from memories.recall.standing import standing_rules
from memories.recall.trace import Trace, explain
from memories.stm.store import now_seconds
from memories.vocabulary import Vocabulary
from memoryproject.errors import Invalid
from memoryproject.metrics import observe_recall
from memoryproject.redaction import redact_text
from profiles.models import Tenant


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
    short_term = stm_candidates(request, layer1.owner, routed, policy, trace, close)
    ltm_candidates, history_candidates = ltm_and_history(
        tenant, request, asking, profile, decided, policy, trace
    )
    history_candidates += task_record(tenant, request, layer1, routed, short_term, trace)
    history_candidates = not_replaced(history_candidates, layer1.owner, trace)
    # 4. One pool: de-duplicate, apply domain authority, re-score, keep the top k.
    pooled = [*short_term, *ltm_candidates, *history_candidates]
    if request.user_stated_only:
        pooled = user_stated(pooled, trace)
    live = [*routed.probe.items.values(), *routed.probe.user_items.values()]
    # The user's live items, chosen or not: an agent's turn quoting one is an echo of it.
    question = question_of(routed, asking)
    known = [(item.id, item.summary) for item in live]
    chosen = choose(pooled, blocks, policy, k, trace, known, question, cutoff=request.cutoff)
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


def _language(blocks: ContextBlocks, profile: QueryProfile) -> str:
    language = str(blocks.profile.get("language", "")).lower()
    if language.startswith("zh") or language in ("中文", "chinese"):
        return "zh"
    if language.startswith("en") or language == "english":
        return "en"
    return profile.language
