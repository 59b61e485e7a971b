"""A transcript sentence that joins first-person clauses is read clause by clause; an agent's
proposal is one statement and is never split."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.stm.items import MemoryType
from memories.stm.selectors import stm_items_for
from memories.vocabulary import default_vocabulary
from memories.write.candidates import Candidate
from memories.write.extractors import ExtractionContext, RuleExtractor
from memories.write.statements import clauses_of
from profiles.services.profile_versions import preference_set
from tests.factories import EndUserFactory

QUICKSTART = "Hi! Please remember that I deploy everything with Terraform and I like short answers."


def extract(text: str) -> list[Candidate]:
    context = ExtractionContext(
        user_id="u_1", session_id="s_1", task_id="", vocabulary=default_vocabulary()
    )
    event = {"seq": 1, "id": "msg_1", "role": "user", "content": text}
    return RuleExtractor().extract(events=[event], context=context)


def test_the_quickstart_sentence_gives_a_fact_and_a_preference_both_remembered() -> None:
    fact, preference = extract(QUICKSTART)

    assert fact.memory_type == MemoryType.FACT
    assert fact.summary == "I deploy everything with Terraform"
    assert fact.detail["text"] == "Please remember that I deploy everything with Terraform"
    assert fact.detail["request"] == preference.detail["request"] == "Please remember that"
    assert fact.canonical_fact_key == ""
    assert preference.memory_type == MemoryType.PREFERENCE
    assert preference.summary == "I like short answers"
    assert preference.canonical_fact_key == "preference.answer_style"
    assert (fact.remember, preference.remember) == (True, True)
    assert fact.message_ids == preference.message_ids == ("msg_1",)


def test_two_likes_joined_by_and_i_are_two_statements() -> None:
    tea, coffee = extract("I like tea and I hate coffee.")

    assert (tea.summary, coffee.summary) == ("I like tea", "I hate coffee")
    # Preference here means how the assistant should work; a taste in drinks is a stated fact.
    assert (tea.memory_type, coffee.memory_type) == (MemoryType.FACT, MemoryType.FACT)
    assert tea.remember is coffee.remember is False


def test_two_preferences_about_answers_are_two_keyed_preferences() -> None:
    style, layout = extract("I like short answers and I prefer tables.")

    assert (style.memory_type, layout.memory_type) == (MemoryType.PREFERENCE,) * 2
    assert style.canonical_fact_key == "preference.answer_style"
    assert layout.summary == "I prefer tables"


@pytest.mark.parametrize(
    "sentence",
    [
        "Tom and I went hiking last weekend.",
        "My wife and I moved to Lisbon in March.",
        "You and I should talk about the migration plan.",
        "I wanted to feel closer to a community and my faith.",
        "If I have time and I feel like it, I'll go hiking.",
        "如果我有时间，我会去爬山",
    ],
)
def test_and_i_that_starts_no_new_clause_keeps_the_sentence_whole(sentence: str) -> None:
    assert clauses_of(sentence.rstrip("."), default_vocabulary()) == [sentence.rstrip(".")]


def test_a_compound_subject_stays_one_fact() -> None:
    (found,) = extract("Tom and I went hiking last weekend.")

    assert found.memory_type == MemoryType.FACT
    assert found.summary == "Tom and I went hiking last weekend"


@pytest.mark.parametrize(
    ("sentence", "clauses"),
    [
        ("I use Terraform, but we deploy with Helm", ["I use Terraform", "we deploy with Helm"]),
        (
            "I deploy with Terraform, and my team uses Ansible",
            ["I deploy with Terraform", "my team uses Ansible"],
        ),  # noqa: E501
        (
            "I like tea and I hate coffee and I love juice",
            ["I like tea", "I hate coffee", "I love juice"],
        ),  # noqa: E501
        ("Tom and I went hiking and I loved it", ["Tom and I went hiking", "I loved it"]),
        ("我喜欢茶，而且我讨厌咖啡", ["我喜欢茶", "我讨厌咖啡"]),
        ("我喜欢茶，还有我养了一只猫", ["我喜欢茶", "我养了一只猫"]),
        ("我用 Terraform 部署并且我们用 Helm 发布", ["我用 Terraform 部署", "我们用 Helm 发布"]),
    ],
)
def test_a_new_first_person_clause_is_split_off(sentence: str, clauses: list[str]) -> None:
    assert clauses_of(sentence, default_vocabulary()) == clauses


def test_a_chinese_remember_request_covers_both_clauses() -> None:
    fact, preference = extract("记住我用 Terraform 部署，我喜欢简短的回答")

    assert fact.memory_type == MemoryType.FACT
    assert fact.summary == "我用 Terraform 部署"
    assert (fact.detail["text"], fact.detail["request"]) == ("记住我用 Terraform 部署", "记住")
    assert preference.memory_type == MemoryType.PREFERENCE
    assert preference.summary == "我喜欢简短的回答"
    assert preference.canonical_fact_key == "preference.answer_style"
    assert (fact.remember, preference.remember) == (True, True)


def test_a_remember_request_in_a_later_clause_covers_only_that_clause() -> None:
    tea, defaults = extract("I like tea and I want you to remember that our default env is prod")

    assert tea.remember is False
    assert defaults.remember is True
    assert defaults.canonical_fact_key == "project_metadata.default_env"


def test_a_closing_question_mark_makes_only_the_last_clause_a_question() -> None:
    (found,) = extract("I moved to Berlin last year and I wonder whether you know it?")

    assert found.summary == "I moved to Berlin last year"


def test_the_assistant_sentences_are_split_too() -> None:
    context = ExtractionContext(
        user_id="u_1", session_id="s_1", task_id="", vocabulary=default_vocabulary()
    )
    content = "We will use Postgres and we ruled out MySQL."
    event = {"seq": 1, "id": "m1", "role": "assistant", "content": content}
    found = RuleExtractor().extract(events=[event], context=context)

    assert [c.summary for c in found] == ["We will use Postgres", "we ruled out MySQL"]
    assert [c.detail["kind"] for c in found] == ["decision", "exclusion"]


@pytest.mark.django_db
def test_the_quickstart_sentence_from_a_transcript_lands_as_two_items(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(
            reverse("transcripts:events", kwargs={"session_id": "s_quick"}),
            {"user_id": "u_quick", "events": [{"role": "user", "content": QUICKSTART}]},
            format="json",
        )
    assert response.status_code in (200, 201), response.json()

    items = stm_items_for(tenant=tenant, user_id="u_quick", limit=50).items
    by_type = {item.memory_type: item for item in items}
    assert sorted(by_type) == ["fact", "preference"]
    assert "Terraform" in by_type["fact"].summary
    assert by_type["preference"].canonical_fact_key == "preference.answer_style"
    assert all(item.remember for item in items)


@pytest.mark.django_db
def test_a_proposal_with_and_i_is_one_statement(
    tenant, trusted_owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    owner = trusted_owner  # a trusted writer: its rules are the user's word
    proposal: dict[str, Any] = {
        "user_id": "u_prop",
        "session_id": "s_prop",
        "memory_type": "fact",
        "summary": "I deploy everything with Terraform and I like short answers",
        "remember": True,
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(
            reverse("memories:proposals"), {"proposals": [proposal]}, format="json"
        )

    assert response.status_code in (200, 201), response.json()
    (result,) = response.json()["results"]
    assert result["accepted"] is True
    (item,) = stm_items_for(tenant=tenant, user_id="u_prop", limit=50).items
    assert item.summary == proposal["summary"]
    assert item.memory_type == "fact"


@pytest.mark.django_db
def test_the_fact_is_recalled_though_the_profile_holds_another_answer_style(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    # Given a PostgreSQL profile whose answer style differs from the one the user states
    user = EndUserFactory(tenant=tenant, external_id="u_pg")
    preference_set(end_user=user, key="preference.answer_style", value="brief_first")
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(
            reverse("transcripts:events", kwargs={"session_id": "s_pg"}),
            {"user_id": "u_pg", "events": [{"role": "user", "content": QUICKSTART}]},
            format="json",
        )
    assert response.status_code in (200, 201), response.json()

    # When a later turn of the session refers back to it
    body = owner.post(
        reverse("memories:recall"),
        {"user_id": "u_pg", "session_id": "s_pg", "query": "As I said, how do I deploy it?"},
        format="json",
    ).json()

    # Then the Terraform fact is injected, and the conflicting preference is no standing rule
    assert "I deploy everything with Terraform" in body["injection_text"]
    standing = body["constraints_block"].get("standing", [])
    assert all("short answers" not in rule["text"] for rule in standing)
