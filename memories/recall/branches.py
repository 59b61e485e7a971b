"""Long-term memory and history for one recall: their branches run concurrently, fused here.

Each source has a lexical branch (Elasticsearch BM25) and a vector branch (Milvus); a query with
a time window adds a pair of history branches limited to that window. The query is embedded once and
the vector shared by every vector branch. Lexical branches start first: they are cheap, and their
hits tell recall whether the user's memory holds the query at all (`relevance.py`); vector
branches start as soon as a layer is routed. Fusion is weighted Reciprocal Rank Fusion,
`Σ w_branch / (k + rank)`, with the weights and `k` of the tenant's recall policy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings

from memories.history.selectors import HistoryHit, HistorySearchResult, history_search
from memories.ltm.embedder import query_vector
from memories.ltm.selectors import LtmHit, LtmSearchResult, card_documents, ltm_search
from memories.recall.timefilter import TimeWindow
from memoryproject.errors import StoreUnavailable
from memoryproject.store_timing import in_request_context
from profiles.models import Tenant

# One recall runs at most seven of these at once (embedding, two long-term, four history
# branches). Each thread may hold a database connection of its own (history reads its tenant
# switch), so the pool stays small.
_pool = ThreadPoolExecutor(max_workers=12, thread_name_prefix="recall-search")


@dataclass(frozen=True)
class Fusion:
    """Weighted RRF: a branch's hit at rank r adds weight / (rrf_k + r)."""

    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    rrf_k: int = 60
    window_weight: float = 1.0  # the time-window branches of history, each

    def weight(self, branch: str) -> float:
        base = self.lexical_weight if branch.endswith("lexical") else self.vector_weight
        return base * (self.window_weight if branch.startswith("window") else 1.0)


@dataclass
class FusedHit:
    """One memory with its fused score and its rank in each branch that found it."""

    key: str
    score: float
    ranks: dict[str, int]
    hit: Any  # LtmHit or HistoryHit
    similarity: float = 0.0  # the vector branch's own score (0 when it did not find it)
    cosine: float = 0.0  # the query's cosine to it (0 when the vector branch did not find it)


@dataclass
class Found:
    ltm: list[FusedHit] = field(default_factory=list)
    history: list[FusedHit] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # "ltm.vector", "history.lexical", ...
    timings_ms: dict[str, float] = field(default_factory=dict)


def fuse(branches: dict[str, list[tuple[str, Any]]], fusion: Fusion) -> list[FusedHit]:
    """Weighted RRF over each branch's ranked (key, hit) pairs, best first."""
    fused: dict[str, FusedHit] = {}
    for name, ranked in branches.items():
        weight = fusion.weight(name)
        for rank, (key, hit) in enumerate(ranked, start=1):
            entry = fused.setdefault(key, FusedHit(key=key, score=0.0, ranks={}, hit=hit))
            entry.score += weight / (fusion.rrf_k + rank)
            entry.ranks[name] = rank
            if name.endswith("vector"):
                own = getattr(hit, "vector_score", None)
                entry.similarity = max(
                    entry.similarity, float(own if own is not None else hit.score)
                )
                cosine = getattr(hit, "cosine", None)
                entry.cosine = max(entry.cosine, float(cosine if cosine is not None else hit.score))
    return sorted(fused.values(), key=lambda h: (-h.score, h.key))


