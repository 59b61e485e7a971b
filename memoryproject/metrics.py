"""Prometheus metrics (`/metrics`): what the service counts as it works, and backlogs read at
scrape time. Names and labels are listed in docs/metrics.md.

Who may read them: with METRICS_TOKEN set, requests sending `Authorization: Bearer <token>`;
without it, only clients on the loopback interface (127.0.0.0/8, ::1). Anyone else gets 404.
With several web processes (gunicorn), set PROMETHEUS_MULTIPROC_DIR to a folder the processes
share so each scrape sums all of them (prometheus-client's multiprocess mode).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

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


def _ltm_outbox() -> dict[str, float]:
    from django.db.models import Count, Min
    from django.utils import timezone

    from memories.models import LtmOutbox

    found = LtmOutbox.objects.aggregate(rows=Count("pk"), oldest=Min("created_at"))
    oldest = found["oldest"]
    return {
        "rows": float(found["rows"] or 0),
        "lag": (timezone.now() - oldest).total_seconds() if oldest else 0.0,
    }


def _history_outbox() -> dict[str, float]:
    from memories.history.services import history_lag

    lag = history_lag()
    return {"rows": float(lag["pending_rows"]), "lag": float(lag["lag_seconds"])}


def _extraction() -> dict[str, float]:
    """Sessions whose extraction watermark is behind their last event, and by how many."""
    from django.db.models import F, IntegerField, Sum, Value
    from django.db.models.functions import Coalesce

    from transcripts.models import Session

    behind = Session.objects.filter(erased_at__isnull=True).annotate(
        extracted=Coalesce(
            "extraction_cursor__extracted_seq", Value(0), output_field=IntegerField()
        )
    )
    behind = behind.filter(event_count__gt=F("extracted"))
    totals = behind.aggregate(events=Sum(F("event_count") - F("extracted")))
    return {"sessions": float(behind.count()), "events": float(totals["events"] or 0)}


def _queue_length() -> float:
    import redis

    broker = redis.Redis.from_url(
        settings.CELERY_BROKER_URL,
        socket_connect_timeout=settings.REDIS_CONNECT_TIMEOUT_SECONDS,
        socket_timeout=settings.REDIS_SOCKET_TIMEOUT_SECONDS,
    )
    try:
        return float(broker.llen(settings.CELERY_TASK_DEFAULT_QUEUE))
    finally:
        broker.close()


class BacklogCollector(Collector):
    """Outboxes, extraction lag and the task queue, read from PostgreSQL and the broker at
    scrape time; a source that cannot be read is reported by memory_metrics_source_up."""

    def describe(self) -> list[GaugeMetricFamily]:
        # Registering calls this (or, without it, collect): nothing may be read at import.
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "memory_metrics_source_up",
            "1 when this scrape could read the source (postgres, broker), else 0.",
            labels=["source"],
        )
        families: list[GaugeMetricFamily] = []

        def read(source: str, reader: Callable[[], Any]) -> Any:
            try:
                value = reader()
            except Exception as exc:  # a store is down: report it, keep the other metrics
                logger.warning("metrics source %s unreadable: %s", source, exc)
                up.add_metric([source], 0)
                return None
            return value

        ltm = read("postgres", _ltm_outbox)
        history = read("postgres", _history_outbox) if ltm is not None else None
        extraction = read("postgres", _extraction) if ltm is not None else None
        if ltm is not None and history is not None and extraction is not None:
            up.add_metric(["postgres"], 1)
            rows = GaugeMetricFamily(
                "memory_outbox_rows",
                "Rows waiting in an outbox (ltm: card index writes; history: turns to index).",
                labels=["outbox"],
            )
            lag = GaugeMetricFamily(
                "memory_outbox_lag_seconds",
                "Age of the oldest row waiting in an outbox (0 when empty).",
                labels=["outbox"],
            )
            for name, found in (("ltm", ltm), ("history", history)):
                rows.add_metric([name], found["rows"])
                lag.add_metric([name], round(found["lag"], 3))
            families += [rows, lag]
            families.append(
                GaugeMetricFamily(
                    "memory_extraction_lag_sessions",
                    "Sessions with events the extractors have not read yet.",
                    value=extraction["sessions"],
                )
            )
            families.append(
                GaugeMetricFamily(
                    "memory_extraction_lag_events",
                    "Events appended but not read by the extractors yet, over all sessions.",
                    value=extraction["events"],
                )
            )
        queue = read("broker", _queue_length)
        if queue is not None:
            up.add_metric(["broker"], 1)
            families.append(
                GaugeMetricFamily(
                    "memory_task_queue_length",
                    "Celery tasks waiting in the service's queue on the broker.",
                    labels=["queue"],
                    value=None,
                )
            )
            families[-1].add_metric([settings.CELERY_TASK_DEFAULT_QUEUE], queue)
        yield from families
        yield up


BACKLOG = BacklogCollector()
REGISTRY.register(BACKLOG)


def _registry() -> CollectorRegistry:
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    registry.register(BACKLOG)
    return registry


def may_read(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if token:
        sent = request.headers.get("Authorization", "")
        return hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


def metrics_view(request: HttpRequest) -> HttpResponse:
    """The metrics in Prometheus' text format, for those who may read them (else 404)."""
    if request.method != "GET":
        return JsonResponse(
            {"error": {"code": "method_not_allowed", "message": "Use GET.", "fields": {}}},
            status=405,
        )
    if not may_read(request):
        return JsonResponse(
            {"error": {"code": "not_found", "message": "No such resource.", "fields": {}}},
            status=404,
        )
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)


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
