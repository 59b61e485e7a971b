"""Every Redis key the service writes is named here, so a prefix change happens in one place.

Short-term memory keys of one end user share the Redis Cluster hash tag `{tenant:user}`, so a
user's items, indexes and lookups live on one shard and one Lua script can update them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


def _prefix() -> str:
    return settings.REDIS_KEY_PREFIX


@dataclass(frozen=True)
class Owner:
    """Whose short-term memory: a tenant's end user, by primary keys."""

    tenant_id: int
    end_user_id: int

    @property
    def tag(self) -> str:
        return f"{self.tenant_id}:{self.end_user_id}"

    @classmethod
    def from_tag(cls, tag: str) -> Owner:
        tenant_id, end_user_id = tag.split(":")
        return cls(int(tenant_id), int(end_user_id))


def stm_base(owner: Owner) -> str:
    """Common start of one user's short-term keys; the Lua scripts derive the rest from it:

    {base}:item:{id}        hash, one memory item
    {base}:recent           zset id -> updated_at
    {base}:session:{sid}    zset id -> updated_at
    {base}:task:{tid}       zset id -> updated_at
    {base}:entity:{entity}  zset id -> updated_at (entity lower-cased)
    {base}:type:{type}      zset id -> updated_at
    {base}:expire           zset id -> expires_at
    {base}:fp               hash fingerprint -> id
    {base}:ck               hash canonical fact key -> id
    {base}:vec              hash id -> the item's embedding (float16 bytes), set by the worker
    {base}:replaced         hash transcript event id -> the item that replaced its statement
    """
    return f"{_prefix()}:stm:{{{owner.tag}}}"


def stm_tenant_pattern(tenant_id: int) -> str:
    """Glob matching the short-term keys of every end user of one tenant."""
    return f"{_prefix()}:stm:{{{tenant_id}:*"


def stm_item(owner: Owner, item_id: str) -> str:
    return f"{stm_base(owner)}:item:{item_id}"


def stm_index(owner: Owner, name: str, value: str = "") -> str:
    """An index of one user: `recent`, `expire`, or `session`/`task`/`entity`/`type` + value."""
    key = f"{stm_base(owner)}:{name}"
    return f"{key}:{value.lower() if name == 'entity' else value}" if value else key


def stm_expiring() -> str:
    """Users with short-term items, scored by their earliest expiry (lets the sweep find them)."""
    return f"{_prefix()}:stm:expiring"


def query_embedding(*, model: str, digest: str) -> str:
    """Cached embedding of one search query (float32 bytes)."""
    return f"{_prefix()}:emb:{model}:{digest}"


def context_generation(tenant_id: int, user_id: str = "") -> str:
    """Counter bumped when Layer 1 rows behind a cached context change (tenant-wide or a user's)."""
    return f"{_prefix()}:ctx:gen:{tenant_id}" + (f":u:{user_id}" if user_id else "")


def context_document(tenant_id: int, user_id: str = "") -> str:
    """Cached Layer 1 context of a tenant, or of one of its end users (by external id)."""
    return f"{_prefix()}:ctx:doc:{tenant_id}" + (f":u:{user_id}" if user_id else "")


def recall_log() -> str:
    """List of recalls whose side effects (access counts, transcript event) are still to apply."""
    return f"{_prefix()}:recall:log"


def api_key(key_hash: str) -> str:
    """Cached lookup of an active API key by the SHA-256 of its secret."""
    return f"{_prefix()}:apikey:{key_hash}"


def api_key_touched(api_key_id: int) -> str:
    """Set while an API key's last use is recorded for the current minute."""
    return f"{_prefix()}:apikey-used:{api_key_id}"


def reflection_mark(owner: Owner) -> str:
    """`updated_at` of the newest short-term item of a user that reflection has weighed."""
    return f"{_prefix()}:reflect:{owner.tag}"


def reflection_tenant_pattern(tenant_id: int) -> str:
    """Glob matching the reflection marks of every end user of one tenant."""
    return f"{_prefix()}:reflect:{tenant_id}:*"


def history_drain_scheduled() -> str:
    """Set while a drain of the history outbox is queued, so appends share one drain."""
    return f"{_prefix()}:history:drain-scheduled"


def history_audit_position() -> str:
    """The last session primary key the history catch-up job audited (it goes round)."""
    return f"{_prefix()}:history:audit-position"


def history_audit_lacking(session_pk: int) -> str:
    """Set while a session's missing transcript segment has been reported (once a day)."""
    return f"{_prefix()}:history:audit-lacking:{session_pk}"


def heartbeat(role: str) -> str:
    """Set, with a TTL, while a Celery process of this role ("worker", "beat") is alive."""
    return f"{_prefix()}:heartbeat:{role}"


def lock(name: str) -> str:
    return f"{_prefix()}:lock:{name}"


def throttle(*, api_key_id: int, window: int) -> str:
    """Request counter of one API key in one fixed time window."""
    return f"{_prefix()}:throttle:{api_key_id}:{window}"


def admin_login_failures(*, by: str, digest: str) -> str:
    """Failed admin logins in the current window, `by` "username" or "ip" (a digest of it)."""
    return f"{_prefix()}:login-failures:{by}:{digest}"


def all_keys_pattern() -> str:
    """Glob matching every key of this deployment (used to clean up test runs)."""
    return f"{_prefix()}:*"