class MemorySearch:
    """The searches of one recall, started as early as each is known to be needed."""

    def __init__(
        self,
        *,
        tenant: Tenant,
        user_id: str,
        session_id: str,
        query: str,
        project: str,
        depth: int,
        fusion: Fusion,
        ltm: bool,
        history: bool,
        related_words: Sequence[str] = (),
    ) -> None:
        self._tenant, self._user_id, self._session_id = tenant, user_id, session_id
        self._query, self._project, self._depth = query, project, depth
        # The lexical branches look for the words related to the query's too (relevance.py).
        self._lexical_query = " ".join([query, *related_words])
        self._fusion, self._ltm_on, self._history_on = fusion, ltm, history
        self._window: TimeWindow | None = None
        self._started = time.perf_counter()
        self._futures: dict[str, Future[Any]] = {}
        self._timings: dict[str, float] = {}
        self._embedding: Future[list[float]] | None = None
        # The cards of long-term hits, read from the ledger once for every branch (None: the
        # ledger holds no active card by that id any more).
        self._cards: dict[str, dict[str, Any] | None] = {}
        self._cards_degraded = False

    # --- starting ------------------------------------------------------------------------
    def start_lexical(self) -> None:
        if self._ltm_on:
            self._submit("ltm.lexical", lambda: self._ltm("lexical", None))
        if self._history_on:
            self._submit("history.lexical", lambda: self._history_branch("lexical", None, None))

    def start_vector(self, *, ltm: bool, history: bool) -> None:
        """The vector branches of the sources asked (the query embedded once for all)."""
        if not ((ltm and self._ltm_on) or (history and self._history_on)):
            return
        embedding = self._embed_once()
        if ltm and self._ltm_on:
            self._submit("ltm.vector", lambda: self._ltm("vector", embedding.result()))
        if history and self._history_on:
            self._submit(
                "history.vector", lambda: self._history_branch("vector", embedding.result(), None)
            )

    def start_window(self, window: TimeWindow) -> None:
        """History limited to the query's time window, both branches, fused with the rest."""
        if not self._history_on:
            return
        self._window = window
        embedding = self._embed_once()
        self._submit(
            "history.window_lexical", lambda: self._history_branch("lexical", None, window)
        )
        self._submit(
            "history.window_vector",
            lambda: self._history_branch("vector", embedding.result(), window),
        )

    # --- reading -------------------------------------------------------------------------
    def lexical_results(
        self,
    ) -> tuple[LtmSearchResult | None, HistorySearchResult | None, list[str]]:
        """The lexical answers of long-term memory and history (None where not asked or
        failed) and the failed branches; waits for the lexical branches only."""
        answers, failed = self._wait(
            [n for n in ("ltm.lexical", "history.lexical") if n in self._futures]
        )
        history = answers.get("history.lexical")
        if history is not None:
            failed.extend(d for d in history.degraded if d not in failed)
        ltm = answers.get("ltm.lexical")
        return (self._carded(ltm) if ltm is not None else None), history, failed

    def nearest(self) -> list[tuple[str, float, str]]:
        """The vector branches' hits of both sources as (key, cosine, text); waits for them (a
        source whose branch was not started or failed has none)."""
        names: list[str] = [n for n in ("ltm.vector", "history.vector") if n in self._futures]
        answers, _ = self._wait(names)
        found: list[tuple[str, float, str]] = []
        for name, result in answers.items():
            if name.startswith("ltm."):
                found.extend(
                    (h.memory_id, float(h.vector_score or h.score), card_text(h))
                    for h in self._carded(result).hits
                )
            else:
                found.extend(
                    (h.entry_id, float(h.cosine), f"{h.text} {h.context}")
                    for h in result.hits
                    if h.cosine is not None
                )
        return found

    def query_vector(self) -> list[float] | None:
        """The query's embedding once computed; None when no vector branch started or the
        embedding failed or was too slow."""
        if self._embedding is None:
            return None
        remaining = settings.RECALL_LTM_TIMEOUT_SECONDS - (time.perf_counter() - self._started)
        try:
            return self._embedding.result(timeout=max(0.0, remaining))
        except (FutureTimeout, StoreUnavailable):
            return None

    def collect(self, *, ltm: bool, history: bool) -> Found:
        """Every started branch of the sources wanted, fused per source."""
        wanted = [
            name
            for name in self._futures
            if (ltm and name.startswith("ltm.")) or (history and name.startswith("history."))
        ]
        answers, failed = self._wait(wanted)
        found = Found(failed=failed, timings_ms=dict(self._timings))
        ltm_branches: dict[str, list[tuple[str, Any]]] = {}
        history_branches: dict[str, list[tuple[str, Any]]] = {}
        for name, result in answers.items():
            source, branch = name.split(".", 1)
            if source == "ltm":
                result = self._carded(result)
                ltm_branches[branch] = [(h.memory_id, h) for h in result.hits]
                for store, elapsed in result.timings_ms.items():
                    found.timings_ms[f"ltm.{store}"] = elapsed
                found.failed.extend(f"ltm.{b}" for b in result.failed_branches if b != branch)
            else:
                history_branches[branch] = [(h.entry_id, h) for h in result.hits]
                for store, elapsed in result.latency_ms.items():
                    found.timings_ms.setdefault(store, elapsed)
                found.failed.extend(result.degraded)
        if self._cards_degraded:
            found.failed.append("ltm.documents")
        found.failed = list(dict.fromkeys(found.failed))
        if "ltm.documents" in self._timings:
            found.timings_ms["ltm.documents"] = self._timings["ltm.documents"]
        for source in ("ltm", "history"):
            spent = [ms for name, ms in self._timings.items() if name.startswith(f"{source}.")]
            if spent:
                found.timings_ms[source] = max(spent)
        found.ltm = [_with_ranks(f) for f in fuse(ltm_branches, self._fusion)]
        found.history = fuse(history_branches, self._fusion)
        return found

    # --- the branches --------------------------------------------------------------------
    def _submit(self, name: str, call: Callable[[], Any]) -> None:
        if name in self._futures:
            return

        def run() -> Any:
            began = time.perf_counter()
            try:
                return call()
            finally:
                self._timings[name] = round((time.perf_counter() - began) * 1000, 2)

        self._futures[name] = _pool.submit(in_request_context(run))

    def _embed_once(self) -> Future[list[float]]:
        if self._embedding is None:
            self._embedding = _pool.submit(in_request_context(self._embed))
        return self._embedding

    def _embed(self) -> list[float]:
        began = time.perf_counter()
        try:
            return [float(x) for x in query_vector(self._query)]
        finally:
            self._timings["embed"] = round((time.perf_counter() - began) * 1000, 2)

    def _ltm(self, mode: str, vector: list[float] | None) -> LtmSearchResult:
        return ltm_search(
            tenant=self._tenant,
            query=self._lexical_query if mode == "lexical" else self._query,
            mode=mode,
            k=self._depth,
            top_n=self._depth,
            user_id=self._user_id,
            project=self._project or None,
            query_vector=vector,
            with_cards=False,
        )

    def _carded(self, result: LtmSearchResult) -> LtmSearchResult:
        """The result's best `depth` hits that the ledger still holds active, with their
        cards. Read in the request's own thread, from PostgreSQL, once per card."""
        missing = list(
            dict.fromkeys(h.memory_id for h in result.hits if h.memory_id not in self._cards)
        )
        if missing:
            began = time.perf_counter()
            cards, degraded = card_documents(tenant=self._tenant, ids=missing)
            self._cards.update({memory_id: cards.get(memory_id) for memory_id in missing})
            self._cards_degraded = self._cards_degraded or bool(degraded)
            spent = (time.perf_counter() - began) * 1000
            self._timings["ltm.documents"] = round(
                self._timings.get("ltm.documents", 0.0) + spent, 2
            )
        hits = [
            replace(hit, card=card)
            for hit in result.hits
            if (card := self._cards.get(hit.memory_id)) is not None
        ]
        return replace(result, hits=hits[: self._depth])

    def _history_branch(
        self, mode: str, vector: list[float] | None, window: TimeWindow | None
    ) -> HistorySearchResult:
        return history_search(
            tenant=self._tenant,
            user_id=self._user_id,
            query=self._lexical_query if mode == "lexical" else self._query,
            k=self._depth,
            since=window.start if window else None,
            until=window.end if window else None,
            exclude_session_id=self._session_id,
            mode=mode,
            query_vector=vector,
            timeout=settings.LTM_BRANCH_TIMEOUT_SECONDS,
            enabled=self._history_on,  # the switch of the cached recall policy
        )

    def _wait(self, names: list[str]) -> tuple[dict[str, Any], list[str]]:
        answers: dict[str, Any] = {}
        failed: list[str] = []
        for name in names:
            remaining = settings.RECALL_LTM_TIMEOUT_SECONDS - (time.perf_counter() - self._started)
            try:
                answers[name] = self._futures[name].result(timeout=max(0.0, remaining))
            except (FutureTimeout, StoreUnavailable):
                failed.append(name.replace("window_", ""))
        return answers, list(dict.fromkeys(failed))


def card_text(hit: LtmHit) -> str:
    """The words of a card its coverage is judged on."""
    card = hit.card
    return (
        " ".join(str(card.get(name) or "") for name in ("title", "summary", "content"))
        + " "
        + " ".join(str(e) for e in card.get("entities", []) or [])
    )


def _with_ranks(fused: FusedHit) -> FusedHit:
    """A long-term hit carrying the fused score and both branch ranks, as `ltm_candidate` reads."""
    hit: LtmHit = fused.hit
    fused.hit = LtmHit(
        memory_id=hit.memory_id,
        score=fused.score,
        lexical_rank=fused.ranks.get("lexical"),
        vector_rank=fused.ranks.get("vector"),
        vector_score=fused.similarity or None,
        card=hit.card,
    )
    return fused


__all__ = ["Found", "FusedHit", "Fusion", "HistoryHit", "MemorySearch", "fuse"]
