"""A real Celery worker against the real broker: an append is extracted in the background.

The `worker` and `publish_to_broker` fixtures live in tests/memories/conftest.py.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.stm.selectors import stm_items_for
from memoryproject.heartbeats import heartbeat_read


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_extracts_after_an_append(
    tenant, owner: APIClient, worker, publish_to_broker
):
    response = owner.post(
        reverse("transcripts:events", kwargs={"session_id": "s-worker"}),
        {
            "user_id": "u_42",
            "task_id": "bug_456",
            "events": [{"id": "m-1", "role": "user", "content": "必须先在 staging 验证再发布。"}],
        },
        format="json",
        headers={"X-Request-ID": "req-worker-1"},
    )
    assert response.status_code == 201

    deadline = time.monotonic() + 60
    found = []
    while time.monotonic() < deadline and not found:
        found = stm_items_for(tenant=tenant, user_id="u_42").items
        time.sleep(0.2)
    assert worker.poll() is None, "the worker exited"
    assert [(i.memory_type, i.message_ids) for i in found] == [("constraint", ["m-1"])]

    # the task's own log lines carry the request id of the append that enqueued it (the line
    # is written once the items have landed: a loaded machine may take a moment)
    def logged() -> bool:
        log_lines = [
            json.loads(line)
            for line in worker.log_path.read_text().splitlines()
            if line.startswith("{")
        ]
        return any(
            line["request_id"] == "req-worker-1" and line["logger"] == "memories.write.extraction"
            for line in log_lines
        )

    deadline = time.monotonic() + 10
    while not logged() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert logged()
    # and the worker announces itself to /readyz with a heartbeat of its own process
    beat = heartbeat_read(role="worker")
    assert beat is not None and beat["pid"] == worker.pid, beat


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_indexes_appended_turns_as_history(
    tenant, owner: APIClient, worker, publish_to_broker
):
    from memories.history.models import HistoryOutbox
    from memories.history.selectors import history_search

    for batch in range(3):
        response = owner.post(
            reverse("transcripts:events", kwargs={"session_id": "s-history"}),
            {
                "user_id": "u_43",
                "events": [
                    {"id": f"h-{batch}-u", "role": "user", "content": f"Trip {batch} to Kyoto"},
                    {"id": f"h-{batch}-a", "role": "assistant", "content": "Sounds lovely."},
                ],
            },
            format="json",
        )
        assert response.status_code == 201
    assert HistoryOutbox.objects.count() == 3  # one row per append, drained by the worker

    deadline = time.monotonic() + 90
    found: set[str] = set()
    while time.monotonic() < deadline and len(found) < 6:
        hits = history_search(tenant=tenant, user_id="u_43", query="Kyoto trip", k=10).hits
        found = {hit.event_id for hit in hits}
        time.sleep(0.5)
    assert worker.poll() is None, "the worker exited"
    assert found == {f"h-{b}-{r}" for b in range(3) for r in "ua"}
    assert not HistoryOutbox.objects.exists()
    indexed = [
        int(match.group(1))
        for line in worker.log_path.read_text().splitlines()
        if "history_outbox_drain_task" in line and "succeeded" in line
        for match in [re.search(r"indexed (\d+) entries", line)]
        if match
    ]
    # every entry was embedded and written once, by drains the appends shared
    assert sum(indexed) == 6 and 1 <= len(indexed) <= 3


@pytest.mark.django_db
def test_a_real_beat_announces_itself_with_a_heartbeat(tmp_path) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    from memoryproject import redis_keys as keys
    from memoryproject.redis_client import redis_connection

    beat = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memoryproject",
            "beat",
            "--loglevel",
            "WARNING",
            "--schedule",
            str(tmp_path / "schedule"),
        ],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        found = None
        while time.monotonic() < deadline and found is None and beat.poll() is None:
            found = heartbeat_read(role="beat")
            time.sleep(0.2)
    finally:
        beat.terminate()
        beat.wait(timeout=30)
        redis_connection().delete(keys.heartbeat("beat"))
    assert found is not None and found["pid"] == beat.pid, found


class TestAWorkerThatStopsTakingTasks:
    """A consumer that takes nothing while tasks wait (what an ack lost to a frozen broker can
    leave behind) is said in the heartbeat, and the worker restarts itself in place."""

    @pytest.fixture
    def worker_env(self) -> dict[str, str]:
        return {"HEARTBEAT_SECONDS": "1", "WORKER_STALL_RESTART_SECONDS": "3"}

    @pytest.mark.django_db(transaction=True)
    def test_it_says_so_restarts_and_takes_the_waiting_task(
        self, tenant, owner: APIClient, worker, publish_to_broker, settings
    ):
        from memoryproject.celery import app

        queue = settings.CELERY_TASK_DEFAULT_QUEUE
        _wait(
            lambda: (heartbeat_read(role="worker") or {}).get("pid") == worker.pid,
            "the worker's first heartbeat",
        )
        # given: the worker's consumer stops taking from its queue while its loop runs on
        answers = app.control.cancel_consumer(queue, reply=True, timeout=10)
        assert answers and "ok" in next(iter(answers[0].values())), answers
        # when: a task waits
        response = owner.post(
            reverse("transcripts:events", kwargs={"session_id": "s-stall"}),
            {
                "user_id": "u_44",
                "events": [
                    {"id": "m-1", "role": "user", "content": "必须先在 staging 验证再发布。"}
                ],
            },
            format="json",
        )
        assert response.status_code == 201
        # then: the heartbeat says the worker takes nothing (/readyz fails on it) ...
        _wait(
            lambda: (heartbeat_read(role="worker") or {}).get("stalled_seconds", 0) >= 1,
            "a heartbeat that says the worker is stalled",
        )
        # ... the worker restarts in place, consuming again, and the waiting task is done
        _wait(lambda: stm_items_for(tenant=tenant, user_id="u_44").items, "the task taken", 60)
        assert worker.poll() is None, "the worker exited instead of restarting"
        assert "restarting it" in worker.log_path.read_text()
        _wait(
            lambda: (
                "stalled_seconds" not in (heartbeat_read(role="worker") or {"stalled_seconds": 1})
            ),
            "a heartbeat that no longer says so",
        )
        assert heartbeat_read(role="worker")["pid"] == worker.pid  # the same process, exec'd


def _wait(condition, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s: {what}")
