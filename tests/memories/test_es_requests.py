"""The requests the card and history adapters send to Elasticsearch, call by call.

`es_requests.json` holds the requests the adapters sent, and what each call returned, when
their mappings and queries were hand-written dicts; the `elasticsearch.dsl` builders must send
the same requests and get the same answers. Each call runs
against the real stand-in (so it must accept every body), through a client whose transport
records what goes over the wire. Set ES_REQUESTS_RECORD=1 to rewrite the file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest
from django.conf import settings
from elasticsearch import Elasticsearch

from memories.history.documents import HistoryDocument, HistoryScope
from memories.history.search import ElasticsearchHistoryIndex
from memories.ltm.scope import CardDocument, Scope
from memories.ltm.search import ElasticsearchCardIndex
from memoryproject.elasticsearch import TimedTransport

RECORDED = Path(__file__).with_name("es_requests.json")
MAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
JUNE = datetime(2023, 6, 20, 9, 0, tzinfo=UTC)


class RecordingTransport(TimedTransport):
    """The project's timed transport, keeping (method, target, body) of every request."""

    sent: list[tuple[str, str, Any]]

    def perform_request(self, method: str, target: str, *args: Any, **kwargs: Any) -> Any:
        self.sent.append((method, target, kwargs.get("body")))
        return super().perform_request(method, target, *args, **kwargs)


def _source_keys(value: Any) -> list[str]:
    return sorted(value.split(",")) if isinstance(value, str) else sorted(value)


def _short_sort(entry: Any) -> Any:
    if isinstance(entry, dict) and len(entry) == 1:
        ((field, order),) = entry.items()
        if isinstance(order, dict) and list(order) == ["order"]:
            return {field: order["order"]}
    return entry


def canonical(value: Any) -> Any:
    """Order-free where Elasticsearch ignores order: keys, and the clauses of a bool query.
    Empty bool clauses are dropped (an empty `must_not` excludes nothing), and a sort on a field
    is written in its short form (`{"f": "asc"}` is `{"f": {"order": "asc"}}`)."""
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            if key in ("filter", "must", "must_not", "should") and isinstance(item, list):
                if not item:
                    continue
                item = sorted((canonical(c) for c in item), key=lambda c: json.dumps(c))
            elif key == "sort" and isinstance(item, list):
                item = [_short_sort(canonical(entry)) for entry in item]
            else:
                item = canonical(item)
            result[key] = item
        return result
    if isinstance(value, list):
        return [canonical(item) for item in value]
    return value


def request(method: str, target: str, body: Any, prefix: str) -> dict[str, Any]:
    """One request with the run's names replaced and `_source` filtering in one place: a
    `_source_includes` URL parameter and a body `_source.includes` ask the same thing."""
    url = urlsplit(target)
    path = re.sub(r"-v1-\d{13}", "-v1-{ms}", unquote(url.path).replace(prefix, "{prefix}"))
    params = dict(parse_qsl(url.query))
    body = json.loads(json.dumps(body, default=str)) if isinstance(body, dict) else None
    if "_source_includes" in params:
        body = {**(body or {}), "_source": {"includes": params.pop("_source_includes")}}
    if body and isinstance(body.get("_source"), dict) and "includes" in body["_source"]:
        body["_source"]["includes"] = _source_keys(body["_source"]["includes"])
    if body and isinstance(body.get("_source"), list):
        body["_source"] = {"includes": _source_keys(body["_source"])}
    if body and "template" in body:  # bodies naming the run's index pattern
        body = json.loads(json.dumps(body).replace(prefix, "{prefix}"))
    return {"method": method, "path": path, "params": params, "body": canonical(body)}


def card(n: int, **fields: Any) -> CardDocument:
    base = {
        "tenant_id": "t1",
        "user_id": "u1" if n % 2 else "",
        "project_id": "",
        "memory_type": "fact",
        "title": f"card {n}",
        "summary": "",
        "content": "",
        "bm25_text": f"coffe morn {n}",
        "status": "active",
        "occurred_at": MAY.isoformat(),
    }
    return CardDocument(memory_id=f"mem_{n:05d}", version=1, fields={**base, **fields})


def entry(seq: int, **fields: Any) -> HistoryDocument:
    base: dict[str, Any] = {
        "entry_id": f"hist_7_{seq}",
        "tenant_id": "t1",
        "user_id": "u1",
        "session_id": "s1" if seq % 2 else "s2",
        "session_pk": 7 if seq % 2 else 8,
        "seq": seq,
        "event_id": f"e{seq}",
        "role": "user",
        "occurred_at": MAY,
        "text": f"coffee {seq}",
        "context": "",
        "bm25_text": f"coffe {seq}",
        "bm25_context": "morn",
    }
    return HistoryDocument(**{**base, **fields})


