"""Elasticsearch side of long-term memory: one index of memory cards behind an alias.

Built on `memoryproject.elasticsearch.ElasticsearchIndex`; only this module imports
`elasticsearch` in the long-term package. The mapping is an `elasticsearch.dsl` Document and
every query a `Search`/`Q` object. Calls stay within the portable core of the API (templates,
aliases, bulk, bool/match/term queries) so the same code runs on Elasticsearch 8/9 and on the
local stand-in.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, Protocol

from django.conf import settings
from elasticsearch import Elasticsearch
from elasticsearch.dsl import (
    Date,
    Document,
    Float,
    Index,
    Integer,
    Keyword,
    MetaField,
    Q,
    Text,
)
from elasticsearch.dsl.query import Query

from memories.ltm.scope import CardDocument, Hit, Scope
from memoryproject.elasticsearch import ElasticsearchIndex, elasticsearch_client

INDEX_VERSION = 1
# A bulk write answered 409 (a newer version is stored) or 404 (deleting what is already gone)
# did what was meant.
STALE_OR_GONE = (409, 404)


class CardMapping(Document):
    """The fields of a card document; every versioned card index is created with them."""

    memory_id = Keyword()
    tenant_id = Keyword()
    user_id = Keyword()
    project_id = Keyword()
    memory_type = Keyword()
    title = Text()
    summary = Text()
    content = Text()
    entities = Keyword(multi=True)
    tags = Keyword(multi=True)
    source_type = Keyword()
    source_refs = Keyword(multi=True)
    # Normalised by the service (segmented Chinese, stemmed English), so only whitespace
    # splitting is needed here and ranking does not depend on installed analyzers.
    bm25_text = Text(analyzer="whitespace")
    created_at = Date()
    updated_at = Date()
    occurred_at = Date()
    importance = Float()
    confidence = Float()
    access_count = Integer()
    status = Keyword()
    version = Integer()

    class Meta:
        dynamic = MetaField("strict")


CARD_MAPPING: dict[str, Any] = CardMapping._doc_type.mapping.to_dict()


def card_index_definition(name: str) -> Index:
    """The settings and mapping of a card index (or, named by a pattern, of its template)."""
    index = Index(name)
    index.settings(number_of_shards=1, number_of_replicas=0)
    index.document(CardMapping)
    return index


class CardSearchIndex(Protocol):
    def ensure(self) -> list[str]: ...
    def ping(self) -> None: ...
    def drop(self) -> None: ...
    def upsert(self, *, documents: Sequence[CardDocument], index: str | None = None) -> None: ...
    def remove(self, *, versions: dict[str, int]) -> None: ...
    def search(
        self, *, text: str, scope: Scope, limit: int, timeout: float | None = None
    ) -> list[Hit]: ...
    def get_many(
        self, *, ids: Sequence[str], timeout: float | None = None
    ) -> dict[str, dict[str, Any]]: ...
    def versions(self) -> Iterator[tuple[str, int]]: ...
    def remove_user(self, *, tenant_id: str, user_id: str) -> int: ...
    def remove_tenant(self, *, tenant_id: str) -> int: ...
    def remove_ids(self, *, ids: Sequence[str]) -> int: ...
    def ids_where(
        self, *, tenant_id: str, ids: Sequence[str] | None = None, user_id: str = ""
    ) -> list[str]: ...
    def matching_texts(
        self, *, tenant_id: str, text: str, limit: int = 10
    ) -> dict[str, dict[str, Any]]: ...


class ElasticsearchCardIndex(ElasticsearchIndex):
    """Memory cards in Elasticsearch: template `<prefix>-cards`, index `<prefix>-cards-vN`."""

    id_field = "memory_id"
    template: str

    def __init__(self, client: Elasticsearch, prefix: str) -> None:
        super().__init__(client, f"{prefix}-cards")
        self.template = f"{prefix}-cards"
        self.first_index = f"{prefix}-cards-v{INDEX_VERSION}-0"

    def _ensure(self) -> list[str]:
        """Create the template, the versioned index and its alias where missing."""
        done = []
        card_index_definition(self.alias).as_composable_template(
            self.template, f"{self.alias}-v*"
        ).save(using=self._client)
        done.append(f"index template {self.template}")
        if not self._client.indices.exists_alias(name=self.alias):
            if not self._client.indices.exists(index=self.first_index):
                self._client.indices.create(index=self.first_index)
                done.append(f"index {self.first_index}")
            self._client.indices.put_alias(index=self.first_index, name=self.alias)
            done.append(f"alias {self.alias} -> {self.first_index}")
        else:
            # Fields added since the index was made (additive, so no reindex is needed).
            self._client.indices.put_mapping(
                index=self.alias, properties=CARD_MAPPING["properties"]
            )
        return done

    def _versioned_indexes(self) -> list[str]:
        # Deleting by wildcard is refused by default (action.destructive_requires_name).
        return list(self._client.indices.get(index=f"{self.alias}-v*"))

    # --- writes ------------------------------------------------------------------------------
    def upsert(self, *, documents: Sequence[CardDocument], index: str | None = None) -> None:
        """Index card versions; an older version than the stored one is ignored (external
        versioning), so replays and out-of-order deliveries are harmless."""
        actions = [
            {
                "_op_type": "index",
                "_index": index or self.alias,
                "_id": doc.memory_id,
                "_version": doc.version,
                "_version_type": "external",
                "_source": {**doc.fields, "memory_id": doc.memory_id, "version": doc.version},
            }
            for doc in documents
        ]
        self._bulk(actions, tolerated=STALE_OR_GONE)

    def remove(self, *, versions: dict[str, int]) -> None:
        """Delete cards, unless the index already holds a newer version of one."""
        actions = [
            {
                "_op_type": "delete",
                "_index": self.alias,
                "_id": memory_id,
                "_version": version,
                "_version_type": "external",
            }
            for memory_id, version in versions.items()
        ]
        self._bulk(actions, tolerated=STALE_OR_GONE)

    def ids_where(
        self, *, tenant_id: str, ids: Sequence[str] | None = None, user_id: str = ""
    ) -> list[str]:
        """Ids of the tenant's stored cards among `ids`, or of one user (any status).

        `ids=None` leaves ids unfiltered; an empty list matches nothing.
        """
        if ids is not None and not ids:
            return []
        filters = [Q("term", tenant_id=tenant_id)]
        if ids is not None:
            filters.append(Q("terms", memory_id=list(ids)))
        if user_id:
            filters.append(Q("term", user_id=user_id))
        search = (
            self._alias_search().query(Q("bool", filter=filters)).extra(size=10000).source(False)
        )
        response = self._call(search.execute)
        return [hit.meta.id for hit in response]

    def matching_texts(
        self, *, tenant_id: str, text: str, limit: int = 10
    ) -> dict[str, dict[str, Any]]:
        """The tenant's cards (any status) best matching `text` lexically, with their fields."""
        query = Q(
            "bool", must=[Q("match", bm25_text=text)], filter=[Q("term", tenant_id=tenant_id)]
        )
        search = (
            self._alias_search()
            .query(query)
            .extra(size=limit)
            .source(includes=["title", "summary", "content", "user_id"])
        )
        response = self._call(search.execute)
        return {hit.meta.id: hit.to_dict() for hit in response}

    # --- reads ---------------------------------------------------------------------------------
    def search(
        self, *, text: str, scope: Scope, limit: int, timeout: float | None = None
    ) -> list[Hit]:
        """BM25 over `bm25_text` (already normalised by the caller) within the scope."""
        if not text.strip():
            return []
        search = (
            self._alias_search(timeout)
            .query(Q("bool", must=[Q("match", bm25_text=text)], filter=_filters(scope)))
            .extra(size=limit)
            .source(False)
        )
        response = self._call(search.execute)
        return [Hit(hit.meta.id, float(hit.meta.score or 0.0)) for hit in response]

    def get_many(
        self, *, ids: Sequence[str], timeout: float | None = None
    ) -> dict[str, dict[str, Any]]:
        """Stored documents by memory_id (missing ids are left out)."""
        if not ids:
            return {}
        response = self._call(
            lambda: self._with_timeout(timeout).mget(index=self.alias, ids=list(ids))
        )
        return {d["_id"]: d["_source"] for d in response["docs"] if d.get("found")}

    def versions(self) -> Iterator[tuple[str, int]]:
        """(memory_id, version) of every stored card, in memory_id order."""
        page = (
            self._alias_search()
            .query(Q("match_all"))
            .sort({"memory_id": {"order": "asc"}})
            .source(includes=["version"])
            .extra(size=1000)
        )
        while True:
            response = self._call(page.execute)
            for hit in response:
                yield hit.meta.id, int(hit.version)
            if len(response.hits) < 1000:
                return
            page = page.search_after()

    # --- rebuilds ------------------------------------------------------------------------------
    def new_index(self) -> str:
        """Create an empty versioned index (not yet behind the alias) for a rebuild."""
        name = f"{self.alias}-v{INDEX_VERSION}-{int(time.time() * 1000)}"
        self._call(lambda: self._client.indices.create(index=name))
        return name

    def switch_alias(self, *, to: str) -> list[str]:
        """Point the alias at `to` in one atomic step and delete the indexes it left."""
        return self._call(lambda: self._switch_alias(to))

    def _switch_alias(self, to: str) -> list[str]:
        current = (
            list(self._client.indices.get_alias(name=self.alias))
            if (self._client.indices.exists_alias(name=self.alias))
            else []
        )
        actions: list[dict[str, Any]] = [
            {"remove": {"index": name, "alias": self.alias}} for name in current
        ]
        actions.append({"add": {"index": to, "alias": self.alias}})
        self._client.indices.update_aliases(actions=actions)
        for name in current:
            if name != to:
                self._client.indices.delete(index=name)
        return current


def _filters(scope: Scope) -> list[Query]:
    filters = [Q("term", tenant_id=scope.tenant_id), Q("terms", status=list(scope.statuses))]
    if scope.user_ids is not None:
        filters.append(Q("terms", user_id=[*scope.user_ids, ""]))
    if scope.project_id is not None:
        filters.append(Q("terms", project_id=[scope.project_id, ""]))
    if scope.memory_types:
        filters.append(Q("terms", memory_type=list(scope.memory_types)))
    return filters


@cache
def card_search_index() -> ElasticsearchCardIndex:
    client = elasticsearch_client()
    return ElasticsearchCardIndex(client, settings.ELASTICSEARCH_INDEX_PREFIX)
