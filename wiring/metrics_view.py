"""The `/metrics` endpoint and the backlogs it reads at scrape time: outboxes, extraction lag,
quarantined texts and the task queue. Names and labels are listed in docs/metrics.md.

It reads the memory layers' tables, so it sits with the URLs above them; the counters the
layers update live in `memoryproject.metrics`, below every layer.

Who may read them: with METRICS_TOKEN set, requests sending `Authorization: Bearer <token>`;
without it, only clients on the loopback interface (127.0.0.0/8, ::1). Anyone else gets 404.
With several web processes (gunicorn), set PROMETHEUS_MULTIPROC_DIR to a folder the processes
share so each scrape sums all of them (prometheus-client's multiprocess mode).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

from memoryproject.errors import ErrorCode, error_body

logger = logging.getLogger(__name__)


def _ltm_outbox() -> dict[str, float]:
    from django.db.models import Count, Min
    from django.utils import timezone

    from memories.ltm.models import LtmOutbox

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


def _quarantine() -> list[tuple[str, str, float]]:
    """Quarantined texts by write path and status (held, released, discarded)."""
    from django.db.models import Count

    from memories.quarantine.models import QuarantinedText

    rows = QuarantinedText.objects.values("path", "status").annotate(n=Count("pk"))
    return [(row["path"], row["status"], float(row["n"])) for row in rows]


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
        quarantine = read("postgres", _quarantine) if extraction is not None else None
        if (
            ltm is not None
            and history is not None
            and extraction is not None
            and quarantine is not None
        ):
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
            held = GaugeMetricFamily(
                "memory_quarantined_texts",
                "Texts held because they read as an instruction to the model, by write path "
                "and status (held, released, discarded).",
                labels=["path", "status"],
            )
            for path, status, count in quarantine:
                held.add_metric([path, status], count)
            families.append(held)
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
        return JsonResponse(error_body(ErrorCode.METHOD_NOT_ALLOWED, "Use GET."), status=405)
    if not may_read(request):
        return JsonResponse(error_body(ErrorCode.NOT_FOUND, "No such resource."), status=404)
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
