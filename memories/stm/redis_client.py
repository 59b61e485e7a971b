"""The one Redis connection pool of the service (shared with Django's cache)."""

from __future__ import annotations

from typing import Any

from django_redis import get_redis_connection


def redis_connection() -> Any:
    """The raw redis-py client behind the default cache, reusing its connection pool."""
    return get_redis_connection("default")
