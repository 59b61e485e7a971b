"""Episodic history: appended turns become searchable entries of their own, in both stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from memories.history.selectors import history_search
from memoryproject.errors import Invalid

MAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
JUNE = datetime(2023, 6, 20, 9, 0, tzinfo=UTC)


def append(client, session: str, user: str, events: list[dict], capture) -> dict:
    with capture(execute=True):
        response = client.post(
            reverse("transcripts:events", kwargs={"session_id": session}),
            {"user_id": user, "events": events},
            format="json",
        )
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.fixture
def conversation(tenant, owner, django_capture_on_commit_callbacks):
    """Two sessions of u_1 (May and June), one of u_2, all in the owner's tenant."""
    append(
        owner,
        "s-may",
        "u_1",
        [
            {
                "id": "m-1",
                "role": "user",
                "content": "I adopted a puppy named Biscuit last week.",
                "created_at": MAY.isoformat(),
            },
            {
                "id": "m-2",
                "role": "assistant",
                "content": "Congratulations! What breed is Biscuit?",
                "created_at": (MAY + timedelta(seconds=30)).isoformat(),
            },
            {
                "id": "m-3",
                "role": "user",
                "content": "A golden retriever.",
                "created_at": (MAY + timedelta(seconds=60)).isoformat(),
            },
        ],
        django_capture_on_commit_callbacks,
    )
    append(
        owner,
        "s-june",
        "u_1",
        [
            {
                "id": "j-1",
                "role": "user",
                "content": "Our staging database is Postgres 15 now.",
                "created_at": JUNE.isoformat(),
            },
        ],
        django_capture_on_commit_callbacks,
    )
    append(
        owner,
        "s-other",
        "u_2",
        [{"id": "o-1", "role": "user", "content": "I adopted a kitten named Biscuit."}],
        django_capture_on_commit_callbacks,
    )


@pytest.mark.parametrize("mode", ["lexical", "vector", "hybrid"])
def test_appended_turns_are_searchable_with_their_time_and_role(tenant, conversation, mode) -> None:
    result = history_search(tenant=tenant, user_id="u_1", query="puppy Biscuit", mode=mode)

    assert result.degraded == []
    top = result.hits[0]
    assert top.event_id == "m-1" and top.session_id == "s-may" and top.role == "user"
    assert top.occurred_at == MAY
    assert top.text == "user: I adopted a puppy named Biscuit last week."
    assert top.context == ""
    assert top.score == 1.0 and all(0 < h.score <= 1 for h in result.hits)
    assert {h.event_id for h in result.hits} <= {"m-1", "m-2", "m-3", "j-1"}
    if mode == "hybrid":
        assert top.lexical_rank == 1 and top.vector_rank is not None
        assert {"history.lexical", "history.vector", "history.embed"} <= set(result.latency_ms)
    # the neighbouring turns travel with an entry as its context
    [breed] = [
        h
        for h in history_search(tenant=tenant, user_id="u_1", query="golden retriever").hits
        if h.event_id == "m-3"
    ]
    assert breed.context.splitlines() == [
        "user: I adopted a puppy named Biscuit last week.",
        "assistant: Congratulations! What breed is Biscuit?",
    ]


def test_other_users_and_other_tenants_never_come_back(
    tenant, other_tenant, stranger, conversation, django_capture_on_commit_callbacks
) -> None:
    # the stranger tenant has a user with the same external id saying the same thing
    append(
        stranger,
        "s-may",
        "u_1",
        [{"id": "x-1", "role": "user", "content": "I adopted a puppy named Biscuit last week."}],
        django_capture_on_commit_callbacks,
    )
    for mode in ("lexical", "vector", "hybrid"):
        mine = history_search(tenant=tenant, user_id="u_1", query="kitten Biscuit", mode=mode)
        assert mine.hits and {h.event_id for h in mine.hits} <= {"m-1", "m-2", "m-3", "j-1"}
        theirs = history_search(tenant=other_tenant, user_id="u_1", query="puppy", mode=mode)
        assert [h.event_id for h in theirs.hits] == ["x-1"]
        nobody = history_search(tenant=other_tenant, user_id="u_2", query="Biscuit", mode=mode)
        assert nobody.hits == []


def test_time_range_and_session_exclusion(tenant, conversation) -> None:
    june = history_search(
        tenant=tenant, user_id="u_1", query="puppy database", since=JUNE - timedelta(days=1)
    )
    assert [h.event_id for h in june.hits] == ["j-1"]
    may = history_search(
        tenant=tenant,
        user_id="u_1",
        query="puppy database",
        since=MAY,
        until=MAY + timedelta(minutes=1),
    )
    assert {h.event_id for h in may.hits} == {"m-1", "m-2", "m-3"}
    elsewhere = history_search(
        tenant=tenant, user_id="u_1", query="puppy database", exclude_session_id="s-may"
    )
    assert [h.event_id for h in elsewhere.hits] == ["j-1"]


def test_bad_mode_or_k_is_invalid(tenant) -> None:
    with pytest.raises(Invalid):
        history_search(tenant=tenant, user_id="u_1", query="x", mode="fuzzy")
    with pytest.raises(Invalid):
        history_search(tenant=tenant, user_id="u_1", query="x", k=0)
