"""A question about the past starts its searches and its embedding before Redis is read; a
profile question or a task step does not, and the answers are the same either way. Through the
API against the real stores, events extracted and indexed by the (eager) worker."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memories.recall.asking import start_early
from memories.vocabulary import default_vocabulary
from profiles.models import Tenant

from .test_recall_meaning import append, recall, recalled_events

EARLY = "long-term memory and history: asked before the runtime state was read"
UNREAD = "long-term memory and history: asked early, then left unread (the rules answer)"


@pytest.fixture
def said(owner: APIClient, django_capture_on_commit_callbacks) -> None:
    append(
        owner,
        "s-1",
        "u_1",
        ["Please remember that I deploy with Terraform.", "My manager is called Priya Raman."],
        django_capture_on_commit_callbacks,
    )


def early_for(tenant: Tenant, query: str, *, task_id: str = "", layers=()) -> bool:
    search = start_early(
        tenant=tenant,
        user_id="u_1",
        session_id="s-new",
        query=query,
        project="",
        task_id=task_id,
        policy={},
        vocabulary=default_vocabulary(),
        forced_layers=layers,
        has_history=True,
        has_cards=False,
    )
    if search is None:
        return False
    assert search.query_vector() is not None  # the embedding was started with it
    return True


@pytest.mark.django_db
def test_only_a_question_the_rules_cannot_answer_starts_early(tenant: Tenant) -> None:
    assert early_for(tenant, "How do I deploy?")
    assert early_for(tenant, "我们怎么部署？")
    assert not early_for(tenant, "what is my answer style preference?")  # the profile answers
    assert not early_for(tenant, "continue task_7: what is the next step?", task_id="task_7")
    assert not early_for(tenant, "hi")  # no content term: the first routing decides
    assert not early_for(tenant, "How do I deploy?", layers=("redis",))  # none asked
    assert not start_early(
        tenant=tenant,
        user_id="u_1",
        session_id="s-new",
        query="How do I deploy?",
        project="",
        task_id="",
        policy={},
        vocabulary=default_vocabulary(),
        forced_layers=(),
        has_history=False,
        has_cards=False,
    )


@pytest.mark.django_db
def test_a_question_about_the_past_is_answered_by_the_searches_started_early(
    owner: APIClient, said: None
) -> None:
    body = recall(owner, "How do I deploy?")
    assert "s-1-0" in recalled_events(body)
    assert EARLY in body["explain"]["notes"]
    assert "Terraform" in body["injection_text"]
    # The same question with the layers named: the same searches, started after the routing.
    named = owner.post(
        "/v1/recall",
        {
            "user_id": "u_1",
            "session_id": "s-new",
            "query": "How do I deploy?",
            "explain": True,
            "layers": ["postgres", "redis", "ltm", "history"],
        },
        format="json",
    ).json()
    assert {i["memory_id"] for i in named["items"]} == {i["memory_id"] for i in body["items"]}


@pytest.mark.django_db
def test_a_profile_question_asks_nothing_early(owner: APIClient, said: None) -> None:
    body = recall(owner, "what is my answer style preference?")
    assert EARLY not in body["explain"]["notes"]
    assert UNREAD not in body["explain"]["notes"]
