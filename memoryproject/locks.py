"""Redis leases for jobs that must not run twice at once (sweeps, extractions, erasures).

A lock is a short lease (LOCK_LEASE_SECONDS) that a heartbeat thread of the holder renews
while the holder works, for at most `ttl_seconds` in all. A holder that dies (a killed
worker) stops renewing, so its lease lapses and another run takes over within seconds, not
after the whole `ttl_seconds`. A holder that cannot renew (Redis frozen or unreachable)
counts its lease as lost once the last renewal has run out: `Lease.held()` turns false and
`Lease.ensure()` raises LeaseLost, so the holder stops before its next commit. Work whose
commits must be refused to a holder that lost its lease even after it checked (a paused
process) also fences them: each taking of the lock bumps a fencing token the holder writes
with its commits, and a commit carrying an older token is refused (extraction's cursor).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from redis.exceptions import RedisError

from memoryproject import redis_keys as keys
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_client import redis_connection

logger = logging.getLogger(__name__)

# Delete the lock only if it is still ours (it may have expired and been taken by another).
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# Extend the lease only if it is still ours.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


class LeaseLost(Exception):
    """The holder's lease ran out or was taken over: it must stop without committing."""


class Lease:
    """A held lock, renewed in the background until released or `ttl_seconds` have passed."""

    def __init__(self, *, name: str, key: str, token: str, lease: float, ttl: float) -> None:
        self.name, self.key, self.token = name, key, token
        self._lease = lease
        self._client = redis_connection()
        started = time.monotonic()
        self._give_up_at = started + ttl  # the longest hold, as before leases
        # Counted from before the SET was sent, so it never outlasts the key in Redis.
        self._valid_until = started + lease
        self._lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name=f"lease-{name}", daemon=True)

    def held(self) -> bool:
        """Whether the lease is still ours by the last renewal (checked without Redis)."""
        return not self._lost and time.monotonic() < self._valid_until

    def ensure(self) -> None:
        """Raise LeaseLost unless the lease is still held (call it before each commit)."""
        if not self.held():
            raise LeaseLost(f"the lock {self.name!r} was lost; another run may hold it")

    def _renew(self) -> None:
        interval = self._lease / 3
        while not self._stop.wait(interval):
            now = time.monotonic()
            if now >= self._give_up_at or now >= self._valid_until:
                break
            try:
                ours = self._client.eval(_RENEW, 1, self.key, self.token, int(self._lease * 1000))
            except RedisError as exc:
                logger.warning("lock %s not renewed: %s", self.name, exc)
                continue  # still ours until _valid_until; the next beat tries again
            if not ours:
                break
            self._valid_until = now + self._lease
        if not self._stop.is_set():
            self._lost = True
            logger.warning("lock %s lost: its lease ran out", self.name)

    def _start(self) -> None:
        self._thread.start()

    def _release(self) -> None:
        self._stop.set()
        self._thread.join(self._lease)
        try:
            self._client.eval(_RELEASE, 1, self.key, self.token)
        except RedisError as exc:  # it lapses by itself within one lease
            logger.warning("lock %s not released: %s", self.name, exc)


@contextmanager
def redis_lock(name: str, *, ttl_seconds: int) -> Iterator[Lease | None]:
    """Yield a Lease when the lock `name` was taken (held at most ttl_seconds while renewed,
    one lease once its holder stops renewing), else None."""
    key = keys.lock(name)
    token = uuid.uuid4().hex
    lease_seconds = min(float(settings.LOCK_LEASE_SECONDS), float(ttl_seconds))
    lease = Lease(name=name, key=key, token=token, lease=lease_seconds, ttl=ttl_seconds)
    try:
        acquired = bool(redis_connection().set(key, token, nx=True, px=int(lease_seconds * 1000)))
    except RedisError as exc:
        raise StoreUnavailable(f"Redis: {exc}") from exc
    if not acquired:
        yield None
        return
    lease._start()
    try:
        yield lease
    finally:
        lease._release()
