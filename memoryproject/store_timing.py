"""Time spent inside each outside store while serving one request.

Each store adapter wraps its calls in `timed(store)`; `StoreTimingMiddleware` starts a clock per
request and reports the totals in the `Server-Timing` header (`store.<name>;dur=<ms>`), so the
service's own time is known apart from the stores' (and from a stand-in's). Calls made on
worker threads count when the thread runs in the request's context (`in_request_context`).

Besides each store's summed time (parallel calls add up), the clock gives each store's
*exclusive* time: the wall time during which that store and no other store was being waited
on. A request without that store would have taken about its total minus this.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import connections
from django.db.backends.signals import connection_created
from django.http import HttpRequest, HttpResponse

STORES = ("postgresql", "redis", "elasticsearch", "milvus", "embedding")
T = TypeVar("T")


class StoreClock:
    """The store calls of one request: (store, start, end) in perf_counter seconds. A call
    still in flight (say, one the request stopped waiting for) counts up to the moment read."""

    def __init__(self) -> None:
        self._spans: list[list[Any]] = []

    def add(self, store: str, start: float, end: float | None = None) -> list[Any]:
        # Called for every Redis reply (a hundred per recall): no lock, since appending to a
        # list and copying it are each one atomic step for threads.
        span = [store, start, end]
        self._spans.append(span)
        return span

    @property
    def spans(self) -> list[tuple[str, float, float]]:
        now = time.perf_counter()
        return [
            (name, start, now if end is None else end) for name, start, end in list(self._spans)
        ]

    def totals_ms(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for store, start, end in self.spans:
            totals[store] = totals.get(store, 0.0) + (end - start) * 1000
        return {store: round(ms, 2) for store, ms in totals.items()}

    def exclusive_ms(self, store: str) -> float:
        """Wall time spent waiting on `store` while no other store call was in flight."""
        spans = self.spans
        mine = _union([(s, e) for name, s, e in spans if name == store])
        others = _union([(s, e) for name, s, e in spans if name != store])
        return round(sum(_minus(span, others) for span in mine) * 1000, 2)


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _minus(span: tuple[float, float], others: list[tuple[float, float]]) -> float:
    start, end = span
    left = end - start
    for other_start, other_end in others:
        overlap = min(end, other_end) - max(start, other_start)
        if overlap > 0:
            left -= overlap
    return max(left, 0.0)


_clock: contextvars.ContextVar[StoreClock | None] = contextvars.ContextVar(
    "store_clock", default=None
)


@contextmanager
def measuring() -> Iterator[StoreClock]:
    """A fresh clock for the calls made inside the block (and its context's threads)."""
    clock = StoreClock()
    token = _clock.set(clock)
    try:
        yield clock
    finally:
        _clock.reset(token)


@contextmanager
def timed(store: str) -> Iterator[None]:
    clock = _clock.get()
    if clock is None:
        yield
        return
    span = clock.add(store, time.perf_counter())
    try:
        yield
    finally:
        span[2] = time.perf_counter()


def in_request_context(call: Callable[[], T]) -> Callable[[], T]:
    """`call`, to run on another thread with the caller's clock (for thread pools)."""
    context = contextvars.copy_context()
    return lambda: context.run(call)


def timed_sql(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
    """A Django execute wrapper counting SQL time as PostgreSQL's."""
    with timed("postgresql"):
        return execute(sql, params, many, context)


def install_sql_timing(sender: Any, connection: Any, **kwargs: Any) -> None:
    """`connection_created` receiver: time every query of the new connection."""
    if timed_sql not in connection.execute_wrappers:
        connection.execute_wrappers.append(timed_sql)


class StoreTimingMiddleware:
    """Report each store's time of the request in `Server-Timing` (`store.<name>`), plus the
    Elasticsearch-exclusive time (`store.elasticsearch_exclusive`)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        connection_created.connect(install_sql_timing, dispatch_uid="store_timing.sql")
        for connection in connections.all(initialized_only=True):
            install_sql_timing(sender=None, connection=connection)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with measuring() as clock:
            response = self.get_response(request)
        totals = clock.totals_ms()
        if totals:
            parts = [f"store.{name};dur={ms}" for name, ms in sorted(totals.items())]
            if "elasticsearch" in totals:
                parts.append(
                    f"store.elasticsearch_exclusive;dur={clock.exclusive_ms('elasticsearch')}"
                )
            existing = response.get("Server-Timing")
            response["Server-Timing"] = ", ".join([existing, *parts] if existing else parts)
        return response
