"""Prometheus metrics: what the service counts as it works. Names and labels are listed in
docs/metrics.md; `wiring.metrics_view` serves them at `/metrics` with the backlogs.

Counters and histograms only: they add up across web processes in prometheus-client's
multiprocess mode (PROMETHEUS_MULTIPROC_DIR). A gauge declared here would need its
`multiprocess_mode` (`livesum`, `max`, ...); the backlog gauges are read at scrape time instead.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping

from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    Counter,
    Histogram,
)

logger = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

HTTP_REQUEST_SECONDS = Histogram(
    "memory_http_request_duration_seconds",
    "Time to answer an HTTP request, by URL route, method and status.",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS,
)
RECALL_LAYER_SECONDS = Histogram(
    "memory_recall_layer_duration_seconds",
    "Time one recall spent in a layer and store (the Server-Timing parts; layer=total: all).",
    ["layer", "store"],
    buckets=LATENCY_BUCKETS,
)
STORE_SECONDS = Histogram(
    "memory_store_duration_seconds",
    "Time one request spent inside a store (the Server-Timing store.* parts), by URL route and "
    "store (redis, postgresql, elasticsearch, milvus, embedding).",
    ["route", "store"],
    buckets=LATENCY_BUCKETS,
)
RECALL_DEGRADED = Counter(
    "memory_recall_degraded_total",
    "Recalls that skipped a layer or store because it was down or slow, by what was skipped.",
    ["layer"],
)
WRITE_REFUSED = Counter(
    "memory_write_refused_total",
    "Proposed or extracted memories the write policy refused, by source and reason.",
    ["source", "reason"],
)
API_ERRORS = Counter(
    "memory_api_errors_total",
    "Error answers of the API by status and code (throttled, store_unavailable, invalid, ...).",
    ["status", "code"],
)


def observe_recall(latency_ms: Mapping[str, float], degraded: list[str]) -> None:
    """Record one recall's per-layer timings (`redis`, `ltm.milvus`, ..., `total`)."""
    for name, ms in latency_ms.items():
        layer, _, store = name.partition(".")
        RECALL_LAYER_SECONDS.labels(layer=layer, store=store or layer).observe(ms / 1000)
    for layer in degraded:
        RECALL_DEGRADED.labels(layer=layer).inc()


def count_refusal(*, source: str, reason: str) -> None:
    WRITE_REFUSED.labels(source=source or "unknown", reason=reason or "unknown").inc()


def count_error(*, status: int, code: str) -> None:
    API_ERRORS.labels(status=str(status), code=code).inc()


# --- backlogs, read when scraped --------------------------------------------------------------


class RequestMetricsMiddleware:
    """Times every request by its URL route (the pattern, so ids do not explode the labels)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = f"/{match.route}" if match is not None and match.route else "unmatched"
        if route.startswith("/admin/"):
            route = "/admin/"
        elif route.startswith("/static/") or request.path.startswith("/static/"):
            route = "/static/"
        HTTP_REQUEST_SECONDS.labels(
            route=route, method=request.method or "", status=str(response.status_code)
        ).observe(time.perf_counter() - started)
        for store, ms in _store_times(response.get("Server-Timing") or ""):
            STORE_SECONDS.labels(route=route, store=store).observe(ms / 1000)
        if response.status_code >= 400 and route != "/admin/":
            count_error(status=response.status_code, code=_error_code(response))
        return response


def _store_times(header: str) -> Iterator[tuple[str, float]]:
    for part in header.split(","):
        name, _, duration = part.strip().partition(";dur=")
        if name.startswith("store.") and not name.endswith("_exclusive") and duration:
            try:
                yield name[len("store.") :], float(duration)
            except ValueError:
                continue


def _error_code(response: HttpResponse) -> str:
    """The `code` of an answer in the API's error shape ("" for any other body)."""
    if "json" not in response.get("Content-Type", "") or getattr(response, "streaming", False):
        return ""
    try:
        body = json.loads(response.content)
    except ValueError:
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else ""
