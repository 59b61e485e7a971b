"""History's lexical engine in PostgreSQL's full-text index (`memories/history/pg_search.py`),
against the real database: the same answers as the Elasticsearch engine gives."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections
from django.urls import reverse

from memories.history import search as history_search_module
from memories.history import selectors as history_selectors
from memories.history.documents import HistoryDocument, HistoryScope
from memories.history.pg_search import PostgresHistoryIndex
from memories.history.search import history_search_index
from memories.history.selectors import history_search
from memories.ltm.text import bm25_text
from memories.recall import branches as recall_branches
from memoryproject.errors import StoreUnavailable
from tests.memories.history.test_history import append

MAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def document(entry_id: str, text: str, *, user: str = "u_1", tenant: str = "1", **fields):
    values = {
        "entry_id": entry_id,
        "tenant_id": tenant,
        "user_id": user,
        "session_id": fields.pop("session_id", "s-1"),
        "session_pk": fields.pop("session_pk", 1),
        "seq": int(entry_id.rsplit("_", 1)[-1]),
        "event_id": f"e-{entry_id}",
        "role": "user",
        "occurred_at": fields.pop("occurred_at", MAY),
        "text": text,
        "context": fields.pop("context", ""),
    }
    values.update(fields)
    return HistoryDocument(
        **values,
        bm25_text=bm25_text(values["text"]),
        bm25_context=bm25_text(values["context"]),
    )


def scope(user: str = "u_1", tenant: str = "1", **fields) -> HistoryScope:
    return HistoryScope(tenant_id=tenant, user_id=user, **fields)


@pytest.fixture
def index(db) -> PostgresHistoryIndex:
    index = PostgresHistoryIndex()
    index.upsert(
        documents=[
            document("hist_1_1", "user: I adopted a puppy named Biscuit last week."),
            document("hist_1_2", "assistant: Congratulations! What breed is Biscuit?"),
            document("hist_1_3", "user: Our staging database is Postgres 15 now."),
            document(
                "hist_2_1",
                "user: A golden retriever.",
                session_id="s-2",
                session_pk=2,
                occurred_at=MAY + timedelta(days=40),
                context="assistant: What breed is your puppy?",
            ),
            document("hist_3_1", "user: I adopted a kitten named Biscuit.", user="u_2"),
            document("hist_4_1", "user: I adopted a puppy named Biscuit.", tenant="2"),
        ]
    )
    return index


def ids(matches) -> list[str]:
    return [m.entry_id for m in matches]


def test_the_entry_holding_the_rarer_terms_ranks_first(index) -> None:
    found = index.search(text=bm25_text("puppy Biscuit"), scope=scope(), limit=10)

    assert ids(found)[0] == "hist_1_1"
    assert set(ids(found)) == {"hist_1_1", "hist_1_2", "hist_2_1"}  # the context counts too
    assert found[0].fields["text"].startswith("user: I adopted")
    assert found[0].fields["occurred_at"] == MAY.isoformat()
    assert all(a.score >= b.score for a, b in zip(found, found[1:], strict=False))


def test_other_users_and_tenants_never_come_back(index) -> None:
    everything = index.search(text=bm25_text("adopted Biscuit"), scope=scope(), limit=50)
    assert "hist_3_1" not in ids(everything) and "hist_4_1" not in ids(everything)
    other = index.search(text=bm25_text("adopted Biscuit"), scope=scope(user="u_2"), limit=50)
    assert ids(other) == ["hist_3_1"]


def test_time_sessions_and_the_context_weight_filter_and_rank(index) -> None:
    text = bm25_text("puppy breed")
    june = index.search(text=text, scope=scope(since=MAY + timedelta(days=1)), limit=10)
    assert ids(june) == ["hist_2_1"]
    may = index.search(text=text, scope=scope(until=MAY + timedelta(days=1)), limit=10)
    assert set(ids(may)) == {"hist_1_1", "hist_1_2"}
    assert "hist_2_1" not in ids(
        index.search(text=text, scope=scope(exclude_session_id="s-2"), limit=10)
    )
    assert ids(index.search(text=text, scope=scope(only_sessions=("s-2",)), limit=10)) == [
        "hist_2_1"
    ]
    assert index.search(text=text, scope=scope(only_sessions=()), limit=10) == []
    own_words_only = index.search(text=text, scope=scope(), limit=10, context_weight=0)
    assert "hist_2_1" not in ids(own_words_only)


def test_any_term_is_taken_whole_and_never_read_as_query_syntax(index) -> None:
    odd = "it's & | ! <-> :* \\ 'quoted' (x) 3.12 数据库"
    index.upsert(documents=[document("hist_1_9", f"user: {odd}")])

    found = index.search(text=bm25_text(odd), scope=scope(), limit=10)

    assert ids(found)[0] == "hist_1_9"
    assert index.search(text=bm25_text("数据库"), scope=scope(), limit=10)[0].entry_id == "hist_1_9"
    assert index.search(text="", scope=scope(), limit=10) == []


def test_a_replay_overwrites_and_removal_is_by_id_user_tenant_or_session(index) -> None:
    index.upsert(documents=[document("hist_1_1", "user: I adopted a puppy named Pretzel.")])
    assert index.count_where(tenant_id="1") == 5
    assert index.count_where(tenant_id="1", user_id="u_1") == 4
    assert ids(index.search(text=bm25_text("Pretzel"), scope=scope(), limit=5)) == ["hist_1_1"]

    assert index.ids_where(tenant_id="1", ids=["hist_1_1", "hist_4_1"]) == ["hist_1_1"]
    assert index.ids_where(tenant_id="1", ids=[]) == []
    assert index.session_ids(tenant_id="1", session_pk=2) == ["hist_2_1"]
    assert [e["entry_id"] for e in index.entries_of(tenant_id="1", user_id="u_2")] == ["hist_3_1"]
    assert list(index.stored(tenant_id="2")) == [("hist_4_1", 1)]
    assert [t[0] for t in index.texts(tenant_id="1")][:2] == ["hist_1_1", "hist_1_2"]

    assert index.remove_ids(ids=["hist_1_2"]) == 1
    assert index.remove_tenant(tenant_id="1", keep_sessions=[1]) == 1  # session 2's entry
    assert index.remove_user(tenant_id="1", user_id="u_2") == 1
    assert index.ids_where(tenant_id="1") == ["hist_1_1", "hist_1_3"]
    assert index.remove_tenant(tenant_id="2") == 1


def test_a_search_over_its_time_limit_is_a_store_failure(index) -> None:
    many = [document(f"hist_9_{n}", f"user: puppy note {n} " + "word " * 200) for n in range(3000)]
    index.upsert(documents=many)
    with pytest.raises(StoreUnavailable, match="PostgreSQL"):
        index.search(text=bm25_text("puppy note word"), scope=scope(), limit=10, timeout=0.001)


@pytest.fixture
def postgres_engine(settings):
    settings.HISTORY_LEXICAL_ENGINE = "postgres"
    history_search_module.history_search_index.cache_clear()
    yield
    history_search_module.history_search_index.cache_clear()
    # The search threads keep their connections to the test database: close them, one task
    # per thread (each waits for the others, so every thread of the pool takes one).
    for pool in (history_selectors._branches, recall_branches._pool):
        workers = pool._max_workers
        barrier = threading.Barrier(workers)

        def close(barrier: threading.Barrier = barrier) -> None:
            connections.close_all()
            barrier.wait(timeout=10)

        for future in [pool.submit(close) for _ in range(workers)]:
            future.result(timeout=20)


@pytest.mark.django_db(transaction=True)
def test_appended_turns_are_searchable_through_the_api(
    postgres_engine, tenant, owner, django_capture_on_commit_callbacks
) -> None:
    assert isinstance(history_search_index(), PostgresHistoryIndex)
    events = [
        {"id": "m-1", "role": "user", "content": "I adopted a puppy named Biscuit last week."},
        {"id": "m-2", "role": "user", "content": "Our staging database is Postgres 15 now."},
    ]
    append(owner, "s-may", "u_1", events, django_capture_on_commit_callbacks)
    append(
        owner,
        "s-other",
        "u_2",
        [{"id": "o-1", "role": "user", "content": "I adopted a kitten named Biscuit."}],
        django_capture_on_commit_callbacks,
    )

    found = history_search(tenant=tenant, user_id="u_1", query="Biscuit the puppy", mode="lexical")
    # the staging turn comes second: its context, the turn before it, holds the words
    assert [hit.event_id for hit in found.hits] == ["m-1", "m-2"] and not found.degraded

    response = owner.post(
        reverse("memories:recall"),
        {
            "user_id": "u_1",
            "session_id": "q-1",
            "query": "What is my puppy called?",
            "layers": ["history"],
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    injected = [item["provenance"].get("event_ids") for item in response.json()["items"]]
    assert ["m-1"] in injected, response.json()["items"]
