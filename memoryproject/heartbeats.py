"""Heartbeats of the Celery worker and beat: each writes a Redis key with a TTL while it runs,
so /readyz can tell whether anything consumes the queue and schedules the catch-up jobs.

A worker's heartbeat follows its consumer, not just its process: a worker whose event loop
runs but takes nothing while tasks wait and a slot is free (after a frozen broker, an ack that
timed out can hold the consumer's only prefetch slot for good) stops beating, so /readyz turns
red, and after WORKER_STALL_RESTART_SECONDS restarts itself in place, as Celery's own SIGHUP
restart does (a warm shutdown, which puts unacknowledged messages back, then an exec).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError

from memoryproject import redis_keys as keys
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_client import redis_connection

logger = logging.getLogger(__name__)

ROLES = ("worker", "beat")


def heartbeat_write(*, role: str, stalled_seconds: float = 0.0) -> None:
    """Record that a process of `role` is alive (the key lapses after HEARTBEAT_TTL_SECONDS);
    `stalled_seconds` > 0 says it is alive but its consumer has taken nothing for that long."""
    beat = {"host": socket.gethostname(), "pid": os.getpid(), "at": time.time()}
    if stalled_seconds:
        beat["stalled_seconds"] = round(stalled_seconds)
    try:
        redis_connection().set(
            keys.heartbeat(role), json.dumps(beat), ex=settings.HEARTBEAT_TTL_SECONDS
        )
    except RedisError as exc:
        raise StoreUnavailable(f"Redis: {exc}") from exc


def heartbeat_read(*, role: str) -> dict[str, Any] | None:
    """The last heartbeat of a live process of `role`: host, pid, age in seconds and, for a
    worker whose consumer takes nothing, `stalled_seconds`; or None."""
    try:
        raw = redis_connection().get(keys.heartbeat(role))
    except RedisError as exc:
        raise StoreUnavailable(f"Redis: {exc}") from exc
    if raw is None:
        return None
    beat = json.loads(raw)
    found = {
        "host": beat["host"],
        "pid": beat["pid"],
        "age_seconds": round(time.time() - beat["at"]),
    }
    if beat.get("stalled_seconds"):
        found["stalled_seconds"] = beat["stalled_seconds"]
    return found


class ConsumerWatch:
    """Whether the worker's consumer still takes tasks: it is stalled while tasks wait in its
    queues, a slot of its pool is free and nothing has been taken since the wait was seen."""

    def __init__(
        self, *, queue_depth: Callable[[], int], busy: Callable[[], bool], clock=time.monotonic
    ) -> None:
        self._queue_depth = queue_depth
        self._busy = busy
        self._clock = clock
        self._last_taken = clock()
        self._waiting_since: float | None = None

    def taken(self) -> None:
        self._last_taken = self._clock()

    def stalled_seconds(self) -> float:
        """How long tasks have waited for a free consumer that takes none (0: it consumes)."""
        now = self._clock()
        try:
            waiting = not self._busy() and self._queue_depth() > 0
        except Exception:  # the broker is down: /readyz says so through its own check
            waiting = False
        if not waiting:
            self._waiting_since = None
            return 0.0
        if self._waiting_since is None or self._last_taken > self._waiting_since:
            self._waiting_since = now
            return 0.0
        return now - self._waiting_since


def redis_queue_depth(broker_url: str, queues: Sequence[str]) -> Callable[[], int]:
    """Messages waiting in `queues` of a Redis broker (kombu keeps a queue as a list, with one
    more list per priority step); 0 for another broker, whose depth this does not read."""
    if not broker_url.startswith(("redis://", "rediss://")):
        return lambda: 0
    import redis

    client = redis.Redis.from_url(
        broker_url,
        socket_timeout=settings.REDIS_SOCKET_TIMEOUT_SECONDS,
        socket_connect_timeout=settings.REDIS_CONNECT_TIMEOUT_SECONDS,
    )
    names = [f"{queue}{suffix}" for queue in queues for suffix in ("", *_PRIORITY_SUFFIXES)]

    def depth() -> int:
        pipe = client.pipeline(transaction=False)
        for name in names:
            pipe.llen(name)
        return sum(pipe.execute())

    return depth


# kombu's Redis transport: a message with priority 3, 6 or 9 waits in `<queue>\x06\x16<step>`.
_PRIORITY_SUFFIXES = tuple(f"\x06\x16{step}" for step in (3, 6, 9))


def _restart_worker_in_place() -> None:
    """What Celery's SIGHUP does: stop the worker warmly, then exec the same command line."""
    from celery.worker import state

    def exec_again() -> None:
        # The interpreter's own command line (`-m celery …` or the `celery` script), as given.
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])

    atexit.register(exec_again)
    state.should_stop = 0


def heartbeat_start(
    *,
    role: str,
    watch: ConsumerWatch | None = None,
    restart: Callable[[], None] | None = None,
    stop: threading.Event | None = None,
) -> threading.Thread:
    """Write `role`'s heartbeat now and every HEARTBEAT_SECONDS from a daemon thread. With a
    `watch`, a stalled consumer is said in the heartbeat, and after WORKER_STALL_RESTART_SECONDS
    of it `restart` is called (by default the worker restarts itself in place)."""
    restart = restart or _restart_worker_in_place
    stop = stop or threading.Event()

    def beat() -> None:
        restarting = False
        while not stop.is_set():
            stalled = watch.stalled_seconds() if watch else 0.0
            heartbeat_once(role=role, stalled_seconds=stalled)
            limit = settings.WORKER_STALL_RESTART_SECONDS
            if limit and stalled >= limit and not restarting:
                logger.error("the %s has taken no task for %.0f s; restarting it", role, stalled)
                restarting = True
                restart()
            stop.wait(settings.HEARTBEAT_SECONDS)

    thread = threading.Thread(target=beat, name=f"heartbeat-{role}", daemon=True)
    thread.start()
    return thread


def heartbeat_once(*, role: str, stalled_seconds: float = 0.0) -> bool:
    """One beat; False when Redis did not take it."""
    if stalled_seconds:
        logger.error(
            "the %s takes no task: tasks have waited %.0f s with a slot free", role, stalled_seconds
        )
    try:
        heartbeat_write(role=role, stalled_seconds=stalled_seconds)
    except StoreUnavailable as exc:  # Redis is down: /readyz says so too
        logger.warning("%s heartbeat not written: %s", role, exc)
        return False
    return True
