"""Recall: query profile → routing → Layer 1 blocks → one candidate pool → scoring → budget.

Every decision is recorded so `explain` can show it. A layer that fails or exceeds its time
budget is skipped and named in `degraded`; recall answers from the rest.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np
from django.db import DatabaseError

from memories.ltm.selectors import card_weights
from memories.recall.asking import (
    Asking,
    apply_time,
    memory_candidates,
    policy_value,
    settle_route,
    start_asking,
)
from memories.recall.cache import Cached, recall_context_cache
from memories.recall.context import (
    ContextBlocks,
    compose_blocks,
    empty_tenant_document,
    tenant_context_document,
    user_context_document,
)
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
from memories.recall.query_profile import QueryProfile, RuntimeState, build_query_profile
from memories.recall.relevance import (
    Alternates,
    content_terms,
    query_names,
    related_terms,
    related_words,
)
from memories.recall.render import Injection, fit_and_render
from memories.recall.routing import LAYERS, Route, route
from memories.recall.semantic import CONFIRMING_MARGIN, MAX_SHARED_BY, SEMANTIC_MARGIN, cosines
from memories.recall.standing import standing_indexes, standing_rules, user_matches
from memories.recall.task_record import task_record_candidates, task_record_query
from memories.stm.items import StmItem
from memories.stm.store import now_seconds, recall_stm_store
from memories.vocabulary import Vocabulary, default_vocabulary
from memoryproject.errors import Invalid, StoreUnavailable
from memoryproject.metrics import observe_recall
from memoryproject.redaction import redact_text
from memoryproject.redis_keys import Owner
from profiles.models import Tenant
from transcripts.selectors import session_is_users

logger = logging.getLogger(__name__)

SESSION_PROBE = 20  # newest items of the session read for runtime state
TASK_PROBE = 30
ENTITY_PROBE = 10
MAX_ENTITIES = 8
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


@dataclass
class _Trace:
    """What happened, layer by layer, for `explain` and the logs."""

    latency_ms: dict[str, float] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def timed(self, layer: str, started: float) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        self.latency_ms[layer] = round(self.latency_ms.get(layer, 0.0) + elapsed, 2)

    def fail(self, layer: str, why: str) -> None:
        if layer not in self.degraded:
            self.degraded.append(layer)
        self.notes.append(f"{layer}: {why}")
        logger.warning("recall skipped %s: %s", layer, why)


def recall(*, tenant: Tenant, request: RecallRequest) -> RecallResult:
    """Everything an agent should know before its next turn, within the token budget."""
    unknown = set(request.layers) - set(LAYERS)
    if unknown:
        raise Invalid(
            f"layers must be among {', '.join(LAYERS)}.", fields={"layers": sorted(unknown)}
        )
    # Task ids are stored redacted (they name Redis keys): look them up the same way.
    request = replace(request, task_id=redact_text(request.task_id))
    trace = _Trace()
    started = time.perf_counter()
    # 0. A recall names its session's own user (or a session yet to start) and creates nothing.
    recorded = _session_is_users(tenant, request, trace)
    # 1. Layer 1 from the cache; the tenant document is needed for the word lists and policy.
    layer1 = _layer1(tenant, request, trace)
    policy = layer1.policy
    # 2. Runtime state from Redis (ids and entities only), then the query profile and route.
    routed = _routed(request, layer1, trace)
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
        has_history=layer1.owner is not None and bool(policy.get("history_enabled", True)),
        alternates=routed.alternates,
        related_words=related_words(profile.content_terms, layer1.vocabulary),
    )
    blocks = _blocks(tenant, request, layer1, decided, trace)
    close = _close_items(request, layer1.owner, routed, asking, trace)
    decided = routed.decided
    stm_candidates = _stm_candidates(request, layer1.owner, routed, policy, trace, close)
    ltm_candidates, history_candidates = _memory_candidates(
        tenant, request, asking, profile, decided, policy, trace
    )
    history_candidates += _task_record(tenant, request, layer1, routed, stm_candidates, trace)
    # 4. One pool: de-duplicate, apply domain authority, re-score, keep the top k.
    pooled = [*stm_candidates, *ltm_candidates, *history_candidates]
    if request.user_stated_only:
        pooled = _user_stated(pooled, trace)
    live = [*routed.probe.items.values(), *routed.probe.user_items.values()]
    # The user's live items, chosen or not: an agent's turn quoting one is an echo of it.
    chosen = _pool(pooled, blocks, policy, k, trace, [(item.id, item.summary) for item in live])
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
    injection = _fit(blocks, chosen, budget, language, profile, trace)

    recall_id = f"rcl_{uuid.uuid4().hex[:20]}"
    if recorded:
        _record(tenant, request, recall_id, layer1.owner, injection, trace)
    else:
        trace.notes.append("the session has not started: this recall is not recorded")
    trace.latency_ms["total"] = round((time.perf_counter() - started) * 1000, 2)
    observe_recall(trace.latency_ms, trace.degraded)
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
        explain=_explain(profile, decided, trace, injection.shortened) if request.explain else None,
    )


@dataclass
class _Layer1:
    """What recall read of Layer 1 before asking anything else."""

    tenant_cached: Cached
    user_cached: Cached
    tenant_doc: dict[str, Any]
    user_doc: dict[str, Any] | None
    vocabulary: Vocabulary
    owner: Owner | None  # whose short-term memory; None when the user has none yet

    @property
    def policy(self) -> dict[str, Any]:
        return self.tenant_doc["policy"]


def _layer1(tenant: Tenant, request: RecallRequest, trace: _Trace) -> _Layer1:
    tenant_cached, user_cached = _read_cache(tenant, request.user_id, trace)
    tenant_doc = _tenant_document(tenant, tenant_cached, trace)
    user_doc = user_cached.document
    vocabulary = _vocabulary(tuple(tuple(entry) for entry in tenant_doc["vocabulary"]))
    if user_doc is None or not user_cached.fresh:
        # The owner of the user's short-term memory is only known from Layer 1.
        user_doc = _user_document(tenant, request.user_id, user_cached, trace) or user_doc
    owner = (
        Owner(tenant.pk, user_doc["end_user_id"]) if user_doc and user_doc.get("exists") else None
    )
    return _Layer1(tenant_cached, user_cached, tenant_doc, user_doc, vocabulary, owner)


@dataclass
class _Routed:
    probe: _Probe
    profile: QueryProfile
    matched: list[StmItem]  # the user's newest live items that match the query
    decided: Route
    alternates: Alternates = field(default_factory=dict)
    firm: list[StmItem] = field(default_factory=list)  # hold the query by its words
    partial: list[StmItem] = field(default_factory=list)  # one content term only


def _routed(request: RecallRequest, layer1: _Layer1, trace: _Trace) -> _Routed:
    """The runtime state, the query profile and the first routing decision."""
    policy = layer1.policy
    tenant_cached, user_cached = layer1.tenant_cached, layer1.user_cached
    query_entities = layer1.vocabulary.find_entities(request.query)
    probe = _probe(layer1.owner, request, query_entities[:MAX_ENTITIES], policy, trace)
    profile = build_query_profile(
        query=request.query,
        vocabulary=layer1.vocabulary,
        entities=query_entities,
        runtime=RuntimeState(
            active_task_id=request.task_id or probe.task_id,
            session_recent=probe.session_recent,
            session_entities=probe.session_entities,
            known_entities=probe.known_entities,
            profile_cache_missing=tenant_cached.document is None or user_cached.document is None,
            profile_cache_stale=not (tenant_cached.fresh and user_cached.fresh)
            and tenant_cached.document is not None
            and user_cached.document is not None,
        ),
    )
    # The user's newest live items, from any session, matched against the query (bounded).
    profile.content_terms = content_terms(request.query)
    alternates = related_terms(profile.content_terms, layer1.vocabulary)
    profile.related_terms = list(alternates)
    floor = float(policy_value(policy, "relevance_floor"))
    names = query_names(request.query, profile.entities)
    firm, partial = user_matches(
        list(probe.user_items.values()),
        terms=profile.content_terms,
        floor=floor,
        names=names,
        now=now_seconds(),
        alternates=alternates,
    )
    # Until their meaning is known, a partial hold counts only as the query's only term, and
    # only in a question about the user.
    single = len(profile.content_terms) == 1 and profile.about_user
    matched = [*firm, *(partial if single else [])]
    profile.user_items_matched = len(matched)
    decided = route(profile, forced_layers=request.layers)
    return _Routed(probe, profile, matched, decided, alternates, firm, partial)


def _close_items(
    request: RecallRequest,
    owner: Owner | None,
    routed: _Routed,
    asking: Asking,
    trace: _Trace,
) -> dict[str, float]:
    """The user's newest live items matched again, now by meaning as well: a partial word match
    counts when its meaning agrees, an item close in meaning counts whatever its words; Layer 2
    is routed again with them. Returns the items (of the session too) at least
    `CONFIRMING_MARGIN` above the query's background, id -> margin: they score as relevant.

    Only when long-term memory is being asked anyway: its query embedding is shared, and a task
    step the rules answer embeds nothing."""
    items = {**routed.probe.user_items, **routed.probe.items}
    if asking.search is None or owner is None or not items or "redis" in trace.degraded:
        return {}
    started = time.perf_counter()
    try:
        stored = recall_stm_store().vectors_of(owner=owner, item_ids=list(items))
    except StoreUnavailable as exc:
        trace.fail("redis", _why(exc))
        return {}
    finally:
        trace.timed("redis", started)
    meaning = asking.meaning() if stored else None
    if meaning is None:
        return {}
    vector, base = meaning
    ids = list(stored)
    rows = np.frombuffer(b"".join(stored[i] for i in ids), dtype=np.float16).reshape(len(ids), -1)
    scored = cosines(vector, rows.astype(np.float32))
    margin = {i: c - base for i, c in zip(ids, scored, strict=True)}
    single = len(routed.profile.content_terms) == 1
    few = len(routed.firm) + len(routed.partial) <= MAX_SHARED_BY
    confirmed = [
        item
        for item in routed.partial
        if routed.profile.about_user
        and (
            (few and margin.get(item.id, 0.0) >= CONFIRMING_MARGIN)
            or (item.id not in margin and single)
        )
    ]
    worded = {item.id for item in [*routed.firm, *routed.partial]}
    close = [
        routed.probe.user_items[i]
        for i, m in margin.items()
        if m >= SEMANTIC_MARGIN and i not in worded and i in routed.probe.user_items
    ]
    routed.matched = [*routed.firm, *confirmed, *close]
    routed.profile.user_items_matched = len(routed.matched)
    routed.profile.user_items_close = len(close)
    routed.decided = route(routed.profile, forced_layers=request.layers)
    return {i: m for i, m in margin.items() if m >= CONFIRMING_MARGIN}


def _blocks(
    tenant: Tenant, request: RecallRequest, layer1: _Layer1, decided: Route, trace: _Trace
) -> ContextBlocks:
    """The three Layer 1 blocks for the request's project and workspace."""
    user_doc = layer1.user_doc
    if decided.postgres and layer1.user_cached.fresh:
        # The user's exact values were asked for: read them from PostgreSQL, not the cache.
        # (Tenant-wide rows are rebuilt above whenever a change made their cache stale.)
        user_doc = _user_document(tenant, request.user_id, layer1.user_cached, trace) or user_doc
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
    routed: _Routed,
    policy: dict[str, Any],
    trace: _Trace,
    close: dict[str, float],
) -> list[MemoryCandidate]:
    """Layer 2's candidates; marks the profile when they fall short, so Layer 3 is asked."""
    decided, profile = routed.decided, routed.profile
    terms = query_terms(request.query)
    candidates: list[MemoryCandidate] = []
    if decided.redis and owner is not None and "redis" not in trace.degraded:
        items = _fetch_items(owner, routed.probe, profile, trace)
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
                close=item.id in close,
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
    layer1: _Layer1,
    routed: _Routed,
    stm_candidates: list[MemoryCandidate],
    trace: _Trace,
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
        trace.fail("history", _why(exc))
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
    trace: _Trace,
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


