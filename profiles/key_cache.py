"""Redis cache of API-key lookups, so authenticating a request costs no database query.

Entries are removed when their key or its tenant changes (after commit), so a revoked key or a
deactivated tenant is refused by every process at once; a TTL bounds anything missed while
Redis was unreachable. Any Redis error falls back to PostgreSQL.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

import orjson
from redis.exceptions import RedisError

from memories.stm import keys
from memories.stm.redis_client import redis_connection
from profiles.models import ApiKey, Tenant

logger = logging.getLogger(__name__)
TTL_SECONDS = 300


class ApiKeyCache:
    """Active API keys with their tenant, by the SHA-256 of the secret."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def get(self, key_hash: str) -> ApiKey | None:
        try:
            raw = self._client.get(keys.api_key(key_hash))
        except RedisError:
            logger.warning("API key cache unavailable", exc_info=True)
            return None
        return _from_document(orjson.loads(raw)) if raw else None

    def put(self, api_key: ApiKey) -> None:
        try:
            self._client.set(keys.api_key(api_key.key_hash), _document(api_key), ex=TTL_SECONDS)
        except RedisError:
            logger.warning("API key cache unavailable", exc_info=True)

    def refresh(self, api_key: ApiKey) -> None:
        """Rewrite a cached entry (say, its last use) only while it is cached: an entry
        removed because the key was revoked is never brought back."""
        try:
            self._client.set(
                keys.api_key(api_key.key_hash), _document(api_key), xx=True, keepttl=True
            )
        except RedisError:
            logger.warning("API key cache unavailable", exc_info=True)

    def claim_touch(self, api_key_id: int, *, seconds: int) -> bool:
        """True for the first caller in `seconds` (who records the use); True without Redis."""
        try:
            return bool(self._client.set(keys.api_key_touched(api_key_id), 1, nx=True, ex=seconds))
        except RedisError:
            return True

    def forget(self, key_hashes: Sequence[str]) -> None:
        if not key_hashes:
            return
        try:
            self._client.delete(*(keys.api_key(h) for h in key_hashes))
        except RedisError:
            logger.warning("API key cache entries not removed (they expire)", exc_info=True)


def _document(api_key: ApiKey) -> bytes:
    tenant = api_key.tenant
    return orjson.dumps(
        {
            "id": api_key.pk,
            "name": api_key.name,
            "prefix": api_key.prefix,
            "key_hash": api_key.key_hash,
            "scopes": list(api_key.scopes),
            "last_used_at": api_key.last_used_at.isoformat() if api_key.last_used_at else None,
            "tenant": {"id": tenant.pk, "slug": tenant.slug, "name": tenant.name},
        }
    )


def _from_document(document: dict[str, Any]) -> ApiKey:
    """The key and its tenant as if loaded from the database (active, not revoked)."""
    tenant = Tenant(
        pk=document["tenant"]["id"],
        slug=document["tenant"]["slug"],
        name=document["tenant"]["name"],
        is_active=True,
    )
    last_used = document["last_used_at"]
    api_key = ApiKey(
        pk=document["id"],
        tenant=tenant,
        name=document["name"],
        prefix=document["prefix"],
        key_hash=document["key_hash"],
        scopes=document["scopes"],
        revoked_at=None,
        last_used_at=datetime.fromisoformat(last_used) if last_used else None,
    )
    for instance in (tenant, api_key):
        instance._state.adding = False
        instance._state.db = "default"
    return api_key


@cache
def api_key_cache() -> ApiKeyCache:
    return ApiKeyCache(redis_connection())