def card_calls(index: ElasticsearchCardIndex) -> dict[str, Any]:
    """A representative call of every card-index request; named, in a fixed order."""
    return {
        "ensure (fresh)": lambda: index.ensure(),
        "ensure (existing alias)": lambda: index.ensure(),
        "upsert": lambda: index.upsert(documents=[card(n) for n in range(1001)]),
        "search (tenant)": lambda: index.search(text="coffe", scope=Scope("t1"), limit=10),
        "search (full scope, timeout)": lambda: index.search(
            text="coffe morn",
            scope=Scope(
                "t1",
                user_ids=("u1", "u2"),
                project_id="p1",
                memory_types=("fact", "event"),
                statuses=("active", "archived"),
            ),
            limit=5,
            timeout=3.0,
        ),
        "search (no users)": lambda: index.search(
            text="coffe", scope=Scope("t1", user_ids=()), limit=3
        ),
        "get_many": lambda: index.get_many(ids=["mem_00001", "mem_00002"], timeout=2.0),
        "ids_where (tenant)": lambda: index.ids_where(tenant_id="t1"),
        "ids_where (ids)": lambda: index.ids_where(tenant_id="t1", ids=["mem_00001", "x"]),
        "ids_where (user)": lambda: index.ids_where(tenant_id="t1", user_id="u1"),
        "matching_texts": lambda: index.matching_texts(tenant_id="t1", text="morn 3", limit=4),
        "versions": lambda: list(index.versions()),
        "remove (versions)": lambda: index.remove(versions={"mem_00003": 2}),
        "remove_ids": lambda: index.remove_ids(ids=["mem_00005", "mem_00007"]),
        "remove_user": lambda: index.remove_user(tenant_id="t1", user_id="u1"),
        "remove_tenant": lambda: index.remove_tenant(tenant_id="t1"),
        "new_index": lambda: index.new_index(),
        "drop": lambda: index.drop(),
    }


def history_calls(index: ElasticsearchHistoryIndex) -> dict[str, Any]:
    """A representative call of every history-index request; named, in a fixed order."""
    scope = HistoryScope("t1", "u1")
    return {
        "ensure (fresh)": lambda: index.ensure(),
        "ensure (existing)": lambda: index.ensure(),
        "upsert": lambda: index.upsert(documents=[entry(n) for n in range(1, 1002)]),
        "search": lambda: index.search(text="coffe", scope=scope, limit=10),
        "search (time range, session left out, timeout)": lambda: index.search(
            text="coffe morn",
            scope=HistoryScope("t1", "u1", since=MAY, until=JUNE, exclude_session_id="s2"),
            limit=5,
            context_weight=0.4,
            timeout=3.0,
        ),
        "search (since only, no context)": lambda: index.search(
            text="coffe", scope=HistoryScope("t1", "u1", since=MAY), limit=5, context_weight=0
        ),
        "search (until only)": lambda: index.search(
            text="coffe", scope=HistoryScope("t1", "u1", until=JUNE), limit=5
        ),
        "ids_where (tenant)": lambda: index.ids_where(tenant_id="t1", limit=50),
        "ids_where (ids and user)": lambda: index.ids_where(
            tenant_id="t1", ids=["hist_7_1", "hist_7_2"], user_id="u1"
        ),
        "count_where (tenant)": lambda: index.count_where(tenant_id="t1"),
        "count_where (user)": lambda: index.count_where(tenant_id="t1", user_id="u1"),
        "entries_of": lambda: list(index.entries_of(tenant_id="t1", user_id="u1")),
        "stored (all)": lambda: list(index.stored()),
        "stored (tenant)": lambda: list(index.stored(tenant_id="t1")),
        "remove_ids": lambda: index.remove_ids(ids=["hist_7_1"]),
        "remove_user": lambda: index.remove_user(tenant_id="t1", user_id="u9"),
        "remove_tenant (keep sessions)": lambda: index.remove_tenant(
            tenant_id="t1", keep_sessions=[7]
        ),
        "remove_tenant": lambda: index.remove_tenant(tenant_id="t1"),
        "drop": lambda: index.drop(),
    }


def answer(value: Any, prefix: str) -> Any:
    """What a call returned, as JSON with the run's names replaced."""

    def plain(item: Any) -> Any:
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return dataclasses.asdict(item)
        return str(item)

    text = json.dumps(value, default=plain, sort_keys=True).replace(prefix, "{prefix}")
    text = re.sub(r"-v1-\d{13}", "-v1-{ms}", text)
    plain_value = json.loads(text)
    if isinstance(plain_value, list | dict) and len(plain_value) > 12:  # a scan: its digest
        return {"count": len(plain_value), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    return plain_value


def sent_by(calls: dict[str, Any], client: Elasticsearch, prefix: str) -> dict[str, Any]:
    transport: RecordingTransport = client.transport  # type: ignore[assignment]
    recorded: dict[str, Any] = {}
    for name, call in calls.items():
        transport.sent = []
        returned = answer(call(), prefix)
        recorded[name] = {
            "answer": returned,
            "requests": [
                request(method, target, body, prefix)
                for method, target, body in transport.sent
                if "/_bulk" not in target  # card and entry writes, not mappings or queries
            ],
        }
    return recorded


@pytest.fixture
def recording_client() -> Elasticsearch:
    client = Elasticsearch(
        settings.ELASTICSEARCH_URL,
        request_timeout=5,
        max_retries=1,
        transport_class=RecordingTransport,
    )
    client.transport.sent = []  # type: ignore[attr-defined]
    return client


def test_the_adapters_send_the_recorded_requests(recording_client) -> None:
    prefix = f"{settings.ELASTICSEARCH_INDEX_PREFIX}-wire-{uuid.uuid4().hex[:6]}"
    cards = ElasticsearchCardIndex(recording_client, prefix)
    history = ElasticsearchHistoryIndex(recording_client, prefix)
    try:
        sent = {
            "cards": sent_by(card_calls(cards), recording_client, prefix),
            "history": sent_by(history_calls(history), recording_client, prefix),
        }
    finally:
        cards.drop()
        history.drop()
    if os.environ.get("ES_REQUESTS_RECORD"):
        RECORDED.write_text(json.dumps(sent, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    expected = json.loads(RECORDED.read_text())
    for store in ("cards", "history"):
        assert sorted(sent[store]) == sorted(expected[store])
        for name, recorded in expected[store].items():
            assert sent[store][name]["requests"] == recorded["requests"], f"{store}: {name}"
            assert sent[store][name]["answer"] == recorded["answer"], f"{store}: {name}"