def _user_stated(candidates: list[MemoryCandidate], trace: _Trace) -> list[MemoryCandidate]:
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
    trace: _Trace,
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


def _fit(
    blocks: ContextBlocks,
    chosen: list[MemoryCandidate],
    budget: int,
    language: str,
    profile: QueryProfile,
    trace: _Trace,
) -> Injection:
    """The injection within the token budget; what did not fit is recorded as dropped."""
    injection = fit_and_render(
        blocks=blocks,
        candidates=chosen,
        budget_tokens=budget,
        language=language,
        task_id=profile.active_task_id if any(c.source == "redis" for c in chosen) else "",
    )
    for memory_id in injection.dropped:
        source = next(c.source for c in chosen if c.memory_id == memory_id)
        trace.dropped.append(Dropped(memory_id, source, "over the token budget"))
    return injection


# --- Layer 1 ---------------------------------------------------------------------------------
def _read_cache(tenant: Tenant, user_id: str, trace: _Trace) -> tuple[Cached, Cached]:
    started = time.perf_counter()
    try:
        return recall_context_cache().read(tenant_id=tenant.pk, user_id=user_id)
    except StoreUnavailable as exc:
        trace.fail("redis", _why(exc))
        empty = Cached(document=None, generation=0, fresh=False)
        return empty, empty
    finally:
        trace.timed("redis", started)


