"""The Redis connections of the service.

Every client has connect and reply timeouts (REDIS_CONNECT_TIMEOUT_MS, REDIS_SOCKET_TIMEOUT_MS;
recall's own reads RECALL_REDIS_TIMEOUT_MS), TCP keepalives, a health check of a connection idle
longer than REDIS_HEALTH_CHECK_SECONDS, no retries, and fails fast: once a connection to
a server failed or timed out, calls to that server from this process fail at once for
REDIS_FAIL_FAST_MS. A request that meets a Redis outage so waits for one timeout at most, not
for one per call (key cache, throttle, touch claim, recall's reads, the recall log).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import redis
from django.conf import settings
from django_redis import get_redis_connection
from redis.connection import Connection, ConnectionPool, SSLConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from memoryproject.fail_fast import FailFastWindow
from memoryproject.store_timing import timed

_OUTAGES = (RedisConnectionError, RedisTimeoutError)
_window = FailFastWindow(lambda: settings.REDIS_FAIL_FAST_SECONDS)
_failed_until = _window.until  # the servers refused for now, and until when


def _server(connection: Any) -> tuple[str, int]:
    return (str(getattr(connection, "host", "")), int(getattr(connection, "port", 0) or 0))


def server_failed_recently(host: str, port: int) -> bool:
    """True while calls to this server (Redis, or the broker on it) are failed at once."""
    return _window.failed_recently((host, port))


def server_failed(host: str, port: int) -> None:
    """A call to this server failed or timed out: fail the next ones at once for a while."""
    _window.failed((host, port))


def _check(connection: Any) -> None:
    if server_failed_recently(*_server(connection)):
        raise RedisConnectionError(
            f"Redis {connection.host}:{connection.port} failed moments ago; not waiting on it"
        )


def _failed(connection: Any) -> None:
    server_failed(*_server(connection))


def _recovered(connection: Any) -> None:
    _window.recovered(_server(connection))


class _FailFast:
    """Connection methods that refuse at once while their server is known to be down."""

    def connect_check_health(self, *args: Any, **kwargs: Any) -> Any:
        _check(self)
        try:
            return super().connect_check_health(*args, **kwargs)  # type: ignore[misc]
        except _OUTAGES:
            _failed(self)
            raise

    def send_packed_command(self, *args: Any, **kwargs: Any) -> Any:
        _check(self)
        try:
            with timed("redis"):
                return super().send_packed_command(*args, **kwargs)  # type: ignore[misc]
        except _OUTAGES:
            _failed(self)
            raise

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            with timed("redis"):
                response = super().read_response(*args, **kwargs)  # type: ignore[misc]
        except _OUTAGES:
            _failed(self)
            raise
        _recovered(self)
        return response


class FailFastConnection(_FailFast, Connection):
    pass


class FailFastSSLConnection(_FailFast, SSLConnection):
    pass


class FailFastConnectionPool(ConnectionPool):
    """A pool of fail-fast connections without retries (the cache's CONNECTION_POOL_CLASS)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        plain = kwargs.get("connection_class", Connection)
        secure = isinstance(plain, type) and issubclass(plain, SSLConnection)
        kwargs["connection_class"] = FailFastSSLConnection if secure else FailFastConnection
        # No retries: a failed call is reported at once (callers degrade or answer 503).
        kwargs["retry"] = None
        kwargs["retry_on_error"] = []
        super().__init__(*args, **kwargs)


def redis_connection() -> Any:
    """The raw redis-py client behind the default cache, reusing its connection pool."""
    return get_redis_connection("default")


@cache
def recall_redis_connection() -> Any:
    """A client for recall's reads, whose socket timeout is recall's time budget for Redis:
    a slow Redis is given up on (and reported as degraded) instead of stalling the answer."""
    timeout = settings.RECALL_REDIS_TIMEOUT_SECONDS
    pool = FailFastConnectionPool.from_url(
        str(settings.CACHES["default"]["LOCATION"]),
        socket_timeout=timeout,
        socket_connect_timeout=min(timeout, settings.REDIS_CONNECT_TIMEOUT_SECONDS),
        health_check_interval=settings.REDIS_HEALTH_CHECK_SECONDS,
        socket_keepalive=True,
    )
    return redis.Redis(connection_pool=pool)
