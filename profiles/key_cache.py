"""Redis cache of API-key lookups, so authenticating a request costs no database query.

Every service that narrows or ends a key (revocation, new scopes, its tenant changed,
deactivated or deleted; `profiles.services.api_keys.api_key_cache_forget`) removes its entry
after commit, so every process refuses it from the next request on. A removed entry leaves a
short marker behind, which keeps a lookup that read the key from PostgreSQL just before the
change from caching the old row just after it. The TTL bounds anything missed while Redis was
unreachable. Any Redis error falls back to PostgreSQL.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

import orjson
from redis.exceptions import RedisError

from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection
from profiles.models import ApiKey, Tenant

logger = logging.getLogger(__name__)
TTL_SECONDS = 300
# A forgotten entry stays a marker this long: longer than any lookup takes between reading
# PostgreSQL and writing the cache, so no lookup can cache a row read before the change.
FORGOTTEN_SECONDS = 60
FORGOTTEN = b"-"
# Rewrite an entry only while it holds a key (not when missing or a marker).
REFRESH_CACHED = """
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[2] then
  redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
  return 1
end
return 0
"""


class ApiKeyCache:
    """Active API keys with their tenant, by the SHA-256 of the secret."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._refresh = client.register_script(REFRESH_CACHED)

    def get(self, key_hash: str) -> ApiKey | None:
        try:
            raw = self._client.get(keys.api_key(key_hash))
        except RedisError:
            logger.warning("API key cache unavailable", exc_info=True)
            return None
        if not raw or raw == FORGOTTEN:
            return None
        return _from_document(orjson.loads(raw))

    def put(self, api_key: ApiKey) -> None:
        """Cache a key just read from PostgreSQL, unless its entry was forgotten meanwhile."""
        try:
            self._client.set(
                keys.api_key(api_key.key_hash), _document(api_key), ex=TTL_SECONDS, nx=True
            )
        except RedisError:
            logger.warning("API key cache unavailable", exc_info=True)

    def refresh(self, api_key: ApiKey) -> None:
        """Rewrite a cached entry (say, its last use) only while it is cached: an entry
        removed because the key was revoked is never brought back."""
        try:
            self._refresh(
                keys=[keys.api_key(api_key.key_hash)], args=[_document(api_key), FORGOTTEN]
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
        """Remove these keys' entries, leaving a marker that refuses a stale `put`."""
        if not key_hashes:
            return
        try:
            pipe = self._client.pipeline(transaction=False)
            for key_hash in key_hashes:
                pipe.set(keys.api_key(key_hash), FORGOTTEN, ex=FORGOTTEN_SECONDS)
            pipe.execute()
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
            "trusted_writer": api_key.trusted_writer,
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
        trusted_writer=bool(document.get("trusted_writer", False)),
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
