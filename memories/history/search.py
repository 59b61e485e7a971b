"""Elasticsearch side of episodic history: one index of history entries behind an alias.

Built on `memoryproject.elasticsearch.ElasticsearchIndex`; only this module imports
`elasticsearch` in the history package. A separate index from the
cards: history entries are what was said, not reviewed knowledge. The mapping is an
`elasticsearch.dsl` Document and every query a `Search`/`Q` object. Calls stay within the
portable core of the API (bulk, bool/match/term/terms/range, delete_by_query, search_after).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, Protocol

from django.conf import settings
from elasticsearch import Elasticsearch
from elasticsearch.dsl import Date, Document, Index, Keyword, Long, MetaField, Q, Text
from elasticsearch.dsl.query import Query
from elasticsearch.dsl.response import Hit

from memories.history.documents import STORED_FIELDS as STORED_FIELDS_OF_ENTRY
from memories.history.documents import HistoryDocument, HistoryMatch, HistoryScope
from memoryproject.elasticsearch import ElasticsearchIndex, elasticsearch_client, owner_filters

INDEX_VERSION = 1
STORED_FIELDS = list(STORED_FIELDS_OF_ENTRY)


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


class HistorySearchIndex(Protocol):
    def ensure(self) -> list[str]: ...
    def ping(self) -> None: ...
    def drop(self) -> None: ...
    def upsert(self, *, documents: Sequence[HistoryDocument]) -> None: ...
    def remove_ids(self, *, ids: Sequence[str]) -> int: ...
    def remove_user(self, *, tenant_id: str, user_id: str) -> int: ...
    def remove_tenant(
        self, *, tenant_id: str, keep_sessions: Sequence[int] | None = None
    ) -> int: ...
    def search(
        self,
        *,
        text: str,
        scope: HistoryScope,
        limit: int,
        context_weight: float = 0.6,
        timeout: float | None = None,
    ) -> list[HistoryMatch]: ...
    def ids_where(
        self,
        *,
        tenant_id: str,
        ids: Sequence[str] | None = None,
        user_id: str = "",
        limit: int = 10000,
    ) -> list[str]: ...
    def count_where(self, *, tenant_id: str, user_id: str = "") -> int: ...
    def entries_of(self, *, tenant_id: str, user_id: str) -> Iterator[dict[str, Any]]: ...
    def session_ids(self, *, tenant_id: str, session_pk: int) -> list[str]: ...
    def stored(self, *, tenant_id: str | None = None) -> Iterator[tuple[str, int]]: ...
    def texts(self, *, tenant_id: str) -> Iterator[tuple[str, int, str, str]]: ...


class ElasticsearchHistoryIndex(ElasticsearchIndex):
    """History entries in Elasticsearch: alias `<prefix>-history`, index `<prefix>-history-vN`."""

    label = "Elasticsearch (history)"
    id_field = "entry_id"

    def __init__(self, client: Elasticsearch, prefix: str) -> None:
        super().__init__(client, f"{prefix}-history")
        self.index = f"{prefix}-history-v{INDEX_VERSION}"

    def _ensure(self) -> list[str]:
        """Create the versioned index and its alias where missing."""
        done = []
        if not self._client.indices.exists(index=self.index):
            history_index_definition(self.index).create(using=self._client)
            done.append(f"index {self.index}")
        if not self._client.indices.exists_alias(name=self.alias):
            self._client.indices.put_alias(index=self.index, name=self.alias)
            done.append(f"alias {self.alias} -> {self.index}")
        return done

    def _versioned_indexes(self) -> list[str]:
        # Deleting the index removes its alias with it.
        return [self.index] if self._client.indices.exists(index=self.index) else []

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
        self._bulk(actions, what="history ")

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
            self._alias_search(timeout)
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
        response = self._call(search.execute)
        return [
            HistoryMatch(hit.meta.id, float(hit.meta.score or 0.0), hit.to_dict())
            for hit in response
        ]

    def _ids(self, query: Query, limit: int) -> list[str]:
        search = (
            self._alias_search()
            .query(query)
            .extra(size=limit)
            .source(False)
            .sort({"entry_id": {"order": "asc"}})
        )
        response = self._call(search.execute)
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
        filters = owner_filters(tenant_id, user_id) if user_id else [Q("term", tenant_id=tenant_id)]
        return self._call(self._alias_search().query(Q("bool", filter=filters)).count)

    def entries_of(self, *, tenant_id: str, user_id: str) -> Iterator[dict[str, Any]]:
        """Every stored entry of one end user (its fields), in entry_id order."""
        for hit in self._scan(Q("bool", filter=owner_filters(tenant_id, user_id)), STORED_FIELDS):
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
            self._alias_search()
            .query(query)
            .sort({"entry_id": {"order": "asc"}})
            .source(includes=fields)
            .extra(size=1000)
        )
        while True:
            response = self._call(page.execute)
            yield from response
            if len(response.hits) < 1000:
                return
            page = page.search_after()


def _filters(scope: HistoryScope) -> list[Query]:
    filters = owner_filters(scope.tenant_id, scope.user_id)
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
def history_search_index() -> HistorySearchIndex:
    """The lexical engine `HISTORY_LEXICAL_ENGINE` names: Elasticsearch, or PostgreSQL's own
    full-text index (`pg_search.py`)."""
    if settings.HISTORY_LEXICAL_ENGINE == "postgres":
        from memories.history.pg_search import PostgresHistoryIndex

        return PostgresHistoryIndex()
    client = elasticsearch_client()
    return ElasticsearchHistoryIndex(client, settings.ELASTICSEARCH_INDEX_PREFIX)
