"""The LLM extractor against a fake chat-completions endpoint served over real HTTP."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memories.write.candidates import Candidate, SourceKind
from memories.write.llm import OpenAICompatibleExtractor, llm_extractor
from memoryproject.errors import StoreUnavailable


@dataclass(frozen=True)
class Context:
    """Stands in for extractors.ExtractionContext: the extractor reads only the ids."""

    user_id: str = "u-1"
    session_id: str = "s-1"
    task_id: str = "bug-456"


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    delay: float = 0.0


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeChatServer(ThreadingHTTPServer):
    """Answers POST /v1/chat/completions with the scripted reply and records every request."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ChatHandler)
        self.reply = Reply()
        self.requests: list[Recorded] = []
        self.released = threading.Event()  # set at teardown so a sleeping handler ends early

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def answer(self, content: Any, status: int = 200, delay: float = 0.0) -> None:
        """Reply like OpenAI, with `content` (JSON-encoded unless a str) as the message."""
        text = content if isinstance(content, str) else json.dumps(content)
        completion = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "fake-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        self.reply = Reply(status, json.dumps(completion).encode(), delay)


class ChatHandler(BaseHTTPRequestHandler):
    server: FakeChatServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        if self.path != "/v1/chat/completions":
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        self.server.requests.append(
            Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw))
        )
        reply = self.server.reply
        if reply.delay and self.server.released.wait(reply.delay):
            return
        self._send(reply.status, reply.body)

    def _send(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up (timeout test)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def chat_server() -> Iterator[FakeChatServer]:
    server = FakeChatServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.released.set()
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture
def extractor(chat_server: FakeChatServer) -> OpenAICompatibleExtractor:
    return OpenAICompatibleExtractor(
        base_url=chat_server.base_url + "/",
        api_key="sk-test",
        model="test-model",
        timeout=5,
        max_event_chars=100,
    )


def event(seq: int, id: str, role: str, content: str, tool_call_id: str = "") -> dict[str, Any]:
    return {
        "seq": seq,
        "id": id,
        "role": role,
        "content": content,
        "tool_call_id": tool_call_id,
        "metadata": {},
        "created_at": "2025-01-01T00:00:00Z",
    }


EVENTS = [
    event(1, "m-1", "user", "createOrder times out; do not touch the payment service."),
    event(2, "m-2", "assistant", "Checking the slow query log."),
    event(3, "m-3", "tool", "slow query: SELECT ... orders 31s", tool_call_id="call-1"),
]


def good(**overrides: Any) -> dict[str, Any]:
    proposal = {
        "memory_type": "observation",
        "subtype": "root_cause",
        "summary": "createOrder times out because the orders query takes 31s.",
        "entities": ["createOrder", "orders"],
        "tags": ["bug"],
        "confidence": 0.9,
        "importance": 0.8,
        "canonical_fact_key": "bug456:createOrder:root_cause",
        "fact_value": "slow orders query",
        "verified": True,
        "message_ids": ["m-3"],
        "tool_call_ids": ["call-1"],
    }
    return {**proposal, **overrides}


def test_request_has_the_openai_shape_and_carries_the_events(
    chat_server: FakeChatServer, extractor: OpenAICompatibleExtractor
) -> None:
    # given an answer with no candidates
    chat_server.answer({"candidates": []})
    long_content = "x" * 100 + "THE-TAIL-BEYOND-THE-LIMIT"
    events = [*EVENTS, event(4, "m-4", "tool", long_content, tool_call_id="call-2")]

    # when the extractor runs
    assert extractor.extract(events=events, context=Context()) == []

    # then one chat completion was posted, authenticated, with the model and JSON mode
    [request] = chat_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    assert request.body["model"] == "test-model"
    assert request.body["temperature"] == 0
    assert request.body["response_format"] == {"type": "json_object"}
    system, user = request.body["messages"]
    assert system["role"] == "system"
    assert '"candidates"' in system["content"]
    assert user["role"] == "user"

    # and every event is a JSON line of the prompt, long content cut at max_event_chars
    lines = [json.loads(line) for line in user["content"].splitlines() if line.startswith("{")]
    assert [(line["id"], line["role"]) for line in lines] == [
        ("m-1", "user"),
        ("m-2", "assistant"),
        ("m-3", "tool"),
        ("m-4", "tool"),
    ]
    assert lines[0]["content"] == EVENTS[0]["content"]
    assert lines[2]["tool_call_id"] == "call-1"
    assert lines[3]["content"].startswith("x" * 100)
    assert len(lines[3]["content"]) <= 101
    assert "THE-TAIL" not in user["content"]


def test_no_authorization_header_without_an_api_key(chat_server: FakeChatServer) -> None:
    chat_server.answer({"candidates": []})
    keyless = OpenAICompatibleExtractor(base_url=chat_server.base_url, api_key="", model="m")

    keyless.extract(events=EVENTS, context=Context())

    [request] = chat_server.requests
    assert "authorization" not in request.headers


def test_no_events_means_no_request(
    chat_server: FakeChatServer, extractor: OpenAICompatibleExtractor
) -> None:
    assert extractor.extract(events=[], context=Context()) == []
    assert chat_server.requests == []


def test_a_good_answer_becomes_llm_candidates(
    chat_server: FakeChatServer, extractor: OpenAICompatibleExtractor
) -> None:
    # given an answer with two well-formed candidates
    constraint = {
        "memory_type": "constraint",
        "summary": "Do not touch the payment service.",
        "message_ids": ["m-1"],
    }
    chat_server.answer({"candidates": [good(), constraint]})

    # when the extractor runs
    candidates = extractor.extract(events=EVENTS, context=Context())

    # then both become candidates of the context's user, session and task, from the LLM
    assert candidates == [
        Candidate(
            user_id="u-1",
            session_id="s-1",
            task_id="bug-456",
            source_kind=SourceKind.LLM,
            memory_type="observation",
            subtype="root_cause",
            summary="createOrder times out because the orders query takes 31s.",
            entities=("createOrder", "orders"),
            tags=("bug",),
            confidence=0.9,
            importance=0.8,
            canonical_fact_key="bug456:createOrder:root_cause",
            fact_value="slow orders query",
            verified=True,
            message_ids=("m-3",),
            tool_call_ids=("call-1",),
        ),
        Candidate(
            user_id="u-1",
            session_id="s-1",
            task_id="bug-456",
            source_kind=SourceKind.LLM,
            memory_type="constraint",
            summary="Do not touch the payment service.",
            message_ids=("m-1",),
        ),
    ]
    assert candidates[0].source_kind == "llm"


def test_scores_are_clamped_and_unknown_ids_dropped(
    chat_server: FakeChatServer, extractor: OpenAICompatibleExtractor
) -> None:
    chat_server.answer(
        {
            "candidates": [
                good(
                    confidence=1.7,
                    importance=-2,
                    message_ids=["m-404", "m-3", "m-3"],
                    tool_call_ids=["call-404", "call-1"],
                )
            ]
        }
    )

    [candidate] = extractor.extract(events=EVENTS, context=Context())

    assert (candidate.confidence, candidate.importance) == (1.0, 0.0)
    assert candidate.message_ids == ("m-3",)
    assert candidate.tool_call_ids == ("call-1",)


@pytest.mark.parametrize(
    ("malformed", "reason"),
    [
        (good(memory_type="rumour"), "memory_type"),
        (good(memory_type=None), "memory_type"),
        (good(summary=""), "summary"),
        (good(summary="   "), "summary"),
        (good(summary=42), "summary"),
        (good(summary="x" * 501), "summary"),
        (good(message_ids=["m-404"]), "message id"),
        (good(message_ids=[]), "message id"),
        (good(message_ids="m-3"), "message_ids"),
        (good(entities="createOrder"), "entities"),
        (good(tags=["ok", 3]), "tags"),
        (good(confidence="high"), "confidence"),
        (good(importance=True), "importance"),
        (good(verified="yes"), "verified"),
        (good(subtype=["root_cause"]), "subtype"),
        (good(fact_value={"v": 1}), "fact_value"),
        ("just a string", "not an object"),
    ],
)
def test_malformed_candidates_are_dropped_and_good_ones_kept(
    chat_server: FakeChatServer,
    extractor: OpenAICompatibleExtractor,
    caplog: pytest.LogCaptureFixture,
    malformed: Any,
    reason: str,
) -> None:
    # given an answer with a malformed candidate between two good ones
    first = good(summary="First good fact.")
    last = good(summary="Last good fact.", message_ids=["m-1"], tool_call_ids=[])
    chat_server.answer({"candidates": [first, malformed, last]})

    # when the extractor runs
    with caplog.at_level(logging.WARNING, logger="memories.write.llm"):
        candidates = extractor.extract(events=EVENTS, context=Context())

    # then only the malformed one is dropped, with a warning naming why
    assert [c.summary for c in candidates] == ["First good fact.", "Last good fact."]
    [record] = [r for r in caplog.records if r.name == "memories.write.llm"]
    assert record.levelno == logging.WARNING
    assert reason in record.getMessage()


def test_http_error_raises_store_unavailable(
    chat_server: FakeChatServer, extractor: OpenAICompatibleExtractor
) -> None:
    chat_server.reply = Reply(500, b'{"error": {"message": "overloaded"}}')

    with pytest.raises(StoreUnavailable, match="LLM extractor: HTTP 500"):
        extractor.extract(events=EVENTS, context=Context())


def test_non_json_body_raises_store_unavailable(
    chat_server: FakeChatServer, extractor: OpenAICompatibleExtractor
) -> None:
    chat_server.reply = Reply(200, b"<html>Bad gateway</html>")

    with pytest.raises(StoreUnavailable, match="LLM extractor"):
        extractor.extract(events=EVENTS, context=Context())


@pytest.mark.parametrize("content", ["not json at all", json.dumps({"facts": []}), "[]"])
def test_an_answer_without_a_candidate_list_raises_store_unavailable(
    chat_server: FakeChatServer, extractor: OpenAICompatibleExtractor, content: str
) -> None:
    chat_server.answer(content)

    with pytest.raises(StoreUnavailable, match="LLM extractor"):
        extractor.extract(events=EVENTS, context=Context())


def test_timeout_raises_store_unavailable(chat_server: FakeChatServer) -> None:
    # given an endpoint slower than the extractor's timeout
    chat_server.answer({"candidates": [good()]}, delay=5)
    impatient = OpenAICompatibleExtractor(
        base_url=chat_server.base_url, api_key="k", model="m", timeout=0.2
    )

    with pytest.raises(StoreUnavailable, match="LLM extractor"):
        impatient.extract(events=EVENTS, context=Context())


def test_unreachable_endpoint_raises_store_unavailable(chat_server: FakeChatServer) -> None:
    # a port that was just free: nothing listens on it
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = closed.server_address[1]
    closed.server_close()
    gone = OpenAICompatibleExtractor(
        base_url=f"http://127.0.0.1:{port}/v1", api_key="k", model="m", timeout=2
    )

    with pytest.raises(StoreUnavailable, match="LLM extractor"):
        gone.extract(events=EVENTS, context=Context())


def test_llm_extractor_is_off_without_a_url(settings: Any) -> None:
    settings.LLM_EXTRACTOR_URL = ""
    assert llm_extractor() is None

    del settings.LLM_EXTRACTOR_URL
    assert llm_extractor() is None


def test_llm_extractor_is_built_from_settings(settings: Any, chat_server: FakeChatServer) -> None:
    # given the extractor configured with a URL and defaults for the rest
    settings.LLM_EXTRACTOR_URL = chat_server.base_url
    settings.LLM_EXTRACTOR_API_KEY = "sk-settings"
    settings.LLM_EXTRACTOR_MODEL = ""
    settings.LLM_EXTRACTOR_TIMEOUT = 3

    built = llm_extractor()

    # then it uses them, with the default model
    assert isinstance(built, OpenAICompatibleExtractor)
    assert built.model == "gpt-4o-mini"
    assert built.timeout == 3.0
    chat_server.answer({"candidates": []})
    built.extract(events=EVENTS, context=Context())
    [request] = chat_server.requests
    assert request.headers["authorization"] == "Bearer sk-settings"
    assert request.body["model"] == "gpt-4o-mini"
