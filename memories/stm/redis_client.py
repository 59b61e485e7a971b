"""The Redis connections of the service."""

from __future__ import annotations

from functools import cache
from typing import Any

import redis
from django.conf import settings
from django_redis import get_redis_connection


def redis_connection() -> Any:
    """The raw redis-py client behind the default cache, reusing its connection pool."""
    return get_redis_connection("default")


@cache
def recall_redis_connection() -> Any:
    """A client for recall's reads, whose socket timeout is recall's time budget for Redis:
    a slow Redis is given up on (and reported as degraded) instead of stalling the answer."""
    timeout = settings.RECALL_REDIS_TIMEOUT_SECONDS
    return redis.Redis.from_url(
        str(settings.CACHES["default"]["LOCATION"]),
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
    )