def _tenant_document(tenant: Tenant, cached: Cached, trace: _Trace) -> dict[str, Any]:
    """The tenant document: the cached one when fresh, else rebuilt from PostgreSQL."""
    if cached.fresh and cached.document is not None:
        return cached.document
    started = time.perf_counter()
    try:
        document = tenant_context_document(tenant=tenant)
    except DatabaseError as exc:
        trace.fail("postgres", _why(exc))
        return cached.document or empty_tenant_document(tenant=tenant)
    finally:
        trace.timed("postgres", started)
    _cache_write(tenant, "", document, cached.generation, trace)
    return document


def _user_document(
    tenant: Tenant, user_id: str, cached: Cached, trace: _Trace
) -> dict[str, Any] | None:
    """The user's document, read from PostgreSQL (the cached one if PostgreSQL fails)."""
    started = time.perf_counter()
    try:
        document = user_context_document(tenant=tenant, user_id=user_id)
    except DatabaseError as exc:
        trace.fail("postgres", _why(exc))
        return cached.document
    finally:
        trace.timed("postgres", started)
    _cache_write(tenant, user_id, document, cached.generation, trace)
    return document


def _cache_write(
    tenant: Tenant, user_id: str, document: dict[str, Any], generation: int, trace: _Trace
) -> None:
    """Cache a rebuilt document under the generation read before it was built."""
    if "redis" in trace.degraded:
        return
    try:
        recall_context_cache().write(
            tenant_id=tenant.pk, user_id=user_id, document=document, generation=generation
        )
    except StoreUnavailable as exc:
        trace.fail("redis", _why(exc))


