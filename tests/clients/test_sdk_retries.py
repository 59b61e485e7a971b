"""The client's retry rules, on answers a stand-in transport gives (timing and lost answers
cannot be staged on the real service at will; test_sdk_live.py covers the real 429)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from agent_memory_client import MemoryClient, RetryPolicy, StoreUnavailable, TransportError
from agent_memory_client._core import retry_after_seconds

UNAVAILABLE = {"error": {"code": "store_unavailable", "message": "Redis is down.", "fields": {}}}


def _client(handler, waits: list[float], retries: int = 3) -> MemoryClient:
    return MemoryClient(
        "http://memory.test",
        api_key="k",
        transport=httpx.MockTransport(handler),
        retry=RetryPolicy(retries=retries, backoff=1.0, max_backoff=4.0),
        sleep=waits.append,
    )


def test_a_503_is_retried_after_what_retry_after_says_then_succeeds() -> None:
    answers = iter(
        [
            httpx.Response(503, json=UNAVAILABLE, headers={"Retry-After": "5"}),
            httpx.Response(503, json=UNAVAILABLE),  # no header: backoff
            httpx.Response(200, json={"memory_id": "ltm_1"}),
        ]
    )
    waits: list[float] = []
    with _client(lambda request: next(answers), waits) as memory:
        assert memory.get_card("ltm_1") == {"memory_id": "ltm_1"}
    assert waits[0] == 5.0
    assert 0 <= waits[1] <= 2.0  # full jitter up to backoff · 2^1


def test_retries_run_out_into_the_exception_of_the_code() -> None:
    waits: list[float] = []
    answer = httpx.Response(503, json=UNAVAILABLE, headers={"Retry-After": "1"})
    memory = _client(lambda request: answer, waits, retries=2)
    with memory, pytest.raises(StoreUnavailable) as failed:
        memory.recall(user_id="u", session_id="s", query="q")
    assert waits == [1.0, 1.0]
    assert failed.value.retry_after == 1.0 and failed.value.status == 503


def test_no_answer_is_retried_only_where_a_repeat_is_safe() -> None:
    calls: list[str] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        raise httpx.ConnectError("refused", request=request)

    waits: list[float] = []
    with _client(refuse, waits, retries=2) as memory:
        with pytest.raises(TransportError):
            memory.recall(user_id="u", session_id="s", query="q")  # recorded: not repeated
        assert calls == ["/v1/recall"]
        with pytest.raises(TransportError):
            memory.append_events("s", user_id="u", events=[{"role": "user", "content": "hi"}])
    assert calls.count("/v1/sessions/s/events") == 3


def test_every_retry_of_an_append_sends_the_same_event_ids() -> None:
    bodies: list[bytes] = []

    def flaky(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        if len(bodies) == 1:
            return httpx.Response(
                429, json={"error": {"code": "throttled", "message": "", "fields": {}}}
            )
        return httpx.Response(201, json={"created": True})

    with _client(flaky, []) as memory:
        memory.append_events("s", user_id="u", events=[{"role": "user", "content": "hi"}])
    assert len(bodies) == 2 and bodies[0] == bodies[1] and b'"id":"evt-' in bodies[0]


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after_seconds("7") == 7.0
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 28 <= (retry_after_seconds(later) or 0) <= 30
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None
