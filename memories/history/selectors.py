"""Reads of episodic history: `history_search`, lexical / vector / hybrid over one user's past.

Always scoped by tenant and end user inside both engines' queries, so no other tenant's or
user's entry can come back; optionally by the events' own time range.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from memories.history.documents import HistoryMatch, HistoryScope
from memories.history.search import history_search_index
from memories.history.vectors import history_vector_index
from memories.ltm.embedder import query_vector as embed_query
from memories.ltm.text import bm25_text
from memories.policies.models import RecallPolicy
from memoryproject.errors import Invalid, StoreUnavailable
from memoryproject.store_timing import in_request_context
from profiles.models import Tenant

logger = logging.getLogger(__name__)

MODES = ("lexical", "vector", "hybrid")
MAX_K = 100
BRANCH_DEPTH = 50  # each branch's candidates for the fusion (at least k)
_branches = ThreadPoolExecutor(max_workers=8, thread_name_prefix="history-search")


@dataclass(frozen=True)
class HistoryHit:
    entry_id: str  # the history entry's id (one per indexed event)
    event_id: str  # the transcript event's message id (client id or msg_...)
    session_id: str  # the session's external id
    role: str  # user | assistant | tool
    occurred_at: datetime  # the event's own time (its created_at), aware UTC
    text: str  # redacted text of the event, readable alone (speaker/role prefix)
    context: str  # redacted neighbouring turns it was indexed with ("" if none)
    score: float  # fused score, higher is closer, in [0, 1] (1 = best of this search)
    lexical_rank: int | None  # 1-based rank in the BM25 branch, None if absent
    vector_rank: int | None  # 1-based rank in the vector branch, None if absent
    cosine: float | None = None  # the vector branch's own score (cosine), None if absent


@dataclass(frozen=True)
class HistorySearchResult:
    hits: list[HistoryHit]
    degraded: list[str]  # e.g. ["history.vector"] when a branch failed or timed out
    latency_ms: dict[str, float]  # per branch and store: history.lexical / .vector / .embed


def history_enabled(*, tenant_id: int) -> bool:
    """Whether the tenant indexes and searches history (its recall policy; on by default)."""
    flag = (
        RecallPolicy.objects.filter(tenant_id=tenant_id)
        .values_list("history_enabled", flat=True)
        .first()
    )
    return True if flag is None else bool(flag)


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _when(value: Any) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)


def history_search(
    *,
    tenant: Tenant,
    user_id: str,
    query: str,
    k: int = 10,
    since: datetime | None = None,
    until: datetime | None = None,
    exclude_session_id: str = "",
    only_sessions: Sequence[str] | None = None,
    mode: str = "hybrid",
    query_vector: Sequence[float] | None = None,
    timeout: float | None = None,
    enabled: bool | None = None,
) -> HistorySearchResult:
    """The end user's history entries closest to `query`, best first.

    `hybrid` fuses both branches by weighted Reciprocal Rank Fusion (HISTORY_RRF_K,
    HISTORY_LEXICAL_WEIGHT, HISTORY_VECTOR_WEIGHT); `query_vector` saves embedding the query
    again. `only_sessions` limits the search to those sessions (None: every session of the
    user). A branch that fails or takes longer than `timeout` (HISTORY_BRANCH_TIMEOUT_MS) is
    left out and named in `degraded`; if every branch fails the hits are empty. A tenant that
    switched history off gets no hits: `enabled` is its switch when the caller holds it already
    (recall reads it with its cached policy); left out, it is read from PostgreSQL.
    """
    if mode not in MODES:
        raise Invalid(f"mode must be one of {', '.join(MODES)}.", fields={"mode": [mode]})
    if not 1 <= k <= MAX_K:
        raise Invalid(f"k must be between 1 and {MAX_K}.", fields={"k": [str(k)]})
    if not user_id or not query.strip():
        return HistorySearchResult(hits=[], degraded=[], latency_ms={})
    if not (history_enabled(tenant_id=tenant.pk) if enabled is None else enabled):
        return HistorySearchResult(hits=[], degraded=[], latency_ms={})
    scope = HistoryScope(
        tenant_id=str(tenant.pk),
        user_id=user_id,
        since=_aware(since),
        until=_aware(until),
        exclude_session_id=exclude_session_id,
        only_sessions=None if only_sessions is None else tuple(only_sessions),
    )
    limit = timeout if timeout is not None else settings.HISTORY_BRANCH_TIMEOUT_SECONDS
    depth = max(BRANCH_DEPTH, k)
    latency: dict[str, float] = {}
    branches: dict[str, Callable[[], list[HistoryMatch]]] = {}
    terms = bm25_text(query)
    if mode in ("lexical", "hybrid") and terms:  # a query without index terms matches nothing

        def lexical() -> list[HistoryMatch]:
            return history_search_index().search(
                text=terms,
                scope=scope,
                limit=depth,
                context_weight=settings.HISTORY_CONTEXT_WEIGHT,
                timeout=limit,
            )

        branches["lexical"] = _timed(latency, "history.lexical", lexical)
    if mode in ("vector", "hybrid"):
        given = list(query_vector) if query_vector is not None else None

        def nearest() -> list[HistoryMatch]:
            vector = given
            if vector is None:
                vector = _timed(latency, "history.embed", lambda: _embed(query))()
            return _timed(
                latency,
                "history.vector",
                lambda: history_vector_index().nearest(vector=vector, scope=scope, limit=depth),
            )()

        branches["vector"] = nearest
    answers, failed = _run(branches, limit)
    return HistorySearchResult(
        hits=_fuse(answers, mode=mode, k=k),
        degraded=[f"history.{name}" for name in failed],
        latency_ms=dict(latency),
    )


def _embed(query: str) -> list[float]:
    return [float(v) for v in embed_query(query)]


def _fuse(answers: dict[str, list[HistoryMatch]], *, mode: str, k: int) -> list[HistoryHit]:
    weights = {"lexical": settings.HISTORY_LEXICAL_WEIGHT, "vector": settings.HISTORY_VECTOR_WEIGHT}
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    fields: dict[str, dict[str, Any]] = {}
    cosines: dict[str, float] = {}
    for name, matches in answers.items():
        for rank, match in enumerate(matches, start=1):
            if mode == "hybrid":
                gain = weights[name] / (settings.HISTORY_RRF_K + rank)
            else:
                gain = max(match.score, 0.0)
            scores[match.entry_id] = scores.get(match.entry_id, 0.0) + gain
            ranks.setdefault(match.entry_id, {})[name] = rank
            fields.setdefault(match.entry_id, match.fields)
            if name == "vector":
                cosines[match.entry_id] = float(match.score)
    ranked = sorted(scores, key=lambda entry_id: (-scores[entry_id], entry_id))[:k]
    best = scores[ranked[0]] if ranked and scores[ranked[0]] > 0 else 1.0
    hits = []
    for entry_id in ranked:
        stored = fields[entry_id]
        hits.append(
            HistoryHit(
                entry_id=entry_id,
                event_id=str(stored.get("event_id", "")),
                session_id=str(stored.get("session_id", "")),
                role=str(stored.get("role", "")),
                occurred_at=_when(stored.get("occurred_at")),
                text=str(stored.get("text", "")),
                context=str(stored.get("context", "")),
                score=round(min(scores[entry_id] / best, 1.0), 6),
                lexical_rank=ranks[entry_id].get("lexical"),
                vector_rank=ranks[entry_id].get("vector"),
                cosine=cosines.get(entry_id),
            )
        )
    return hits


def _timed(latency: dict[str, float], name: str, call: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        started = time.perf_counter()
        try:
            return call()
        finally:
            latency[name] = round((time.perf_counter() - started) * 1000, 2)

    return run


def _run(
    branches: dict[str, Callable[[], list[HistoryMatch]]], timeout: float
) -> tuple[dict[str, list[HistoryMatch]], list[str]]:
    futures = {name: _branches.submit(in_request_context(run)) for name, run in branches.items()}
    deadline = time.monotonic() + timeout
    answers: dict[str, list[HistoryMatch]] = {}
    failed: list[str] = []
    for name, future in futures.items():
        try:
            answers[name] = future.result(timeout=max(deadline - time.monotonic(), 0.001))
        except FutureTimeout:
            logger.warning("history %s search took longer than %.2fs; dropped", name, timeout)
            failed.append(name)
        except StoreUnavailable as exc:
            logger.warning("history %s search failed: %s", name, exc)
            failed.append(name)
    return answers, failed


def history_entries_for(*, tenant: Tenant, user_id: str) -> list[dict[str, Any]]:
    """Every stored history entry of one end user (for export), oldest event first."""
    entries = list(history_search_index().entries_of(tenant_id=str(tenant.pk), user_id=user_id))
    entries.sort(key=lambda e: (str(e.get("occurred_at", "")), e.get("entry_id", "")))
    return [
        {
            "entry_id": e.get("entry_id"),
            "event_id": e.get("event_id"),
            "session_id": e.get("session_id"),
            "role": e.get("role"),
            "occurred_at": e.get("occurred_at"),
            "text": e.get("text"),
        }
        for e in entries
    ]
