"""The API docs pages render offline (every script, style and icon they load is the service's
own and is served) and read in the order of an agent's loop: tags with descriptions, readable
operation ids and summaries."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from django.conf import settings
from drf_spectacular.generators import SchemaGenerator

from memoryproject import schema as service_schema
from memoryproject.schema import ERROR_COMPONENT, OPERATION_ORDER

pytestmark = pytest.mark.django_db


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "script" and found.get("src"):
            self.urls.append(found["src"] or "")
        if tag == "link" and found.get("href"):
            self.urls.append(found["href"] or "")


@pytest.mark.parametrize("page", ["/api/docs/", "/api/redoc/"])
def test_docs_pages_load_only_local_assets_and_each_is_served(live_server, page: str) -> None:
    with httpx.Client(base_url=live_server.url, timeout=30) as http:
        answer = http.get(page)
        assert answer.status_code == 200
        assert "text/html" in answer.headers["content-type"]
        parser = _Assets()
        parser.feed(answer.text)
        assert any(url.endswith(".js") for url in parser.urls), parser.urls
        for url in parser.urls:
            absolute = urljoin(live_server.url + page, url)
            assert urlsplit(absolute).netloc == urlsplit(live_server.url).netloc, url
            assert http.get(absolute).status_code == 200, absolute
        assert "https://" not in answer.text and "http://" not in answer.text
        schema = http.get("/api/schema/", headers={"Accept": "application/json"})
        assert schema.status_code == 200
        assert ERROR_COMPONENT in schema.json()["components"]["schemas"]


def test_the_card_delete_operation_says_it_asks_for_a_review(client) -> None:
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    card = schema["paths"]["/v1/ltm/cards/{memory_id}"]
    assert "202" in card["delete"]["responses"]
    assert "reviewer approves" in card["delete"]["description"]
    assert "removes nothing yet" in card["delete"]["description"]


METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def _in_order(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def test_tags_are_described_and_listed_in_the_order_of_the_loop(schema) -> None:
    names = [tag["name"] for tag in schema["tags"]]
    assert names == [tag["name"] for tag in settings.SPECTACULAR_SETTINGS["TAGS"]]
    assert names[:3] == ["Transcripts", "Recall", "Memories"]
    assert all(len(tag["description"]) > 40 for tag in schema["tags"])
    assert "a second or so" in schema["tags"][0]["description"]  # extraction is asynchronous


def test_operations_follow_the_loop_tag_by_tag(schema) -> None:
    names = [tag["name"] for tag in schema["tags"]]
    operations = _in_order(schema)
    assert [op["operationId"] for _, _, op in operations] == list(OPERATION_ORDER)
    assert operations[0][:2] == ("post", "/v1/sessions/{session_id}/events")
    tag_positions = []
    for _, _, operation in operations:
        assert len(operation["tags"]) == 1, operation["operationId"]
        tag_positions.append(names.index(operation["tags"][0]))
    assert tag_positions == sorted(tag_positions)  # each tag's operations together, in order
    assert set(tag_positions) == set(range(len(names)))  # no tag left empty


def test_operation_ids_and_summaries_read_as_words(schema) -> None:
    for method, path, operation in _in_order(schema):
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", operation["operationId"]), (method, path)
        summary = operation["summary"]
        assert summary[0].isupper() and "_" not in summary and len(summary) < 60, summary


def test_swagger_ui_keeps_the_schema_order_and_shows_the_ids() -> None:
    ui = settings.SPECTACULAR_SETTINGS["SWAGGER_UI_SETTINGS"]
    assert "operationsSorter" not in ui and "tagsSorter" not in ui
    assert ui["displayOperationId"] is True


def test_an_operation_left_out_of_the_order_is_a_warning(monkeypatch) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(service_schema, "warn", warnings.append)
    result = {
        "tags": [{"name": "Recall", "description": "..."}],
        "paths": {
            "/v1/new": {"get": {"operationId": "new_thing", "tags": ["Elsewhere"]}},
            "/v1/recall": {"post": {"operationId": "recall", "tags": ["Recall"]}},
        },
    }
    ordered = service_schema.order_operations(result)
    assert list(ordered["paths"]) == ["/v1/recall", "/v1/new"]
    assert len(warnings) == 2
    assert "new_thing" in warnings[0] and "OPERATION_ORDER" in warnings[0]
    assert "Elsewhere" in warnings[1]
