"""A worker's heartbeat follows its consumer: tasks waiting in its queue, a slot free and none
taken is a stall, said in the heartbeat, and a long one restarts the worker."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.conf import settings as django_settings

from memoryproject import redis_keys as keys
from memoryproject.heartbeats import (
    ConsumerWatch,
    heartbeat_read,
    heartbeat_start,
    redis_queue_depth,
)
from memoryproject.redis_client import redis_connection


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def queue():
    """A queue of its own on the test broker, as kombu keeps one: a Redis list."""
    import redis

    name = f"test-queue-{uuid.uuid4().hex[:8]}"
    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    yield name, broker
    broker.delete(name, *(f"{name}\x06\x16{step}" for step in (3, 6, 9)))


def test_tasks_waiting_with_a_slot_free_and_none_taken_is_a_stall(queue) -> None:
    name, broker = queue
    clock = Clock()
    watch = ConsumerWatch(
        queue_depth=redis_queue_depth(django_settings.CELERY_BROKER_URL, [name]),
        busy=lambda: False,
        clock=clock,
    )
    assert watch.stalled_seconds() == 0.0  # nothing waits

    broker.rpush(name, "task-1")
    broker.rpush(f"{name}\x06\x169", "task-2")  # a priority step's list counts too
    assert watch.stalled_seconds() == 0.0  # the wait is only seen now
    clock.now += 4
    assert watch.stalled_seconds() == 4.0
    clock.now += 3
    assert watch.stalled_seconds() == 7.0

    clock.now += 1
    watch.taken()  # the consumer took one: the count starts again
    assert watch.stalled_seconds() == 0.0
    clock.now += 2
    assert watch.stalled_seconds() == 2.0

    broker.delete(name, f"{name}\x06\x169")
    assert watch.stalled_seconds() == 0.0


def test_a_busy_pool_or_an_unreadable_broker_is_no_stall(queue) -> None:
    name, broker = queue
    broker.rpush(name, "task-1")
    clock = Clock()
    busy = ConsumerWatch(
        queue_depth=redis_queue_depth(django_settings.CELERY_BROKER_URL, [name]),
        busy=lambda: True,
        clock=clock,
    )
    unreadable = ConsumerWatch(
        queue_depth=redis_queue_depth("redis://127.0.0.1:1/0", [name]),
        busy=lambda: False,
        clock=clock,
    )
    for _ in range(3):
        clock.now += 10
        assert busy.stalled_seconds() == 0.0
        assert unreadable.stalled_seconds() == 0.0
    assert redis_queue_depth("amqp://127.0.0.1//", [name])() == 0  # not read off Redis


def test_a_stall_is_said_in_the_heartbeat_and_a_long_one_restarts_the_worker(settings) -> None:
    settings.HEARTBEAT_SECONDS = 1
    settings.WORKER_STALL_RESTART_SECONDS = 20
    role = f"test-worker-{uuid.uuid4().hex[:6]}"
    stalled = [0.0]

    class Watch(ConsumerWatch):
        def stalled_seconds(self) -> float:
            return stalled[0]

    restarted = threading.Event()
    stop = threading.Event()
    watch = Watch(queue_depth=lambda: 0, busy=lambda: False)
    try:
        heartbeat_start(role=role, watch=watch, restart=restarted.set, stop=stop)
        _wait_for(lambda: heartbeat_read(role=role) is not None)
        assert "stalled_seconds" not in heartbeat_read(role=role)

        stalled[0] = 5.0
        _wait_for(lambda: heartbeat_read(role=role).get("stalled_seconds") == 5)
        assert not restarted.is_set()  # not yet long enough

        stalled[0] = 21.0
        assert restarted.wait(timeout=5)
    finally:
        stop.set()
        redis_connection().delete(keys.heartbeat(role))


def _wait_for(condition, timeout: float = 5.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        done.wait(0.05)
    raise AssertionError("not within the time")
