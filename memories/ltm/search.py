"""Elasticsearch side of long-term memory: one index of memory cards behind an alias.

Only this module imports `elasticsearch`. Calls stay within the portable core of the API
(templates, aliases, bulk, bool/match/term queries) so the same code runs on Elasticsearch 8/9
and on the local stand-in.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Protocol

from django.conf import settings
from elasticsearch import ApiError, Elasticsearch, TransportError

from memoryproject.errors import StoreUnavailable

INDEX_VERSION = 1

CARD_MAPPING: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "memory_id": {"type": "keyword"},
        "tenant_id": {"type": "keyword"},
        "user_id": {"type": "keyword"},
        "project_id": {"type": "keyword"},
        "memory_type": {"type": "keyword"},
        "title": {"type": "text"},
        "summary": {"type": "text"},
        "content": {"type": "text"},
        "entities": {"type": "keyword"},
        "tags": {"type": "keyword"},
        "source_type": {"type": "keyword"},
        "source_refs": {"type": "keyword"},
        # Normalised by the service (segmented Chinese, stemmed English), so only whitespace
        # splitting is needed here and ranking does not depend on installed analyzers.
        "bm25_text": {"type": "text", "analyzer": "whitespace"},
        "created_at": {"type": "date"},
        "updated_at": {"type": "date"},
        "importance": {"type": "float"},
        "confidence": {"type": "float"},
        "access_count": {"type": "integer"},
        "status": {"type": "keyword"},
        "version": {"type": "integer"},
    },
}


class CardSearchIndex(Protocol):
    def ensure(self) -> list[str]: ...
    def ping(self) -> None: ...
    def drop(self) -> None: ...


class ElasticsearchCardIndex:
    """Memory cards in Elasticsearch: template `<prefix>-cards`, index `<prefix>-cards-vN`."""

    def __init__(self, client: Elasticsearch, prefix: str) -> None:
        self._client = client
        self.alias = f"{prefix}-cards"
        self.template = f"{prefix}-cards"
        self.index = f"{prefix}-cards-v{INDEX_VERSION}"

    def ensure(self) -> list[str]:
        """Create the template, the versioned index and its alias where missing."""
        done = []
        try:
            self._client.indices.put_index_template(
                name=self.template,
                index_patterns=[f"{self.alias}-v*"],
                template={
                    "settings": {"number_of_shards": 1, "number_of_replicas": 0},
                    "mappings": CARD_MAPPING,
                },
            )
            done.append(f"index template {self.template}")
            if not self._client.indices.exists(index=self.index):
                self._client.indices.create(index=self.index)
                done.append(f"index {self.index}")
            if not self._client.indices.exists_alias(name=self.alias, index=self.index):
                self._client.indices.put_alias(index=self.index, name=self.alias)
                done.append(f"alias {self.alias} -> {self.index}")
        except (ApiError, TransportError) as exc:
            raise StoreUnavailable(f"Elasticsearch: {exc}") from exc
        return done

    def ping(self) -> None:
        try:
            self._client.info()
        except (ApiError, TransportError) as exc:
            raise StoreUnavailable(f"Elasticsearch: {exc}") from exc

    def drop(self) -> None:
        """Remove the index, alias and template (test clean-up and full rebuilds)."""
        try:
            # Deleting by wildcard is refused by default (action.destructive_requires_name).
            for name in self._client.indices.get(index=f"{self.alias}-v*"):
                self._client.indices.delete(index=name)
            if self._client.indices.exists_index_template(name=self.template):
                self._client.indices.delete_index_template(name=self.template)
        except (ApiError, TransportError) as exc:
            raise StoreUnavailable(f"Elasticsearch: {exc}") from exc


@cache
def card_search_index() -> ElasticsearchCardIndex:
    client = Elasticsearch(settings.ELASTICSEARCH_URL, request_timeout=5, max_retries=1)
    return ElasticsearchCardIndex(client, settings.ELASTICSEARCH_INDEX_PREFIX)
