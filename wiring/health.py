"""Liveness and readiness: are PostgreSQL and the broker answering, and every registered
store's checks (`memoryproject.stores`: Redis, Elasticsearch, both Milvus collections,
transcript storage taking a write, how far history indexing lags), and how fast; are a worker
and beat alive.

A check that fails is `ok: false`; one marked `required: false` (the worker and beat with
READYZ_REQUIRE_WORKERS off) is then reported under `warnings` instead of failing readiness,
as is a store's check that says its result needs attention (`ReadyCheck.warns`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connection, connections

from memoryproject.celery import app as celery_app
from memoryproject.heartbeats import heartbeat_read
from memoryproject.stores import ReadyCheck, ready_checks

CHECK_TIMEOUT_SECONDS = 3.0

_cached_results: dict[str, tuple[float, dict[str, Any]]] = {}
_cache_lock = threading.Lock()


def _cached(name: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`run()`'s result, reused for READYZ_STORAGE_PROBE_SECONDS (probes that write, or that
    count rows, need not run on every poll of a load balancer)."""
    hold = settings.READYZ_STORAGE_PROBE_SECONDS
    now = time.monotonic()
    with _cache_lock:
        cached = _cached_results.get(name)
    if cached is not None and now - cached[0] < hold:
        return {**cached[1], "cached": True}
    result = run()
    with _cache_lock:
        _cached_results[name] = (now, result)
    return result


def _postgres() -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    finally:
        connections.close_all()  # this runs in a worker thread: do not leak its connection


def _broker() -> None:
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT_SECONDS)


def _heartbeat(role: str) -> Callable[[], None]:
    def check() -> None:
        beat = heartbeat_read(role=role)
        if beat is None:
            raise LookupError(
                f"no {role} heartbeat within {settings.HEARTBEAT_TTL_SECONDS}s; is the {role} "
                "running?"
            )
        if beat.get("stalled_seconds"):
            raise LookupError(
                f"the {role} takes no task: tasks have waited {beat['stalled_seconds']}s with a "
                "slot free"
            )

    return check


# Checks of what is no store of a layer: the database of record, the broker, the processes.
CHECKS: dict[str, Callable[[], None]] = {
    "postgres": _postgres,
    "broker": _broker,
    "worker": _heartbeat("worker"),
    "beat": _heartbeat("beat"),
}
# Checks whose failure fails readiness only when READYZ_REQUIRE_WORKERS is on.
WORKER_CHECKS = ("worker", "beat")


def _timed(check: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
    """`ok`, what the check reported and its latency; its error when it raised."""
    started = time.perf_counter()
    result: dict[str, Any] = {"ok": True}
    error = None
    try:
        result.update(check() or {})
    except Exception as exc:  # any failure means "not ready"; the message says which
        result, error = {"ok": False}, f"{type(exc).__name__}: {exc}"[:300]
    result["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
    if error:
        result["error"] = error
    return result


def _store_check(name: str, ready: ReadyCheck) -> Callable[[], dict[str, Any]]:
    if ready.reused:
        return partial(_cached, name, partial(_timed, ready.check))
    return partial(_timed, ready.check)


def _all_checks() -> dict[str, Callable[[], dict[str, Any]]]:
    """PostgreSQL, the stores' checks in registry order, the broker and the processes, then
    the stores' checks whose results are reused."""
    base = {name: partial(_timed, check) for name, check in CHECKS.items()}
    stores = list(ready_checks())
    checks: dict[str, Callable[[], dict[str, Any]]] = {"postgres": base.pop("postgres")}
    checks |= {name: _store_check(name, ready) for name, ready in stores if not ready.reused}
    checks |= base
    checks |= {name: _store_check(name, ready) for name, ready in stores if ready.reused}
    return checks


def readiness() -> dict[str, dict[str, Any]]:
    """Run every check concurrently; a check that takes too long counts as failed."""
    checks_to_run = _all_checks()
    pool = ThreadPoolExecutor(max_workers=len(checks_to_run), thread_name_prefix="readyz")
    futures = {name: pool.submit(run) for name, run in checks_to_run.items()}
    wait(futures.values(), timeout=CHECK_TIMEOUT_SECONDS + 1)
    pool.shutdown(wait=False, cancel_futures=True)
    checks = {
        name: future.result()
        if future.done()
        else {"ok": False, "error": f"no answer within {CHECK_TIMEOUT_SECONDS}s"}
        for name, future in futures.items()
    }
    if not settings.READYZ_REQUIRE_WORKERS:
        for name in WORKER_CHECKS:
            checks[name]["required"] = False
    return checks


def readiness_warnings(checks: dict[str, dict[str, Any]]) -> list[str]:
    """Checks that need attention without failing readiness: a check not required that fails,
    and a store's check whose result says so (history indexing behind its bound or with
    sessions no outbox row covers)."""
    warnings = sorted(
        name for name, c in checks.items() if not c["ok"] and c.get("required", True) is False
    )
    for name, ready in ready_checks():
        result = checks.get(name, {})
        if ready.warns is not None and result.get("ok") and ready.warns(result):
            warnings.append(name)
    return warnings
