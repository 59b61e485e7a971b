from __future__ import annotations

import logging

import pytest
from django.test import Client

from memories.ltm.search import card_search_index
from memoryproject import redis_keys as keys
from memoryproject.heartbeats import ROLES, heartbeat_write
from memoryproject.logging import JsonFormatter, RequestIdFilter
from memoryproject.redis_client import redis_connection
from transcripts.storage import PROBE_FOLDER
from wiring import health


@pytest.fixture
def unreachable_elasticsearch(settings):
    settings.ELASTICSEARCH_URL = "http://127.0.0.1:1"
    card_search_index.cache_clear()
    yield
    card_search_index.cache_clear()


def test_healthz_answers_without_touching_stores(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "alive"}


@pytest.mark.django_db
def test_readyz_checks_every_store_and_both_collections_with_latency(client: Client) -> None:
    response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 200, body
    assert set(body["checks"]) == {
        "postgres",
        "redis",
        "elasticsearch",
        "milvus",
        "milvus_history",
        "broker",
        "worker",
        "beat",
        "transcript_storage",
        "history_index",
    }
    stores = {name: c for name, c in body["checks"].items() if name not in ("worker", "beat")}
    assert all(check["ok"] and check["latency_ms"] >= 0 for check in stores.values())
    lag = body["checks"]["history_index"]
    assert lag["pending_events"] == 0 and lag["within_bound"] is True
    assert lag["unqueued_sessions"] == 0
    # No worker or beat runs beside the suite, which does not require them: reported only.
    assert body["warnings"] == ["beat", "worker"]
    assert body["checks"]["worker"] == {
        "ok": False,
        "required": False,
        "latency_ms": body["checks"]["worker"]["latency_ms"],
        "error": "LookupError: no worker heartbeat within 30s; is the worker running?",
    }


@pytest.fixture
def fresh_probes(settings):
    settings.READYZ_STORAGE_PROBE_SECONDS = 0
    health._cached_results.clear()
    yield
    health._cached_results.clear()


@pytest.fixture
def heartbeats():
    yield heartbeat_write
    redis_connection().delete(*(keys.heartbeat(role) for role in ROLES))


@pytest.mark.django_db
def test_readyz_requires_a_live_worker_and_beat_when_told_to(
    client: Client, settings, heartbeats
) -> None:
    settings.READYZ_REQUIRE_WORKERS = True
    missing = client.get("/readyz")
    assert missing.status_code == 503
    assert missing.json()["failing"] == ["beat", "worker"]
    assert missing.json()["warnings"] == []

    heartbeats(role="worker")
    assert client.get("/readyz").json()["failing"] == ["beat"]
    heartbeats(role="beat")
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.json()
    worker = ready.json()["checks"]["worker"]
    assert worker["ok"] is True and "required" not in worker
    ttl = redis_connection().ttl(keys.heartbeat("worker"))
    assert 0 < ttl <= settings.HEARTBEAT_TTL_SECONDS  # lapses unless written again


@pytest.mark.django_db
def test_a_worker_that_takes_no_task_fails_readiness_though_its_process_beats(
    client: Client, settings, heartbeats
) -> None:
    settings.READYZ_REQUIRE_WORKERS = True
    heartbeats(role="beat")
    heartbeats(role="worker", stalled_seconds=12.4)
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["failing"] == ["worker"]
    assert answer.json()["checks"]["worker"]["error"] == (
        "LookupError: the worker takes no task: tasks have waited 12s with a slot free"
    )
    heartbeats(role="worker")  # it took a task again
    assert client.get("/readyz").status_code == 200


