"""Job locks are leases: renewed while their holder works, free within seconds once it dies,
lost (and refusing their holder's next commit) when Redis stops answering."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryproject import redis_client
from memoryproject import redis_keys as keys
from memoryproject.locks import LeaseLost, redis_lock
from memoryproject.redis_client import redis_connection
from tests.outages import RedisServer

ROOT = Path(__file__).resolve().parents[2]
HOLDER = """
import sys, time, django
django.setup()
from memoryproject.locks import redis_lock
with redis_lock(sys.argv[1], ttl_seconds=600) as lease:
    print("held" if lease else "busy", flush=True)
    time.sleep(600)
"""


def _taken(name: str) -> bool:
    with redis_lock(name, ttl_seconds=60) as lease:
        return lease is not None


@pytest.mark.django_db
def test_a_holder_keeps_its_lock_past_many_leases_while_it_works(settings) -> None:
    settings.LOCK_LEASE_SECONDS = 1
    with redis_lock("renewed", ttl_seconds=60) as lease:
        assert lease is not None
        for _ in range(5):  # 2.5 leases
            time.sleep(0.5)
            assert not _taken("renewed")
            assert lease.held()
        assert 0 < redis_connection().pttl(keys.lock("renewed")) <= 1000
    assert _taken("renewed")  # released at once on exit


@pytest.mark.django_db
def test_a_lock_is_held_at_most_ttl_seconds_even_while_renewed(settings) -> None:
    settings.LOCK_LEASE_SECONDS = 1
    with redis_lock("capped", ttl_seconds=2) as lease:
        assert lease is not None
        time.sleep(3.5)
        assert not lease.held()
        with pytest.raises(LeaseLost):
            lease.ensure()
        assert _taken("capped")


@pytest.mark.django_db
def test_the_lock_of_a_killed_holder_is_taken_over_within_one_lease(settings) -> None:
    lease_seconds = 3
    settings.LOCK_LEASE_SECONDS = lease_seconds
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, "killed-holder"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "LOCK_LEASE_SECONDS": str(lease_seconds),
        },
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        time.sleep(lease_seconds + 1)  # past its first lease: the holder renews it
        assert not _taken("killed-holder")
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
        started = time.perf_counter()
        while not _taken("killed-holder"):
            assert time.perf_counter() - started < lease_seconds + 1.5
            time.sleep(0.1)
        took = time.perf_counter() - started
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
    print(f"lock of a killed holder taken over after {took:.1f}s")  # noqa: T201
    assert took <= lease_seconds + 0.5, took  # not the 600 s the holder asked for


@pytest.fixture
def own_redis(settings) -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    caches = {**settings.CACHES, "default": {**settings.CACHES["default"]}}
    caches["default"]["LOCATION"] = server.url
    settings.CACHES = caches
    redis_client._failed_until.clear()
    yield server
    server.kill()
    redis_client._failed_until.clear()


@pytest.mark.django_db
def test_a_holder_that_cannot_renew_counts_its_lease_lost_and_another_takes_over(
    settings, own_redis
) -> None:
    settings.LOCK_LEASE_SECONDS = 1
    with redis_lock("frozen", ttl_seconds=60) as lease:
        assert lease is not None
        own_redis.freeze()
        time.sleep(2)  # two leases without an answer
        assert not lease.held()
        with pytest.raises(LeaseLost):
            lease.ensure()
        own_redis.thaw()
        redis_client._failed_until.clear()
        # Redis expired the key meanwhile: another run takes the lock, the old holder stays out
        # (its exit does not release what is no longer its own).
        other = redis_lock("frozen", ttl_seconds=60)
        assert other.__enter__() is not None
    assert redis_connection().exists(keys.lock("frozen")) == 1
    other.__exit__(None, None, None)
    assert redis_connection().exists(keys.lock("frozen")) == 0
