"""Every operation declares a typed answer; the suite's client-side check holds answers to it."""

from __future__ import annotations

import json
from typing import Any

from tests.schema_check import openapi_schema, response_problems

METHODS = ("get", "post", "put", "patch", "delete")


class Answer:
    """Just enough of a response for the check."""

    def __init__(self, body: Any, content_type: str = "application/json") -> None:
        self.content = json.dumps(body).encode()
        self._headers = {"Content-Type": content_type}

    def get(self, name: str, default: str = "") -> str:
        return self._headers.get(name, default)

    def json(self) -> Any:
        return json.loads(self.content)


def _typed(schema: dict[str, Any], components: dict[str, Any]) -> bool:
    ref = schema.get("$ref", "")
    if ref:
        return _typed(components[ref.rsplit("/", 1)[-1]], components)
    if schema.get("type") == "array":
        return _typed(schema.get("items", {}), components)
    return bool(schema.get("properties"))


def test_every_operation_answers_a_typed_shape_and_the_errors_it_can_give() -> None:
    schema = openapi_schema()
    components = schema["components"]["schemas"]
    untyped = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            responses = operation["responses"]
            assert {"401", "403", "429", "503"} <= set(responses), (method, path)
            for status, answer in responses.items():
                shape = answer.get("content", {}).get("application/json", {}).get("schema")
                if status.startswith("2") and shape is not None and not _typed(shape, components):
                    untyped.append(f"{method.upper()} {path} {status}")
    assert untyped == []


def _item(**changes: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": "stm_1_ab",
        "user_id": "u1",
        "session_id": "s1",
        "task_id": "",
        "memory_type": "fact",
        "subtype": "",
        "summary": "a fact",
        "detail": {},
        "entities": [],
        "tags": [],
        "source": {"kind": "proposal", "message_ids": [], "tool_call_ids": []},
        "source_kind": "proposal",
        "trust": "untrusted",
        "confidence": 0.5,
        "importance": 0.5,
        "created_at": "2026-01-01T00:00:00+00:00",
        "updated_at": "2026-01-01T00:00:00+00:00",
        "last_access_at": "2026-01-01T00:00:00+00:00",
        "expires_at": "2026-01-02T00:00:00+00:00",
        "fingerprint": "f",
        "canonical_fact_key": "",
        "fact_value": "",
        "version": 1,
        "status": "active",
        "hit_count": 1,
        "sessions": ["s1"],
        "supersedes": "",
        "superseded_by": "",
        "verified": False,
        "remember": False,
    }
    item.update(changes)
    return item


def test_the_check_passes_a_declared_answer() -> None:
    answer = Answer({"items": [_item()], "next_before": None})
    assert response_problems("GET", "v1/memories/stm", 200, answer) == []


def test_the_check_fails_an_undeclared_key_a_wrong_type_and_an_undeclared_status() -> None:
    extra = Answer({"items": [_item(colour="red")], "next_before": None})
    wrong = Answer({"items": [_item(version="one")], "next_before": None})
    assert any("colour" in p for p in response_problems("GET", "v1/memories/stm", 200, extra))
    assert any("version" in p for p in response_problems("GET", "v1/memories/stm", 200, wrong))
    assert response_problems("GET", "v1/memories/stm", 418, Answer({}))


def test_errors_are_checked_against_the_one_error_shape_and_its_codes() -> None:
    known = {"error": {"code": "not_found", "message": "No such item.", "fields": {}}}
    made_up = {"error": {"code": "nope", "message": "?", "fields": {}}}
    route = "v1/memories/<extid:item_id>"
    assert response_problems("GET", route, 404, Answer(known)) == []
    assert response_problems("GET", route, 404, Answer(made_up))
