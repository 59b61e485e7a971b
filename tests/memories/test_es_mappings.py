"""The card and history mappings declared as `elasticsearch.dsl` Documents are the ones the
indexes get on the real stand-in, field by field, and the ones recorded from the hand-written
mappings (`es_requests.json`)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from memories.history.search import ElasticsearchHistoryIndex, HistoryMapping
from memories.ltm.search import CardMapping, ElasticsearchCardIndex
from memoryproject.elasticsearch import elasticsearch_client

RECORDED = json.loads(Path(__file__).with_name("es_requests.json").read_text())


def recorded_body(store: str, call: str, method: str, path_end: str) -> dict[str, Any]:
    requests = RECORDED[store][call]["requests"]
    return next(
        r["body"] for r in requests if r["method"] == method and r["path"].endswith(path_end)
    )


RECORDED_CARD_TEMPLATE = recorded_body(
    "cards", "ensure (fresh)", "PUT", "_index_template/{prefix}-cards"
)
RECORDED_HISTORY_INDEX = recorded_body("history", "ensure (fresh)", "PUT", "-history-v1")


@pytest.fixture
def prefix() -> str:
    return f"{settings.ELASTICSEARCH_INDEX_PREFIX}-map-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def cards(prefix) -> Iterator[ElasticsearchCardIndex]:
    index = ElasticsearchCardIndex(elasticsearch_client(), prefix)
    yield index
    index.drop()


@pytest.fixture
def history(prefix) -> Iterator[ElasticsearchHistoryIndex]:
    index = ElasticsearchHistoryIndex(elasticsearch_client(), prefix)
    yield index
    index.drop()


def stored_mapping(index_name: str) -> dict[str, Any]:
    (mapping,) = elasticsearch_client().indices.get_mapping(index=index_name).body.values()
    return mapping["mappings"]


def assert_same_fields(stored: dict[str, Any], declared: dict[str, Any]) -> None:
    assert stored["dynamic"] == declared["dynamic"] == "strict"
    assert sorted(stored["properties"]) == sorted(declared["properties"])
    for field, spec in declared["properties"].items():
        assert stored["properties"][field] == spec, field


def test_a_fresh_card_index_gets_the_declared_mapping(cards) -> None:
    declared = CardMapping._doc_type.mapping.to_dict()
    cards.ensure()
    assert_same_fields(stored_mapping(cards.first_index), declared)
    assert_same_fields(stored_mapping(cards.new_index()), declared)  # a rebuild's index
    assert declared == RECORDED_CARD_TEMPLATE["template"]["mappings"]
    assert declared["properties"]["occurred_at"] == {"type": "date"}
    assert declared["properties"]["bm25_text"] == {"type": "text", "analyzer": "whitespace"}
    (template,) = elasticsearch_client().indices.get_index_template(name=cards.template)[
        "index_templates"
    ]
    assert template["index_template"]["index_patterns"] == [f"{cards.alias}-v*"]
    assert template["index_template"]["template"]["settings"]["index"] == {
        "number_of_shards": "1",
        "number_of_replicas": "0",
    }


def test_an_index_from_before_a_field_existed_gets_it_through_the_alias(cards) -> None:
    # given an index behind the alias, made before cards had an event time
    client = elasticsearch_client()
    declared = CardMapping._doc_type.mapping.to_dict()
    older = {**declared, "properties": dict(declared["properties"])}
    del older["properties"]["occurred_at"]
    client.indices.create(index=cards.first_index, mappings=older)
    client.indices.put_alias(index=cards.first_index, name=cards.alias)
    assert "occurred_at" not in stored_mapping(cards.first_index)["properties"]
    # when the stores are ensured again, then the field is added in place
    assert cards.ensure() == [f"index template {cards.template}"]
    assert_same_fields(stored_mapping(cards.first_index), declared)


def test_the_history_index_gets_the_declared_mapping_and_settings(history) -> None:
    declared = HistoryMapping._doc_type.mapping.to_dict()
    history.ensure()
    assert_same_fields(stored_mapping(history.alias), declared)
    assert declared == RECORDED_HISTORY_INDEX["mappings"]
    assert RECORDED_HISTORY_INDEX["settings"] == {"number_of_shards": 1, "number_of_replicas": 0}
    assert declared["properties"]["occurred_at"] == {"type": "date"}
    assert declared["properties"]["text"] == {"type": "text", "index": False}
    index_settings = elasticsearch_client().indices.get_settings(index=history.index)
    assert index_settings[history.index]["settings"]["index"]["number_of_shards"] == "1"
    assert index_settings[history.index]["settings"]["index"]["number_of_replicas"] == "0"
