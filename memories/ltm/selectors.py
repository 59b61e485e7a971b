"""Reads of long-term memory: cards by id, and lexical / vector / hybrid search."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings
from django.db import DatabaseError

from memories.ltm.embedder import query_vector as embed_query
from memories.ltm.models import LtmCard
from memories.ltm.scope import Hit, Scope
from memories.ltm.search import card_search_index
from memories.ltm.text import bm25_text
from memories.ltm.vectors import vector_index
from memoryproject.errors import Invalid, NotFound, StoreUnavailable
from memoryproject.store_timing import in_request_context
from profiles.models import EndUser, Tenant

logger = logging.getLogger(__name__)
T = TypeVar("T")

RRF_K = 60
MODES = ("lexical", "vector", "hybrid")
_branches = ThreadPoolExecutor(max_workers=8, thread_name_prefix="ltm-search")


def card_for(*, tenant: Tenant, memory_id: str) -> LtmCard:
    """The tenant's card (any status but deleted); NotFound otherwise."""
    card = (
        LtmCard.objects.select_related("end_user", "project")
        .filter(tenant=tenant, memory_id=memory_id)
        .exclude(status=LtmCard.Status.DELETED)
        .first()
    )
    if card is None:
        raise NotFound(f"No card {memory_id!r}.")
    return card


@dataclass(frozen=True)
class CardPage:
    cards: list[LtmCard]
    next_cursor: int | None  # pass as `cursor` for the next page; None on the last one


