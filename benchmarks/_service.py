"""The service the end-to-end benchmarks talk to: gunicorn and a real Celery worker under a run's
own key, index, collection and queue prefixes, an HTTP client, and the clean-up afterwards.

    run = ServiceRun("bench-e2e", "1a2b3c4d")        # prefixes bench-e2e-1a2b3c4d / bench_e2e_…
    django_setup(migrate=True, **run.env())
    processes = start_service(run, port, workers=2)
    ...
    wait_for_worker(run, limit_seconds=600)
    stop(processes)
    remove_everything(run)
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from _setup import ROOT, clear_prefix_keys


@dataclass(frozen=True)
class ServiceRun:
    """One run's names: every store name, queue and tenant slug starts with `prefix`."""

    name: str  # the benchmark's own prefix, e.g. "bench-e2e"; its log files are named after it
    run: str  # this run's id

    @property
    def prefix(self) -> str:
        return f"{self.name}-{self.run}"

    def env(self) -> dict[str, str]:
        """Settings of the service, its worker and this process for the run."""
        return {
            "REDIS_KEY_PREFIX": self.prefix,
            "ELASTICSEARCH_INDEX_PREFIX": self.prefix,
            "MILVUS_COLLECTION_PREFIX": self.prefix.replace("-", "_"),
            "CELERY_QUEUE": self.prefix,
            "SECURE_COOKIES": "0",
        }


# --- HTTP ----------------------------------------------------------------------------------------
class Api:
    def __init__(self, port: int, secret: str) -> None:
        self._port = port
        self._headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any, dict[str, str]]:
        payload = json.dumps(body) if body is not None else None
        for attempt in range(3):
            try:
                self._conn.request(method, path, body=payload, headers=self._headers)
                response = self._conn.getresponse()
                data = response.read()
                break
            except (ConnectionError, http.client.HTTPException):
                if attempt == 2:
                    raise
                self._conn = http.client.HTTPConnection("127.0.0.1", self._port, timeout=120)
        headers = {k.lower(): v for k, v in response.getheaders()}
        return response.status, (json.loads(data) if data else None), headers

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, data, _ = self.call(method, path, body)
        if status >= 300:
            raise SystemExit(f"{method} {path} answered {status}: {str(data)[:300]}")
        return data


def server_timing(headers: dict[str, str]) -> dict[str, float]:
    """The `Server-Timing` header of an answer as {name: milliseconds}."""
    timing = {}
    for part in headers.get("server-timing", "").split(","):
        if ";dur=" in part:
            name, value = part.strip().split(";dur=")
            timing[name] = float(value)
    return timing


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


# --- the service -------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_service(run: ServiceRun, port: int, workers: int) -> list[subprocess.Popen]:
    """gunicorn on `port` and one Celery worker, both under the run's prefixes; logs go to
    var/<name>-web.log and var/<name>-worker.log."""
    env = {**os.environ, **run.env()}
    venv = ROOT / ".venv" / "bin"
    logs = ROOT / "var"
    logs.mkdir(exist_ok=True)
    web = subprocess.Popen(
        [str(venv / "gunicorn"), "memoryproject.wsgi", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--timeout", "120", "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=(logs / f"{run.name}-web.log").open("w"),
    )  # fmt: skip
    worker = subprocess.Popen(
        [str(venv / "celery"), "-A", "memoryproject", "worker", "--concurrency", "1",
         "--loglevel", "WARNING"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=(logs / f"{run.name}-worker.log").open("w"),
    )  # fmt: skip
    processes = [web, worker]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return processes
        except OSError:
            time.sleep(0.3)
    stop(processes)
    raise SystemExit(f"the service did not start; see var/{run.name}-web.log")


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


def worker_idle(run: ServiceRun) -> bool:
    """Nothing queued for this run's worker, nothing in flight, no card waiting for its
    indexes, no transcript waiting for extraction."""
    import redis
    from django.conf import settings
    from django.db.models import F

    from memories.history.models import HistoryOutbox
    from memories.ltm.models import LtmOutbox
    from transcripts.models import Session

    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queued = broker.llen(settings.CELERY_TASK_DEFAULT_QUEUE)
    in_flight = sum(
        1 for raw in broker.hvals("unacked") if settings.CELERY_TASK_DEFAULT_QUEUE.encode() in raw
    )
    lagging = (
        Session.objects.filter(tenant__slug__startswith=run.prefix)
        .exclude(extraction_cursor__extracted_seq__gte=F("event_count"))
        .count()
    )
    outbox = LtmOutbox.objects.filter(card__tenant__slug__startswith=run.prefix).count()
    outbox += HistoryOutbox.objects.filter(session__tenant__slug__startswith=run.prefix).count()
    return queued == 0 and in_flight == 0 and lagging == 0 and outbox == 0


def wait_for_worker(run: ServiceRun, limit_seconds: float) -> float:
    """Wait until the worker has been idle for three checks in a row; the seconds it took."""
    started = time.perf_counter()
    calm = 0
    while time.perf_counter() - started < limit_seconds:
        calm = calm + 1 if worker_idle(run) else 0
        if calm >= 3:
            break
        time.sleep(1)
    return time.perf_counter() - started


# --- tenant, key and clean-up ------------------------------------------------------------------
def tenant_with_key(*, slug: str, name: str, reuse: bool = False) -> tuple[Any, str]:
    """The run's tenant (created, or the one an earlier run kept) and a new API key's secret."""
    from profiles.models import Tenant
    from profiles.services.api_keys import api_key_create
    from profiles.services.tenants import tenant_create

    tenant = Tenant.objects.get(slug=slug) if reuse else tenant_create(slug=slug, name=name)
    _, secret = api_key_create(tenant=tenant, name="benchmark", scopes=["read", "write", "admin"])
    return tenant, secret


def remove_everything(run: ServiceRun) -> None:
    """Drop the run's indexes and collections, its tenants (and all they hold) and its keys."""
    from memories.history.search import history_search_index
    from memories.history.vectors import history_vector_index
    from memories.ltm.search import card_search_index
    from memories.ltm.vectors import vector_index
    from profiles.models import Tenant
    from profiles.services.tenants import tenant_delete

    for index in (
        card_search_index(),
        vector_index(),
        history_search_index(),
        history_vector_index(),
    ):
        index.drop()
    for tenant in Tenant.objects.filter(slug__startswith=run.prefix):
        tenant_delete(tenant=tenant)
    clear_prefix_keys()
    print("removed everything written")
