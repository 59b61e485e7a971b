"""The Elasticsearch client of the card and history indexes, with its calls timed per request
(`memoryproject.store_timing`), so Server-Timing shows the store's time apart from ours; and
the base of both adapters (`ElasticsearchIndex`): what they share of ensure, ping, drop, bulk
writes and deletes by query, beside the Milvus one (`memoryproject.milvus.MilvusCollection`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

from django.conf import settings
from elastic_transport import Transport
from elasticsearch import ApiError, Elasticsearch, TransportError, helpers
from elasticsearch.dsl import Q, Search
from elasticsearch.dsl.query import Query

from memoryproject.errors import StoreUnavailable
from memoryproject.store_timing import timed

T = TypeVar("T")


class TimedTransport(Transport):
    def perform_request(self, *args: Any, **kwargs: Any) -> Any:
        with timed("elasticsearch"):
            return super().perform_request(*args, **kwargs)


def elasticsearch_client() -> Elasticsearch:
    """A client of ELASTICSEARCH_URL; it connects lazily, on the first call."""
    return Elasticsearch(
        settings.ELASTICSEARCH_URL,
        request_timeout=settings.ELASTICSEARCH_TIMEOUT_SECONDS,
        max_retries=1,
        transport_class=TimedTransport,
    )


class ElasticsearchIndex:
    """One index of the service behind an alias, its documents keyed by `id_field` and owned
    by a tenant and (optionally) an end user. Every vendor error becomes `StoreUnavailable`.

    A subclass says how its index is created (`_ensure`) and which indexes a drop removes
    (`_versioned_indexes`, and `template` if it keeps one).
    """

    label = "Elasticsearch"
    id_field = "id"
    template: str | None = None

    def __init__(self, client: Elasticsearch, alias: str) -> None:
        self._client = client
        self.alias = alias

    # --- lifecycle -----------------------------------------------------------------------------
    def ensure(self) -> list[str]:
        """Create what the index needs where missing; returns what was done."""
        return self._call(self._ensure)

    def _ensure(self) -> list[str]:
        raise NotImplementedError

    def ping(self) -> None:
        self._call(self._client.info)

    def drop(self) -> None:
        """Remove the indexes behind the alias, and the template (test clean-up, rebuilds)."""
        self._call(self._drop)

    def _drop(self) -> None:
        for name in self._versioned_indexes():
            self._client.indices.delete(index=name)
        if self.template and self._client.indices.exists_index_template(name=self.template):
            self._client.indices.delete_index_template(name=self.template)

    def _versioned_indexes(self) -> list[str]:
        raise NotImplementedError

    # --- calls ---------------------------------------------------------------------------------
    def _unavailable(self, exc: Exception) -> StoreUnavailable:
        return StoreUnavailable(f"{self.label}: {exc}")

    def _call(self, operation: Callable[[], T]) -> T:
        try:
            return operation()
        except (ApiError, TransportError) as exc:
            raise self._unavailable(exc) from exc

    def _with_timeout(self, timeout: float | None) -> Elasticsearch:
        return self._client.options(request_timeout=timeout) if timeout else self._client

    def _alias_search(self, timeout: float | None = None) -> Search:
        """A search of the alias, sent through the timed client (with its own timeout)."""
        return Search(using=self._with_timeout(timeout), index=self.alias)

    def _bulk(
        self, actions: list[dict[str, Any]], *, tolerated: Collection[int] = (), what: str = ""
    ) -> None:
        """Send `actions` in one refreshed bulk call; a refused one (its status not among
        `tolerated`) raises."""
        if not actions:
            return
        _, errors = self._call(
            lambda: helpers.bulk(
                self._client, actions, refresh=True, raise_on_error=False, stats_only=False
            )
        )
        failures = [
            error
            for error in (errors if isinstance(errors, list) else [])
            for result in error.values()
            if result.get("status") not in tolerated
        ]
        if failures:
            raise StoreUnavailable(
                f"Elasticsearch refused {len(failures)} {what}writes: {failures[0]}"
            )

    # --- deletes -------------------------------------------------------------------------------
    def _delete_where(self, query: Query) -> int:
        """Delete every document matching `query`, whatever its version; returns how many."""
        search = self._alias_search().query(query).params(refresh=True, conflicts="proceed")
        response = self._call(search.delete)
        return int(response.to_dict().get("deleted", 0))

    def remove_ids(self, *, ids: Sequence[str]) -> int:
        """Delete documents by id, whatever their version; returns how many were deleted."""
        return self._delete_where(Q("terms", **{self.id_field: list(ids)})) if ids else 0

    def remove_user(self, *, tenant_id: str, user_id: str) -> int:
        """Delete every document of one end user; returns how many were deleted."""
        return self._delete_where(Q("bool", filter=owner_filters(tenant_id, user_id)))

    def remove_tenant(self, *, tenant_id: str) -> int:
        """Delete every document of a (deleted) tenant; returns how many were deleted."""
        return self._delete_where(Q("bool", filter=[Q("term", tenant_id=tenant_id)]))


def owner_filters(tenant_id: str, user_id: str) -> list[Query]:
    """The filters of one end user's documents."""
    return [Q("term", tenant_id=tenant_id), Q("term", user_id=user_id)]