@lru_cache(maxsize=256)
def _vocabulary(entries: tuple[tuple[str, str], ...]) -> Vocabulary:
    """The default word lists extended with a tenant's entries, compiled once per content."""
    return default_vocabulary().extended(entries) if entries else default_vocabulary()


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


# --- Layer 2 ---------------------------------------------------------------------------------
@dataclass
class _Probe:
    task_id: str = ""
    session_recent: bool = False
    session_entities: list[str] = field(default_factory=list)
    known_entities: list[str] = field(default_factory=list)
    ids: dict[str, list[str]] = field(default_factory=dict)  # index -> newest ids
    items: dict[str, StmItem] = field(default_factory=dict)  # the session's, already read
    user_items: dict[str, StmItem] = field(default_factory=dict)  # other sessions' newest


def _probe(
    owner: Owner | None,
    request: RecallRequest,
    entities: list[str],
    policy: dict[str, Any],
    trace: _Trace,
) -> _Probe:
    """Runtime state from the indexes: recent session items, task, entities already seen."""
    probe = _Probe()
    if owner is None or "redis" in trace.degraded:
        return probe
    indexes = [("session", request.session_id, SESSION_PROBE)]
    if request.task_id:
        indexes.append(("task", request.task_id, TASK_PROBE))
    indexes.extend(("entity", entity, ENTITY_PROBE) for entity in entities)
    user_indexes = standing_indexes()
    started = time.perf_counter()
    store = recall_stm_store()
    try:
        heads = store.index_heads(owner=owner, indexes=[*indexes, *user_indexes])
        user_heads, heads = heads[len(indexes) :], heads[: len(indexes)]
        session_ids = [item_id for item_id, _ in heads[0]]
        user_ids = [item_id for rows in user_heads for item_id, _ in rows]
        # Whole items: their entities and task are runtime state, and they are the first
        # candidates if Layer 2 is asked (so they are not read twice); the user's newest and
        # standing items are matched across sessions.
        read = store.get_many(owner=owner, item_ids=list(dict.fromkeys([*session_ids, *user_ids])))
    except StoreUnavailable as exc:
        trace.fail("redis", _why(exc))
        return probe
    finally:
        trace.timed("redis", started)
    now = now_seconds()
    newest = heads[0][0][1] if heads[0] else 0.0
    probe.session_recent = now - newest < policy["session_recent_minutes"] * 60
    in_session = set(session_ids)
    seen: dict[str, str] = {}
    for item in read:
        if not item.is_live(now) or item.tenant_id != owner.tenant_id:
            continue
        if item.id not in in_session:
            probe.user_items[item.id] = item
            continue
        probe.items[item.id] = item
        if not probe.task_id and item.task_id:
            probe.task_id = item.task_id
        for entity in item.entities:
            seen.setdefault(entity.lower(), entity)
    probe.session_entities = list(seen.values())
    entity_heads = heads[len(indexes) - len(entities) :]
    probe.known_entities = [e for e, rows in zip(entities, entity_heads, strict=True) if rows]
    probe.ids = {"session": session_ids}
    if request.task_id:
        probe.ids["task"] = [item_id for item_id, _ in heads[1]]
    for entity, rows in zip(entities, entity_heads, strict=True):
        probe.ids[f"entity:{entity.lower()}"] = [item_id for item_id, _ in rows]
    return probe


