"""Redis side of recall: the cached Layer 1 documents and the log of recall side effects.

A document is fresh when it was built at its generation's current value and is younger than
RECALL_CONTEXT_MAX_AGE_SECONDS. Changing a Layer 1 row bumps the generation after commit, so
a document built from rows read before the change can never pass as fresh.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

import orjson
from django.conf import settings
from redis.exceptions import RedisError

from memoryproject import redis_keys as keys
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_client import recall_redis_connection, redis_connection


@dataclass(frozen=True)
class Cached:
    """One cached document: None when missing; `generation` is the counter's current value."""

    document: dict[str, Any] | None
    generation: int
    fresh: bool


class ContextCache(Protocol):
    def read(self, *, tenant_id: int, user_id: str) -> tuple[Cached, Cached]: ...
    def write(
        self, *, tenant_id: int, user_id: str, document: dict[str, Any], generation: int
    ) -> None: ...
    def invalidate(self, *, tenant_id: int, user_ids: Sequence[str] = ()) -> None: ...


class RedisContextCache:
    """Tenant and user context documents in Redis, with generation counters."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def read(self, *, tenant_id: int, user_id: str) -> tuple[Cached, Cached]:
        """The tenant's document and the user's, in one round trip."""
        names = [
            keys.context_generation(tenant_id),
            keys.context_document(tenant_id),
            keys.context_generation(tenant_id, user_id),
            keys.context_document(tenant_id, user_id),
        ]
        try:
            tenant_gen, tenant_doc, user_gen, user_doc = self._client.mget(names)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return _cached(tenant_doc, tenant_gen), _cached(user_doc, user_gen)

    def write(
        self, *, tenant_id: int, user_id: str, document: dict[str, Any], generation: int
    ) -> None:
        """Store a document built from rows read after `generation` was current."""
        max_age = settings.RECALL_CONTEXT_MAX_AGE_SECONDS
        payload = {"generation": generation, "built_at": time.time(), "document": document}
        try:
            self._client.set(
                keys.context_document(tenant_id, user_id), orjson.dumps(payload), ex=max_age * 2
            )
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    def forget_user(self, *, tenant_id: int, user_id: str) -> int:
        """Remove an end user's cached document and counter (erasure); returns keys removed."""
        try:
            return int(
                self._client.delete(
                    keys.context_document(tenant_id, user_id),
                    keys.context_generation(tenant_id, user_id),
                )
            )
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    def forget_tenant(self, *, tenant_id: int, user_ids: Sequence[str]) -> int:
        """Remove a (deleted) tenant's cached documents and counters, its users' too; returns
        keys removed."""
        return self._each_batch("unlink", _tenant_names(tenant_id, user_ids))

    def tenant_keys_held(self, *, tenant_id: int, user_ids: Sequence[str]) -> int:
        """How many cached documents and counters of a tenant and these users exist."""
        return self._each_batch("exists", _tenant_names(tenant_id, user_ids))

    def _each_batch(self, command: str, names: list[str]) -> int:
        try:
            pipe = self._client.pipeline(transaction=False)
            for start in range(0, len(names), 1000):
                getattr(pipe, command)(*names[start : start + 1000])
            return sum(int(n) for n in pipe.execute())
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    def invalidate(self, *, tenant_id: int, user_ids: Sequence[str] = ()) -> None:
        """Bump the tenant's generation, or only these users' when given."""
        names = [keys.context_generation(tenant_id, u) for u in user_ids] or [
            keys.context_generation(tenant_id)
        ]
        try:
            pipe = self._client.pipeline(transaction=False)
            for name in names:
                pipe.incr(name)
                # Any document built before this bump is older than the maximum age by the
                # time the counter expires, so resetting it cannot revive one.
                pipe.expire(name, settings.RECALL_CONTEXT_MAX_AGE_SECONDS * 2 + 60)
            pipe.execute()
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc


def _tenant_names(tenant_id: int, user_ids: Sequence[str]) -> list[str]:
    names = [keys.context_document(tenant_id), keys.context_generation(tenant_id)]
    for user_id in user_ids:
        names += [keys.context_document(tenant_id, user_id)]
        names += [keys.context_generation(tenant_id, user_id)]
    return names


def _cached(raw: bytes | None, generation: bytes | None) -> Cached:
    current = int(generation or 0)
    if not raw:
        return Cached(document=None, generation=current, fresh=False)
    payload = orjson.loads(raw)
    age = time.time() - payload["built_at"]
    fresh = payload["generation"] == current and age < settings.RECALL_CONTEXT_MAX_AGE_SECONDS
    return Cached(document=payload["document"], generation=current, fresh=fresh)


class RecallLog(Protocol):
    def push(self, *, record: dict[str, Any]) -> int: ...
    def peek(self, *, limit: int) -> list[dict[str, Any]]: ...
    def trim(self, *, count: int) -> None: ...


class RedisRecallLog:
    """A Redis list of recalls whose side effects are still to be applied (oldest first)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def push(self, *, record: dict[str, Any]) -> int:
        """Append a record; returns the log's length (1 means it was empty)."""
        try:
            return int(self._client.rpush(keys.recall_log(), orjson.dumps(record)))
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    def peek(self, *, limit: int) -> list[dict[str, Any]]:
        """The oldest records, left in place until `trim` confirms they were applied."""
        try:
            rows = self._client.lrange(keys.recall_log(), 0, limit - 1)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return [orjson.loads(row) for row in rows]

    def trim(self, *, count: int) -> None:
        try:
            self._client.ltrim(keys.recall_log(), count, -1)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc


@cache
def context_cache() -> RedisContextCache:
    return RedisContextCache(redis_connection())


@cache
def recall_context_cache() -> RedisContextCache:
    """The cache as recall reads it, on the connection with recall's time budget."""
    return RedisContextCache(recall_redis_connection())


@cache
def recall_log() -> RedisRecallLog:
    return RedisRecallLog(redis_connection())
