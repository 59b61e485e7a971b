from __future__ import annotations

import logging

import pytest
from django.test import Client

from memories.ltm.search import card_search_index
from memoryproject.logging import JsonFormatter, RequestIdFilter


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
        "history_index",
    }
    assert all(check["ok"] and check["latency_ms"] >= 0 for check in body["checks"].values())
    lag = body["checks"]["history_index"]
    assert lag["pending_events"] == 0 and lag["within_bound"] is True


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
