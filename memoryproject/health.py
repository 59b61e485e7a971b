"""Liveness and readiness: is each store the service needs answering, and how fast."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from django.db import connection, connections

from memories.history.vectors import history_vector_index
from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memoryproject.celery import app as celery_app
from memoryproject.redis_client import redis_connection

CHECK_TIMEOUT_SECONDS = 3.0


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


CHECKS: dict[str, Callable[[], None]] = {
    "postgres": _postgres,
    "redis": _redis,
    "elasticsearch": lambda: card_search_index().ping(),
    "milvus": lambda: vector_index().ready(),  # answering, and the card collection loaded
    "milvus_history": lambda: history_vector_index().ready(),  # the history collection loaded
    "broker": _broker,
}


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


def readiness() -> dict[str, dict[str, Any]]:
    """Run every check concurrently; a check that takes too long counts as failed."""
    pool = ThreadPoolExecutor(max_workers=len(CHECKS) + 1, thread_name_prefix="readyz")
    futures = {name: pool.submit(_timed, check) for name, check in CHECKS.items()}
    futures["history_index"] = pool.submit(_history_index)
    wait(futures.values(), timeout=CHECK_TIMEOUT_SECONDS + 1)
    pool.shutdown(wait=False, cancel_futures=True)
    return {
        name: future.result()
        if future.done()
        else {"ok": False, "error": f"no answer within {CHECK_TIMEOUT_SECONDS}s"}
        for name, future in futures.items()
    }
