"""The shared Milvus collection against the real local server (milvus-lite 2.5)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from pymilvus import DataType

from memoryproject.errors import StoreUnavailable
from memoryproject.milvus import (
    MilvusCollection,
    MilvusOptions,
    ScalarField,
    milvus_client,
    recorded_embedding,
)
from tests.outages import TcpProxy

SCALARS = (
    ScalarField("tenant_id", DataType.VARCHAR, max_length=64),
    ScalarField("occurred_at", DataType.INT64),
    ScalarField("text", DataType.VARCHAR, max_length=256, filtered=False),
)


def unit(i: int, dim: int = 8) -> list[float]:
    vector = [0.01] * dim
    vector[i % dim] = 1.0
    return vector


@pytest.fixture
def make_collection() -> Iterator:
    made: list[MilvusCollection] = []

    def make(**options) -> MilvusCollection:
        collection = MilvusCollection(
            milvus_client(),
            f"t_{uuid.uuid4().hex[:12]}",
            dim=8,
            model=options.pop("model", "test-model"),
            scalars=SCALARS,
            options=MilvusOptions(**options),
        )
        made.append(collection)
        return collection

    yield make
    for collection in made:
        collection.drop()


def test_ensure_records_the_embedding_and_indexes_every_filter_field(make_collection) -> None:
    collection = make_collection()
    collection.ensure()
    client = milvus_client()

    described = client.describe_collection(collection.collection)
    assert recorded_embedding(described) == ("test-model", 8)
    indexed = set(client.list_indexes(collection.collection))
    assert indexed == {"vector", "tenant_id", "occurred_at"}
    collection.ready()
    collection.ping()
    assert collection.ensure() == [f"loaded {collection.collection}"]  # idempotent


def test_another_embedding_on_the_same_collection_is_refused(make_collection) -> None:
    first = make_collection(model="model-a")
    first.ensure()
    second = MilvusCollection(
        milvus_client(), first.collection, dim=8, model="model-b", scalars=SCALARS
    )
    with pytest.raises(StoreUnavailable) as raised:
        second.ensure()
    assert raised.value.code == "embedding_mismatch"
    assert "model-a" in str(raised.value)


def test_other_fields_on_the_same_collection_are_refused(make_collection) -> None:
    first = make_collection()
    first.ensure()
    narrower = MilvusCollection(
        milvus_client(), first.collection, dim=8, model="test-model", scalars=SCALARS[:2]
    )
    with pytest.raises(StoreUnavailable) as raised:
        narrower.ensure()
    assert raised.value.code == "schema_mismatch"


def test_upserts_land_in_bounded_batches_and_filters_run_inside_the_search(
    make_collection,
) -> None:
    collection = make_collection(write_batch=3)
    collection.ensure()
    rows = [
        {
            "id": f"r{i}",
            "vector": unit(i),
            "tenant_id": "a" if i % 2 else "b",
            "occurred_at": i,
            "text": f"row {i}",
        }
        for i in range(10)
    ]
    collection.upsert_rows(rows)

    assert sorted(collection.ids_matching('tenant_id == "a"')) == ["r1", "r3", "r5", "r7", "r9"]
    matches = collection.search(
        vector=unit(3),
        expression='tenant_id == "a" and occurred_at >= 3',
        limit=3,
        output_fields=["text"],
    )
    assert matches[0].id == "r3" and matches[0].fields["text"] == "row 3"
    assert {m.id for m in matches} <= {"r3", "r5", "r7", "r9"}
    assert matches[0].score > matches[-1].score
    assert collection.delete_where('tenant_id == "b"') == 5
    assert sorted(r["id"] for r in collection.rows(expression="", output_fields=["id"])) == [
        "r1",
        "r3",
        "r5",
        "r7",
        "r9",
    ]


def test_a_released_collection_is_loaded_again_by_the_next_call(make_collection) -> None:
    collection = make_collection()
    collection.ensure()
    collection.upsert_rows(
        [{"id": "x", "vector": unit(0), "tenant_id": "a", "occurred_at": 1, "text": ""}]
    )
    milvus_client().release_collection(collection.collection)
    with pytest.raises(StoreUnavailable):
        collection.ready()

    assert collection.ids_matching('tenant_id == "a"') == ["x"]
    collection.ensure()
    collection.ready()


def test_a_partition_key_collection_is_created_with_tenant_id_as_the_key(make_collection) -> None:
    collection = make_collection(partition_key=True)
    collection.ensure()
    fields = milvus_client().describe_collection(collection.collection)["fields"]
    assert [f["name"] for f in fields if f.get("is_partition_key")] == ["tenant_id"]


def test_an_unreachable_server_is_store_unavailable(settings) -> None:
    settings.MILVUS_URI = "http://127.0.0.1:9"
    with pytest.raises(StoreUnavailable):
        milvus_client()


def test_a_milvus_that_stops_answering_fails_each_call_within_its_timeout(
    make_collection, settings
) -> None:
    # Given a collection reached through a proxy (the client's own default is no deadline),
    direct = make_collection()
    direct.ensure()
    target = urlsplit(settings.MILVUS_URI)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 19530)
    settings.MILVUS_URI = f"http://127.0.0.1:{proxy.port}"
    settings.MILVUS_TIMEOUT_SECONDS = 1.0
    client = milvus_client()
    proxied = MilvusCollection(
        client, direct.collection, dim=8, model="test-model", scalars=SCALARS
    )
    try:
        proxied.ready()
        # when Milvus stops answering (connected, but nothing comes back),
        proxy.switch("blackhole")
        calls = {
            "ready": proxied.ready,
            "search": lambda: proxied.search(vector=unit(0), expression="", limit=3),
            "upsert": lambda: proxied.upsert_rows(
                [{"id": "a", "vector": unit(0), "tenant_id": "t", "occurred_at": 1, "text": "x"}]
            ),
        }
        for name, call in calls.items():
            started = time.perf_counter()
            with pytest.raises(StoreUnavailable):
                call()
            # each call gives up after MILVUS_TIMEOUT_MS instead of waiting on.
            assert time.perf_counter() - started < 2.0, name
    finally:
        proxy.switch("pass")
        client.close()
        proxy.close()