@pytest.mark.django_db
def test_readyz_fails_while_transcript_storage_refuses_writes(
    client: Client, settings, tmp_path, fresh_probes
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    storages = {**settings.STORAGES}
    storages["transcripts"] = {
        **storages["transcripts"],
        "OPTIONS": {**storages["transcripts"]["OPTIONS"], "location": str(blocker / "t")},
    }
    settings.STORAGES = storages  # every write below it fails: its parent is a file

    response = client.get("/readyz")

    body = response.json()
    assert response.status_code == 503
    assert body["failing"] == ["transcript_storage"]
    assert "refused a write" in body["checks"]["transcript_storage"]["error"]


@pytest.mark.django_db
def test_the_storage_probe_leaves_nothing_and_is_reused_for_a_few_seconds(
    client: Client, settings
) -> None:
    from pathlib import Path

    settings.READYZ_STORAGE_PROBE_SECONDS = 60
    health._cached_results.clear()
    first = client.get("/readyz").json()["checks"]["transcript_storage"]
    again = client.get("/readyz").json()["checks"]["transcript_storage"]
    health._cached_results.clear()
    assert first["ok"] is True and "cached" not in first
    assert again == {**first, "cached": True}
    root = Path(settings.STORAGES["transcripts"]["OPTIONS"]["location"])
    assert not [p for p in (root / PROBE_FOLDER).glob("*")]


@pytest.mark.django_db(transaction=True)  # the check reads from a thread of its own
def test_readyz_warns_of_sessions_whose_history_no_outbox_row_covers(
    client: Client, owner, fresh_probes
) -> None:
    from datetime import timedelta

    from django.urls import reverse
    from django.utils import timezone

    from memories.history.models import HistoryCursor, HistoryOutbox
    from transcripts.models import Session

    response = owner.post(
        reverse("transcripts:events", kwargs={"session_id": "s-gap"}),
        {"user_id": "u_1", "events": [{"role": "user", "content": "Trip to Kyoto"}]},
        format="json",
    )
    assert response.status_code == 201
    # As if the append's outbox row was lost before it was drained: no row, no cursor.
    HistoryOutbox.objects.all().delete()
    HistoryCursor.objects.all().delete()
    Session.objects.update(last_event_at=timezone.now() - timedelta(minutes=5))

    response = client.get("/readyz")

    body = response.json()
    assert response.status_code == 200  # a lag is reported, it does not fail readiness
    assert body["checks"]["history_index"]["unqueued_sessions"] == 1
    assert "history_index" in body["warnings"]


@pytest.mark.django_db
def test_readyz_names_a_failing_store(client: Client, unreachable_elasticsearch) -> None:
    response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 503
    assert body["failing"] == ["elasticsearch"]
    assert body["checks"]["elasticsearch"]["ok"] is False
    assert body["checks"]["redis"]["ok"] is True


def test_request_id_is_echoed_and_generated(client: Client) -> None:
    given = client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    made = client.get("/healthz", headers={"X-Request-ID": "bad id with spaces"})
    assert given["X-Request-ID"] == "abc-123"
    assert len(made["X-Request-ID"]) == 32


def test_log_lines_are_json_with_the_request_id() -> None:
    import json

    from memoryproject.logging import _request_id

    token = _request_id.set("req-1")
    try:
        record = logging.makeLogRecord({"msg": "hello %s", "args": ("x",), "levelname": "INFO"})
        record.session_id = "s-1"
        RequestIdFilter().filter(record)
        line = json.loads(JsonFormatter().format(record))
    finally:
        _request_id.reset(token)
    assert line["message"] == "hello x"
    assert line["request_id"] == "req-1"
    assert line["session_id"] == "s-1"


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")
def test_tasks_enqueued_during_a_request_carry_its_request_id() -> None:
    from kombu import Connection

    from memoryproject.celery import app
    from memoryproject.logging import _request_id

    queue_name = f"{app.conf.task_default_queue}-probe"
    token = _request_id.set("req-42")
    try:
        app.send_task("memory.probe", queue=queue_name)
    finally:
        _request_id.reset(token)
    with Connection(app.conf.broker_url) as conn:
        queue = conn.SimpleQueue(queue_name)
        message = queue.get(timeout=5)
        message.ack()
        queue.queue.delete()  # the probe queue and its binding leave the broker
        queue.close()
    assert message.headers["request_id"] == "req-42"


def test_each_request_writes_one_json_access_line_with_its_request_id(client: Client) -> None:
    import io
    import json

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("memoryproject.request")
    logger.addHandler(handler)
    try:
        client.get("/healthz", headers={"X-Request-ID": "trace-7"})
    finally:
        logger.removeHandler(handler)

    (line,) = [json.loads(text) for text in stream.getvalue().splitlines()]
    assert line["request_id"] == "trace-7"
    assert (line["method"], line["path"], line["status"]) == ("GET", "/healthz", 200)
    assert line["duration_ms"] >= 0
