"""Elasticsearch side of episodic history: one index of history entries behind an alias.

Only this module imports `elasticsearch` in the history package. A separate index from the
cards: history entries are what was said, not reviewed knowledge. The mapping is an
`elasticsearch.dsl` Document and every query a `Search`/`Q` object. Calls stay within the
portable core of the API (bulk, bool/match/term/terms/range, delete_by_query, search_after).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any

from django.conf import settings
from elasticsearch import ApiError, Elasticsearch, TransportError, helpers
from elasticsearch.dsl import Date, Document, Index, Keyword, Long, MetaField, Q, Search, Text
from elasticsearch.dsl.query import Query
from elasticsearch.dsl.response import Hit

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


class HistoryMapping(Document):
    """The fields of a history entry document, as the history index is created with them."""

    entry_id = Keyword()
    tenant_id = Keyword()
    user_id = Keyword()
    session_id = Keyword()
    session_pk = Long()
    seq = Long()
    event_id = Keyword()
    role = Keyword()
    occurred_at = Date()
    # Shown to the caller, not searched: the BM25 terms below are.
    text = Text(index=False)
    context = Text(index=False)
    # Normalised by the service (segmented Chinese, stemmed English), as for the cards.
    bm25_text = Text(analyzer="whitespace")
    bm25_context = Text(analyzer="whitespace")

    class Meta:
        dynamic = MetaField("strict")


def history_index_definition(name: str) -> Index:
    """The settings and mapping of the versioned history index."""
    index = Index(name)
    index.settings(number_of_shards=1, number_of_replicas=0)
    index.document(HistoryMapping)
    return index


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
                history_index_definition(self.index).create(using=self._client)
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

    def _entries(self, timeout: float | None = None) -> Search:
        """A search of the alias, sent through the timed client (with its own timeout)."""
        return Search(using=self._with_timeout(timeout), index=self.alias)

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

    def _delete_where(self, query: Query) -> int:
        search = self._entries().query(query).params(refresh=True, conflicts="proceed")
        try:
            response = search.delete()
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc
        return int(response.to_dict().get("deleted", 0))

    def remove_ids(self, *, ids: Sequence[str]) -> int:
        """Delete entries by id; returns how many were deleted."""
        return self._delete_where(Q("terms", entry_id=list(ids))) if ids else 0

    def remove_user(self, *, tenant_id: str, user_id: str) -> int:
        """Delete every entry of one end user; returns how many were deleted."""
        return self._delete_where(Q("bool", filter=_owner(tenant_id, user_id)))

    def remove_tenant(self, *, tenant_id: str, keep_sessions: Sequence[int] | None = None) -> int:
        """Delete the tenant's entries (all, or those of sessions not in `keep_sessions`)."""
        kept = [] if keep_sessions is None else [Q("terms", session_pk=list(keep_sessions))]
        return self._delete_where(Q("bool", filter=[Q("term", tenant_id=tenant_id)], must_not=kept))

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
        if not text.strip() or scope.empty:
            return []
        should = [Q("match", bm25_text={"query": text})]
        if context_weight > 0:
            should.append(Q("match", bm25_context={"query": text, "boost": float(context_weight)}))
        search = (
            self._entries(timeout)
            .query(
                Q(
                    "bool",
                    should=should,
                    minimum_should_match=1,
                    filter=_filters(scope),
                    must_not=_exclusions(scope),
                )
            )
            .extra(size=limit)
            .source(includes=STORED_FIELDS)
        )
        try:
            response = search.execute()
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc
        return [
            HistoryMatch(hit.meta.id, float(hit.meta.score or 0.0), hit.to_dict())
            for hit in response
        ]

    def _ids(self, query: Query, limit: int) -> list[str]:
        search = (
            self._entries()
            .query(query)
            .extra(size=limit)
            .source(False)
            .sort({"entry_id": {"order": "asc"}})
        )
        try:
            response = search.execute()
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc
        return [hit.meta.id for hit in response]

    def ids_where(
        self,
        *,
        tenant_id: str,
        ids: Sequence[str] | None = None,
        user_id: str = "",
        limit: int = 10000,
    ) -> list[str]:
        """Ids of the tenant's stored entries among `ids`, or of one user.

        `ids=None` leaves ids unfiltered; an empty list matches nothing.
        """
        if ids is not None and not ids:
            return []
        filters = [Q("term", tenant_id=tenant_id)]
        if ids is not None:
            filters.append(Q("terms", entry_id=list(ids)))
        if user_id:
            filters.append(Q("term", user_id=user_id))
        return self._ids(Q("bool", filter=filters), limit)

    def count_where(self, *, tenant_id: str, user_id: str = "") -> int:
        filters = _owner(tenant_id, user_id) if user_id else [Q("term", tenant_id=tenant_id)]
        try:
            return self._entries().query(Q("bool", filter=filters)).count()
        except (ApiError, TransportError) as exc:
            raise _unavailable(exc) from exc

    def entries_of(self, *, tenant_id: str, user_id: str) -> Iterator[dict[str, Any]]:
        """Every stored entry of one end user (its fields), in entry_id order."""
        for hit in self._scan(Q("bool", filter=_owner(tenant_id, user_id)), STORED_FIELDS):
            yield hit.to_dict()

    def session_ids(self, *, tenant_id: str, session_pk: int) -> list[str]:
        """Ids of every stored entry of one session."""
        query = Q("bool", filter=[Q("term", tenant_id=tenant_id), Q("term", session_pk=session_pk)])
        return [hit.meta.id for hit in self._scan(query, ["session_pk"])]

    def stored(self, *, tenant_id: str | None = None) -> Iterator[tuple[str, int]]:
        """(entry_id, session_pk) of every stored entry (of one tenant), in entry_id order."""
        query = Q("term", tenant_id=tenant_id) if tenant_id is not None else Q("match_all")
        for hit in self._scan(query, ["session_pk"]):
            yield hit.meta.id, int(hit.session_pk)

    def texts(self, *, tenant_id: str) -> Iterator[tuple[str, int, str, str]]:
        """(entry_id, session_pk, text, context) of every stored entry of one tenant, in
        entry_id order."""
        for hit in self._scan(Q("term", tenant_id=tenant_id), ["session_pk", "text", "context"]):
            source = hit.to_dict()
            yield (
                hit.meta.id,
                int(source["session_pk"]),
                str(source.get("text") or ""),
                str(source.get("context") or ""),
            )

    def _scan(self, query: Query, fields: list[str]) -> Iterator[Hit]:
        page = (
            self._entries()
            .query(query)
            .sort({"entry_id": {"order": "asc"}})
            .source(includes=fields)
            .extra(size=1000)
        )
        while True:
            try:
                response = page.execute()
            except (ApiError, TransportError) as exc:
                raise _unavailable(exc) from exc
            yield from response
            if len(response.hits) < 1000:
                return
            page = page.search_after()


def _owner(tenant_id: str, user_id: str) -> list[Query]:
    return [Q("term", tenant_id=tenant_id), Q("term", user_id=user_id)]


def _filters(scope: HistoryScope) -> list[Query]:
    filters = _owner(scope.tenant_id, scope.user_id)
    window: dict[str, str] = {}
    if scope.since is not None:
        window["gte"] = scope.since.isoformat()
    if scope.until is not None:
        window["lte"] = scope.until.isoformat()
    if window:
        filters.append(Q("range", occurred_at=window))
    if scope.only_sessions:
        filters.append(Q("terms", session_id=list(scope.only_sessions)))
    return filters


def _exclusions(scope: HistoryScope) -> list[Query]:
    if not scope.exclude_session_id:
        return []
    return [Q("term", session_id=scope.exclude_session_id)]


@cache
def history_search_index() -> ElasticsearchHistoryIndex:
    client = elasticsearch_client()
    return ElasticsearchHistoryIndex(client, settings.ELASTICSEARCH_INDEX_PREFIX)
