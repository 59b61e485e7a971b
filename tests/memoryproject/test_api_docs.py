"""The API docs pages render offline: every script, style and icon they load is the service's
own and is served."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from memoryproject.schema import ERROR_COMPONENT

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