def cards_for(
    *,
    tenant: Tenant,
    user_id: str = "",
    shared: bool = False,
    statuses: Sequence[str] = (LtmCard.Status.ACTIVE,),
    memory_type: str = "",
    cursor: int | None = None,
    limit: int = 50,
) -> CardPage:
    """The tenant's cards, newest first: one user's (NotFound for a user the tenant does not
    have), the shared ones (`shared`), or all; never the deleted ones."""
    cards = LtmCard.objects.select_related("end_user", "project").filter(
        tenant=tenant, status__in=[s for s in statuses if s != LtmCard.Status.DELETED]
    )
    if user_id:
        end_user = EndUser.objects.filter(tenant=tenant, external_id=user_id).first()
        if end_user is None:
            raise NotFound(f"No user {user_id!r}.")
        cards = cards.filter(end_user=end_user)
    elif shared:
        cards = cards.filter(end_user__isnull=True)
    if memory_type:
        cards = cards.filter(memory_type=memory_type)
    if cursor is not None:
        cards = cards.filter(pk__lt=cursor)
    page = list(cards.order_by("-pk")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return CardPage(cards=page, next_cursor=page[-1].pk if more else None)


def cards_exist(*, tenant: Tenant, user_id: str) -> bool:
    """Whether a search of this user's cards can find anything: the user has an active card
    or the tenant a shared one. True when PostgreSQL cannot tell."""
    active = LtmCard.objects.filter(tenant=tenant, status=LtmCard.Status.ACTIVE)
    try:
        return (
            active.filter(end_user__isnull=True).exists()
            or bool(user_id)
            and active.filter(end_user__tenant=tenant, end_user__external_id=user_id).exists()
        )
    except DatabaseError:
        return True


def card_weights(*, tenant: Tenant, memory_ids: Sequence[str]) -> dict[str, float]:
    """The ledger's weight of each of these cards that is still active (others are left out:
    an index may lag behind an archiving or a deletion by one outbox drain)."""
    return dict(
        LtmCard.objects.filter(
            tenant=tenant, memory_id__in=list(memory_ids), status=LtmCard.Status.ACTIVE
        ).values_list("memory_id", "weight")
    )


@dataclass
class LtmHit:
    """A fused result with each branch's rank and score, so callers can explain it."""

    memory_id: str
    score: float
    lexical_rank: int | None = None
    lexical_score: float | None = None
    vector_rank: int | None = None
    vector_score: float | None = None
    card: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LtmSearchResult:
    hits: list[LtmHit]
    mode: str
    degraded: bool = False  # a branch failed or was too slow; the other one answered
    failed_branches: tuple[str, ...] = ()
    # Time spent in each store: lexical (Elasticsearch), embed (the query vector), vector
    # (Milvus), documents (fetching the hits' text from Elasticsearch).
    timings_ms: dict[str, float] = field(default_factory=dict)


def ltm_search(
    *,
    tenant: Tenant,
    query: str,
    mode: str = "hybrid",
    k: int = 10,
    user_id: str | None = None,
    project: str | None = None,
    memory_types: Sequence[str] = (),
    statuses: Sequence[str] = ("active",),
    top_n: int = 50,
    query_vector: Sequence[float] | None = None,
    with_cards: bool = True,
) -> LtmSearchResult:
    """Search the tenant's cards; hybrid fuses both branches by Reciprocal Rank Fusion.

    With `user_id`, that user's cards and the shared ones (no user) are searched;
    `query_vector` is the query's embedding when the caller has it already. If one
    branch fails or exceeds LTM_BRANCH_TIMEOUT_SECONDS the other answers and the result is
    `degraded`; if every branch asked fails, StoreUnavailable. Without `with_cards` the hits
    carry no card and are the best `2 k` the indexes found: the caller reads the cards
    (`card_documents`) once for every search it made.
    """
    if mode not in MODES:
        raise Invalid(f"mode must be one of {', '.join(MODES)}.", fields={"mode": [mode]})
    scope = Scope(
        tenant_id=str(tenant.pk),
        user_ids=(user_id,) if user_id else None,
        project_id=project,
        memory_types=tuple(memory_types),
        statuses=tuple(statuses),
    )
    depth = max(top_n, k)
    timings: dict[str, float] = {}
    branches: dict[str, Callable[[], list[Hit]]] = {}
    text = bm25_text(query)
    if mode in ("lexical", "hybrid") and text:  # a query without index terms matches nothing
        branches["lexical"] = _timed(
            timings,
            "lexical",
            lambda: card_search_index().search(text=text, scope=scope, limit=depth),
        )
    if mode in ("vector", "hybrid"):

        def nearest() -> list[Hit]:
            vector = (
                list(query_vector)
                if query_vector is not None
                else _timed(timings, "embed", lambda: embed_query(query).tolist())()
            )
            return _timed(
                timings,
                "vector",
                lambda: vector_index().nearest(vector=vector, scope=scope, limit=depth),
            )()

        branches["vector"] = nearest
    answers, failed = _run_branches(branches)
    if failed and not answers:
        raise StoreUnavailable(f"Long-term search failed in every branch: {', '.join(failed)}.")

    fused: dict[str, LtmHit] = {}
    for name, branch_hits in answers.items():
        for rank, hit in enumerate(branch_hits, start=1):
            entry = fused.setdefault(hit.memory_id, LtmHit(memory_id=hit.memory_id, score=0.0))
            entry.score += 1.0 / (RRF_K + rank) if mode == "hybrid" else hit.score
            setattr(entry, f"{name}_rank", rank)
            setattr(entry, f"{name}_score", hit.score)
    ranked = sorted(fused.values(), key=lambda h: h.score, reverse=True)
    if not with_cards:
        return LtmSearchResult(
            hits=ranked[: k * 2],
            mode=mode,
            degraded=bool(failed),
            failed_branches=failed,
            timings_ms=dict(timings),
        )
    documents, degraded_docs = _timed(
        timings,
        "documents",
        lambda: card_documents(
            tenant=tenant, ids=[h.memory_id for h in ranked[: k * 2]], statuses=scope.statuses
        ),
    )()
    hits: list[LtmHit] = []
    for fused_hit in ranked:
        if fused_hit.memory_id not in documents:
            continue  # gone from the ledger, or no longer of the statuses asked
        fused_hit.card = documents[fused_hit.memory_id]
        hits.append(fused_hit)
        if len(hits) == k:
            break
    failed_all = (*failed, *degraded_docs)
    return LtmSearchResult(
        hits=hits,
        mode=mode,
        degraded=bool(failed_all),
        failed_branches=failed_all,
        timings_ms=dict(timings),
    )


def _timed(timings: dict[str, float], name: str, call: Callable[[], T]) -> Callable[[], T]:
    """`call`, recording how long it took under `name` (branches run in other threads)."""

    def run() -> T:
        started = time.perf_counter()
        try:
            return call()
        finally:
            timings[name] = round((time.perf_counter() - started) * 1000, 2)

    return run


def _run_branches(
    branches: dict[str, Callable[[], list[Hit]]],
) -> tuple[dict[str, list[Hit]], tuple[str, ...]]:
    futures = {name: _branches.submit(in_request_context(run)) for name, run in branches.items()}
    answers: dict[str, list[Hit]] = {}
    failed: list[str] = []
    for name, future in futures.items():
        try:
            answers[name] = future.result(timeout=settings.LTM_BRANCH_TIMEOUT_SECONDS)
        except FutureTimeout:
            limit = settings.LTM_BRANCH_TIMEOUT_SECONDS
            logger.warning("long-term %s search took longer than %.1fs; dropped", name, limit)
            failed.append(name)
        except StoreUnavailable as exc:
            logger.warning("long-term %s search failed: %s", name, exc)
            failed.append(name)
    return answers, tuple(failed)


def card_documents(
    *, tenant: Tenant, ids: Sequence[str], statuses: Sequence[str] = ("active",)
) -> tuple[dict[str, dict[str, Any]], tuple[str, ...]]:
    """The fields of these cards, by memory_id, from the ledger: it is authoritative, so a card
    an index still holds after its archiving or deletion is left out. From Elasticsearch, and
    `("documents",)` as the degraded part, when PostgreSQL cannot answer."""
    if not ids:
        return {}, ()
    try:
        cards = LtmCard.objects.select_related("end_user", "project").filter(
            tenant=tenant, memory_id__in=list(ids), status__in=list(statuses)
        )
        return {
            card.memory_id: {
                **card.index_fields(),
                "memory_id": card.memory_id,
                "version": card.version,
            }
            for card in cards
        }, ()
    except DatabaseError as exc:
        logger.warning("long-term cards read from Elasticsearch: %s", exc)
    stored = card_search_index().get_many(ids=ids, timeout=settings.LTM_BRANCH_TIMEOUT_SECONDS)
    wanted = set(statuses)
    return {i: d for i, d in stored.items() if d.get("status") in wanted}, ("documents",)
