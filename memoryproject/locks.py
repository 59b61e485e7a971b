"""Short Redis locks for jobs that must not run twice at once (sweeps, extractions)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from redis.exceptions import RedisError

from memoryproject import redis_keys as keys
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_client import redis_connection

# Delete the lock only if it is still ours (it may have expired and been taken by another).
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@contextmanager
def redis_lock(name: str, *, ttl_seconds: int) -> Iterator[bool]:
    """Yield True when the lock `name` was taken (held at most ttl_seconds), else False."""
    client = redis_connection()
    key = keys.lock(name)
    token = uuid.uuid4().hex
    try:
        acquired = bool(client.set(key, token, nx=True, ex=ttl_seconds))
    except RedisError as exc:
        raise StoreUnavailable(f"Redis: {exc}") from exc
    try:
        yield acquired
    finally:
        if acquired:
            client.eval(_RELEASE, 1, key, token)
