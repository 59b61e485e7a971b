"""Elasticsearch side of episodic history: one index of history entries behind an alias.

Only this module imports `elasticsearch` in the history package. A separate index from the
cards: history entries are what was said, not reviewed knowledge. Calls stay within the
portable core of the API (bulk, bool/match/term/terms/range, delete_by_query, search_after).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any

from django.conf import settings
from elasticsearch import ApiError, Elasticsearch, TransportError, helpers

from memories.history.documents import HistoryDocument, HistoryMatch, HistoryScope
from memoryproject.elasticsearch import elasticsearch_client
from memoryproject.errors import StoreUnavailable

INDEX_VERSION = 1
STORED_FIELDS = [
    "entry_id",
    "tenant_id",
    "user_id",
    "session_id",
    "session_pk",
    "seq",
    "event_id",
    "role",
    "occurred_at",
    "text",
    "context",
]

HISTORY_MAPPING: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "entry_id": {"type": "keyword"},
        "tenant_id": {"type": "keyword"},
        "user_id": {"type": "keyword"},
        "session_id": {"type": "keyword"},
        "session_pk": {"type": "long"},
        "seq": {"type": "long"},
        "event_id": {"type": "keyword"},
        "role": {"type": "keyword"},
        "occurred_at": {"type": "date"},
        # Shown to the caller, not searched: the BM25 terms below are.
        "text": {"type": "text", "index": False},
        "context": {"type": "text", "index": False},
        # Normalised by the service (segmented Chinese, stemmed English), as for the cards.
        "bm25_text": {"type": "text", "analyzer": "whitespace"},
        "bm25_context": {"type": "text", "analyzer": "whitespace"},
    },
}


def _unavailable(exc: Exception) -> StoreUnavailable:
    return StoreUnavailable(f"Elasticsearch (history): {exc}")


class ElasticsearchHistoryIndex:
    """History entries in Elasticsearch: alias `<prefix>-history`, index `<prefix>-history-vN`."""

    def __init__(self, client: Elasticsearch, prefix: str) -> None:
        self._client = client
        self.alias = f"{prefix}-history"
        self.index = f"{prefix}-history-v{INDEX_VERSION}"

    def ensure(self) -> list[str]:
        """Create the versioned index and its alias where missing."""
        done = []
        try:
            if not self._client.indices.exists(index=self.index):
                self._client.indices.create(
                    index=self.index,
                    settings={"number_of_shards": 1, "number_of_replicas": 0},
                    mappings=HISTORY_MAPPING,
                )
                done.append(f"index {self.index}")
            if not self._client.indices.exists_alias(name=self.alias):
                self._client.indices.put_alias(index=self.index, name=self.alias)
                done.append(f"alias {self.alias} -> {self.index}")
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc
        return done

    def ping(self) -> None:
        try:
            self._client.info()
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc

    def drop(self) -> None:
        """Remove the index and its alias (test clean-up and full rebuilds)."""
        try:
            if self._client.indices.exists(index=self.index):
                self._client.indices.delete(index=self.index)
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc

    def _with_timeout(self, timeout: float | None) -> Elasticsearch:
        return self._client.options(request_timeout=timeout) if timeout else self._client

    # --- writes ------------------------------------------------------------------------------
    def upsert(self, *, documents: Sequence[HistoryDocument]) -> None:
        """Index entries by entry_id (a replay overwrites the same entry with the same text)."""
        actions = [
            {
                "_op_type": "index",
                "_index": self.alias,
                "_id": doc.entry_id,
                "_source": {
                    **doc.fields(),
                    "occurred_at": doc.occurred_at.isoformat(),
                    "bm25_text": doc.bm25_text,
                    "bm25_context": doc.bm25_context,
                },
            }
            for doc in documents
        ]
        if not actions:
            return
        try:
            _, errors = helpers.bulk(
                self._client, actions, refresh=True, raise_on_error=False, stats_only=False
            )
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc
        failures: list[Any] = list(errors) if isinstance(errors, list) else []
        if failures:
            raise StoreUnavailable(
                f"Elasticsearch refused {len(failures)} history writes: {failures[0]}"
            )

    def _delete_where(self, query: dict[str, Any]) -> int:
        try:
            response = self._client.delete_by_query(
                index=self.alias, query=query, refresh=True, conflicts="proceed"
            )
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc
        return int(response.get("deleted", 0))

    def remove_ids(self, *, ids: Sequence[str]) -> int:
        """Delete entries by id; returns how many were deleted."""
        return self._delete_where({"terms": {"entry_id": list(ids)}}) if ids else 0

    def remove_user(self, *, tenant_id: str, user_id: str) -> int:
        """Delete every entry of one end user; returns how many were deleted."""
        return self._delete_where(
            {
                "bool": {
                    "filter": [{"term": {"tenant_id": tenant_id}}, {"term": {"user_id": user_id}}]
                }
            }
        )

    def remove_tenant(self, *, tenant_id: str, keep_sessions: Sequence[int] | None = None) -> int:
        """Delete the tenant's entries (all, or those of sessions not in `keep_sessions`)."""
        query: dict[str, Any] = {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}]}}
        if keep_sessions is not None:
            query["bool"]["must_not"] = [{"terms": {"session_pk": list(keep_sessions)}}]
        return self._delete_where(query)

    # --- reads ---------------------------------------------------------------------------------
    def search(
        self,
        *,
        text: str,
        scope: HistoryScope,
        limit: int,
        context_weight: float = 0.6,
        timeout: float | None = None,
    ) -> list[HistoryMatch]:
        """BM25 over the entry's own terms, plus its context's terms at a lower weight."""
        if not text.strip():
            return []
        should: list[dict[str, Any]] = [{"match": {"bm25_text": {"query": text}}}]
        if context_weight > 0:
            should.append(
                {"match": {"bm25_context": {"query": text, "boost": float(context_weight)}}}
            )
        try:
            response = self._with_timeout(timeout).search(
                index=self.alias,
                query={
                    "bool": {
                        "should": should,
                        "minimum_should_match": 1,
                        "filter": _filters(scope),
                        "must_not": _exclusions(scope),
                    }
                },
                size=limit,
                source_includes=STORED_FIELDS,
            )
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc
        return [
            HistoryMatch(h["_id"], float(h["_score"] or 0.0), h["_source"])
            for h in response["hits"]["hits"]
        ]

    def _ids(self, query: dict[str, Any], limit: int) -> list[str]:
        try:
            response = self._client.search(
                index=self.alias, query=query, size=limit, source=False, sort=[{"entry_id": "asc"}]
            )
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc
        return [hit["_id"] for hit in response["hits"]["hits"]]

    def ids_where(
        self, *, tenant_id: str, ids: Sequence[str] = (), user_id: str = "", limit: int = 10000
    ) -> list[str]:
        """Ids of the tenant's stored entries among `ids`, or of one user."""
        filters: list[dict[str, Any]] = [{"term": {"tenant_id": tenant_id}}]
        if ids:
            filters.append({"terms": {"entry_id": list(ids)}})
        if user_id:
            filters.append({"term": {"user_id": user_id}})
        return self._ids({"bool": {"filter": filters}}, limit)

    def count_where(self, *, tenant_id: str, user_id: str = "") -> int:
        filters: list[dict[str, Any]] = [{"term": {"tenant_id": tenant_id}}]
        if user_id:
            filters.append({"term": {"user_id": user_id}})
        try:
            response = self._client.count(index=self.alias, query={"bool": {"filter": filters}})
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc
        return int(response["count"])

    def entries_of(self, *, tenant_id: str, user_id: str) -> Iterator[dict[str, Any]]:
        """Every stored entry of one end user (its fields), in entry_id order."""
        query = {
            "bool": {"filter": [{"term": {"tenant_id": tenant_id}}, {"term": {"user_id": user_id}}]}
        }
        for hit in self._scan(query, STORED_FIELDS):
            yield hit["_source"]

    def stored(self, *, tenant_id: str | None = None) -> Iterator[tuple[str, int]]:
        """(entry_id, session_pk) of every stored entry (of one tenant), in entry_id order."""
        query: dict[str, Any] = (
            {"term": {"tenant_id": tenant_id}} if tenant_id is not None else {"match_all": {}}
        )
        for hit in self._scan(query, ["session_pk"]):
            yield hit["_id"], int(hit["_source"]["session_pk"])

    def _scan(self, query: dict[str, Any], fields: list[str]) -> Iterator[dict[str, Any]]:
        after: list[Any] | None = None
        while True:
            try:
                response = self._client.search(
                    index=self.alias,
                    query=query,
                    sort=[{"entry_id": "asc"}],
                    source_includes=fields,
                    size=1000,
                    search_after=after,
                )
            except (ApiError, TransportError) as exc:
                raise _unavailable(exc) from exc
            hits = response["hits"]["hits"]
            yield from hits
            if len(hits) < 1000:
                return
            after = hits[-1]["sort"]


def _filters(scope: HistoryScope) -> list[dict[str, Any]]:
    filters: list[dict[str, Any]] = [
        {"term": {"tenant_id": scope.tenant_id}},
        {"term": {"user_id": scope.user_id}},
    ]
    window: dict[str, str] = {}
    if scope.since is not None:
        window["gte"] = scope.since.isoformat()
    if scope.until is not None:
        window["lte"] = scope.until.isoformat()
    if window:
        filters.append({"range": {"occurred_at": window}})
    return filters


def _exclusions(scope: HistoryScope) -> list[dict[str, Any]]:
    if not scope.exclude_session_id:
        return []
    return [{"term": {"session_id": scope.exclude_session_id}}]


@cache
def history_search_index() -> ElasticsearchHistoryIndex:
    client = elasticsearch_client()
    return ElasticsearchHistoryIndex(client, settings.ELASTICSEARCH_INDEX_PREFIX)