def _fetch_items(
    owner: Owner, probe: _Probe, profile: QueryProfile, trace: _Trace
) -> list[StmItem]:
    """Live items of the task, the session and the query's entities (newest first, no repeats)."""
    wanted: dict[str, None] = {}
    for name in ("task", "session"):
        wanted.update(dict.fromkeys(probe.ids.get(name, [])))
    extra = [
        ("entity", entity, ENTITY_PROBE)
        for entity in profile.entities
        if f"entity:{entity.lower()}" not in probe.ids
    ][:MAX_ENTITIES]
    if profile.active_task_id and "task" not in probe.ids:
        extra.append(("task", profile.active_task_id, TASK_PROBE))
    for name, ids in probe.ids.items():
        if name.startswith("entity:"):
            wanted.update(dict.fromkeys(ids))
    started = time.perf_counter()
    store = recall_stm_store()
    try:
        if extra:
            for rows in store.index_heads(owner=owner, indexes=extra):
                wanted.update(dict.fromkeys(item_id for item_id, _ in rows))
        missing = [item_id for item_id in wanted if item_id not in probe.items]
        items = store.get_many(owner=owner, item_ids=missing)
    except StoreUnavailable as exc:
        trace.fail("redis", _why(exc))
        return []
    finally:
        trace.timed("redis", started)
    now = now_seconds()
    fetched = [i for i in items if i.is_live(now) and i.tenant_id == owner.tenant_id]
    return [*probe.items.values(), *fetched]


