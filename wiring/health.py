"""Liveness and readiness: is each store the service needs answering, and how fast; can
transcript storage take a write; are a worker and beat alive; how far history indexing lags.

A check that fails is `ok: false`; one marked `required: false` (the worker and beat with
READYZ_REQUIRE_WORKERS off) is then reported under `warnings` instead of failing readiness.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from django.conf import settings
from django.db import connection, connections

from memories.history.vectors import history_vector_index
from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memoryproject.celery import app as celery_app
from memoryproject.heartbeats import heartbeat_read
from memoryproject.redis_client import redis_connection
from transcripts.storage import storage_probe

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


def _redis() -> None:
    redis_connection().ping()


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


CHECKS: dict[str, Callable[[], None]] = {
    "postgres": _postgres,
    "redis": _redis,
    "elasticsearch": lambda: card_search_index().ping(),
    "milvus": lambda: vector_index().ready(),  # answering, and the card collection loaded
    "milvus_history": lambda: history_vector_index().ready(),  # the history collection loaded
    "broker": _broker,
    "worker": _heartbeat("worker"),
    "beat": _heartbeat("beat"),
}
# Checks whose failure fails readiness only when READYZ_REQUIRE_WORKERS is on.
WORKER_CHECKS = ("worker", "beat")


def _timed(check: Callable[[], None]) -> dict[str, Any]:
    started = time.perf_counter()
    error = None
    try:
        check()
    except Exception as exc:  # any failure means "not ready"; the message says which
        error = f"{type(exc).__name__}: {exc}"[:300]
    result: dict[str, Any] = {
        "ok": error is None,
        "latency_ms": round((time.perf_counter() - started) * 1000, 2),
    }
    if error:
        result["error"] = error
    return result


def _history_index() -> dict[str, Any]:
    """How far history indexing lags (reported, not a failure: a slow worker must not take the
    web servers out of service); fails only when the lag cannot be read."""
    from memories.history.services import history_lag

    started = time.perf_counter()
    try:
        detail: dict[str, Any] = {"ok": True, **history_lag()}
    except Exception as exc:  # PostgreSQL is down: its own check says so too
        detail = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        connections.close_all()
    detail["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
    return detail


def _transcript_storage() -> dict[str, Any]:
    return _cached("transcript_storage", lambda: _timed(storage_probe))


def readiness() -> dict[str, dict[str, Any]]:
    """Run every check concurrently; a check that takes too long counts as failed."""
    pool = ThreadPoolExecutor(max_workers=len(CHECKS) + 2, thread_name_prefix="readyz")
    futures = {name: pool.submit(_timed, check) for name, check in CHECKS.items()}
    futures["transcript_storage"] = pool.submit(_transcript_storage)
    futures["history_index"] = pool.submit(_cached, "history_index", _history_index)
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
    and history indexing behind its bound or with sessions no outbox row covers."""
    warnings = sorted(
        name for name, c in checks.items() if not c["ok"] and c.get("required", True) is False
    )
    history = checks.get("history_index", {})
    if history.get("ok") and (
        not history.get("within_bound", True) or history.get("unqueued_sessions", 0)
    ):
        warnings.append("history_index")
    return warnings
