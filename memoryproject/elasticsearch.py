"""The Elasticsearch client of the card and history indexes, with its calls timed per request
(`memoryproject.store_timing`), so Server-Timing shows the store's time apart from ours."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from elastic_transport import Transport
from elasticsearch import Elasticsearch

from memoryproject.store_timing import timed


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