# --- Layer 3 ---------------------------------------------------------------------------------
def _weighted(
    tenant: Tenant, candidates: list[MemoryCandidate], trace: _Trace
) -> list[MemoryCandidate]:
    """Cards with the ledger's forgetting weight; cards no longer active are left out."""
    if not candidates:
        return candidates
    started = time.perf_counter()
    try:
        weights = card_weights(tenant=tenant, memory_ids=[c.memory_id for c in candidates])
    except DatabaseError as exc:
        trace.fail("postgres", _why(exc))
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


# --- side effects ----------------------------------------------------------------------------
def _session_is_users(tenant: Tenant, request: RecallRequest, trace: _Trace) -> bool:
    """Whether the recall is recorded: only in an existing session of its user, so a read key
    creates no session, user or event. Conflict when the session is another user's."""
    started = time.perf_counter()
    try:
        return session_is_users(
            tenant=tenant, session_id=request.session_id, user_id=request.user_id
        )
    except DatabaseError as exc:
        trace.fail("postgres", _why(exc))
        return True  # unchecked: the effects task appends only to the user's existing session
    finally:
        trace.timed("postgres", started)


def _record(
    tenant: Tenant,
    request: RecallRequest,
    recall_id: str,
    owner: Owner | None,
    injection: Injection,
    trace: _Trace,
) -> None:
    """Queue the access updates and the transcript event; applied in batches by a task."""
    items = injection.items
    record = {
        "recall_id": recall_id,
        "tenant_id": tenant.pk,
        "user_id": request.user_id,
        "end_user_id": owner.end_user_id if owner else None,
        "session_id": request.session_id,
        "task_id": request.task_id,
        "at": time.time(),
        "stm": [c.memory_id for c in items if c.source == "redis"],
        "ltm": [c.memory_id for c in items if c.source == "ltm"],
        "history": [
            {
                "entry_id": c.memory_id,
                "event_ids": list(c.provenance.get("event_ids", [])),
                "session_id": c.provenance.get("session_id", ""),
            }
            for c in items
            if c.source == "history"
        ],
        "standing": list(injection.standing),
        "degraded": list(trace.degraded),
    }
    from memories.recall.effects import recall_effects_schedule

    recall_effects_schedule(record=record, trace_failure=lambda why: trace.fail("redis", why))


# --- helpers ---------------------------------------------------------------------------------
def _why(exc: BaseException) -> str:
    if isinstance(exc, FutureTimeout):
        return "exceeded its time budget"
    return str(exc) or exc.__class__.__name__


def _explain(
    profile: QueryProfile, decided: Route, trace: _Trace, shortened: list[str]
) -> dict[str, Any]:
    return {
        "query_profile": profile.as_dict(),
        "routing": {
            layer: {
                "asked": decided.asks(layer),
                "reasons": decided.reasons.get(layer, []),
                "not_asked_because": decided.declined.get(layer, []),
            }
            for layer in LAYERS
        }
        | {"ltm_mode": decided.ltm_mode, "forced": decided.forced},
        "dropped": [
            {"memory_id": d.memory_id, "source": d.source, "reason": d.reason}
            for d in trace.dropped
        ],
        "shortened": shortened,
        "latency_ms": trace.latency_ms,
        "notes": trace.notes,
    }
