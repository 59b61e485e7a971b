"""Heartbeats of the Celery worker and beat: each writes a Redis key with a TTL while it runs,
so /readyz can tell whether anything consumes the queue and schedules the catch-up jobs."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError

from memoryproject import redis_keys as keys
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_client import redis_connection

logger = logging.getLogger(__name__)

ROLES = ("worker", "beat")


def heartbeat_write(*, role: str) -> None:
    """Record that a process of `role` is alive (the key lapses after HEARTBEAT_TTL_SECONDS)."""
    value = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "at": time.time()})
    try:
        redis_connection().set(keys.heartbeat(role), value, ex=settings.HEARTBEAT_TTL_SECONDS)
    except RedisError as exc:
        raise StoreUnavailable(f"Redis: {exc}") from exc


def heartbeat_read(*, role: str) -> dict[str, Any] | None:
    """The last heartbeat of a live process of `role`: host, pid, age in seconds; or None."""
    try:
        raw = redis_connection().get(keys.heartbeat(role))
    except RedisError as exc:
        raise StoreUnavailable(f"Redis: {exc}") from exc
    if raw is None:
        return None
    beat = json.loads(raw)
    return {
        "host": beat["host"],
        "pid": beat["pid"],
        "age_seconds": round(time.time() - beat["at"]),
    }


def heartbeat_start(*, role: str) -> threading.Thread:
    """Write `role`'s heartbeat now and every HEARTBEAT_SECONDS from a daemon thread."""

    def beat() -> None:
        while True:
            try:
                heartbeat_write(role=role)
            except StoreUnavailable as exc:  # Redis is down: /readyz says so too
                logger.warning("%s heartbeat not written: %s", role, exc)
            time.sleep(settings.HEARTBEAT_SECONDS)

    thread = threading.Thread(target=beat, name=f"heartbeat-{role}", daemon=True)
    thread.start()
    return thread
