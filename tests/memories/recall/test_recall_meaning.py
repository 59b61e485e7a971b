"""Recall as agents ask: short questions in a new session, a category word for the thing named,
meaning as well as words; through the API against the real stores, items embedded by the
(eager) worker."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.recall.query_profile import RuntimeState, build_query_profile
from memories.recall.relevance import best_holding, content_terms, related_terms
from memories.stm.store import stm_store
from memories.vocabulary import default_vocabulary
from memoryproject.redis_keys import Owner
from profiles.models import EndUser

RECALL = reverse("memories:recall")


def append(client: APIClient, session: str, user: str, texts: list[str], capture) -> None:
    events = [
        {"id": f"{session}-{n}", "role": "user", "content": text} for n, text in enumerate(texts)
    ]
    with capture(execute=True):
        response = client.post(
            reverse("transcripts:events", kwargs={"session_id": session}),
            {"user_id": user, "events": events},
            format="json",
        )
    assert response.status_code == 201, response.json()


def recall(client: APIClient, query: str, *, user: str = "u_1", session: str = "s-new") -> dict:
    body = {"user_id": user, "session_id": session, "query": query, "explain": True}
    response = client.post(RECALL, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def recalled_events(body: dict) -> set[str]:
    return {
        event_id
        for item in body["items"]
        for event_id in item["provenance"].get("message_ids", [])
        + item["provenance"].get("event_ids", [])
    }


@pytest.fixture
def said(owner: APIClient, django_capture_on_commit_callbacks) -> None:
    append(
        owner,
        "s-1",
        "u_1",
        [
            "Please remember that I deploy with Terraform.",
            "We run everything on AWS.",
            "My manager is called Priya Raman.",
        ],
        django_capture_on_commit_callbacks,
    )
    append(
        owner,
        "s-2",
        "u_1",
        ["请记住我们用 Terraform 部署。", "我家的狗叫豆豆。"],
        django_capture_on_commit_callbacks,
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "event"),
    [
        ("How do I deploy?", "s-1-0"),
        ("Which cloud are we on?", "s-1-1"),
        ("Who is my boss?", "s-1-2"),
        ("我们怎么部署？", "s-2-0"),
        ("我的宠物叫什么？", "s-2-1"),
    ],
)
def test_a_short_question_in_a_new_session_recalls_what_was_said(
    owner: APIClient, said: None, query: str, event: str
) -> None:
    # given statements made in earlier sessions; when a new session asks about one briefly
    body = recall(owner, query)
    # then that statement is injected
    assert event in recalled_events(body), body["explain"]["routing"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    ["What is the capital of Australia?", "Tell me a joke", "怎么做番茄炒蛋？", "讲个笑话吧"],
)
def test_an_unrelated_question_injects_nothing(owner: APIClient, said: None, query: str) -> None:
    body = recall(owner, query)
    assert body["items"] == [], body["explain"]["routing"]


@pytest.mark.django_db
def test_one_word_shared_by_a_question_about_the_world_is_not_enough(
    owner: APIClient, said: None
) -> None:
    # "deploy" is the user's word too, but these ask about the word or the world
    for query in ("What does deploy mean?", "Why do teams deploy on Mondays?"):
        body = recall(owner, query)
        assert body["items"] == [], (query, body["explain"]["routing"])
        assert body["explain"]["query_profile"]["about_user"] is False
    # asked about the user, the same word recalls the statement
    assert "s-1-0" in recalled_events(recall(owner, "When do we deploy?"))


@pytest.mark.parametrize(
    ("query", "about"),
    [
        ("How do I deploy?", True),
        ("Which cloud are we on?", True),
        ("What did you say about my boss?", True),
        ("How many Fridays are there in a year?", False),
        ("What does fitness mean in evolution?", False),
        ("我们怎么部署？", True),
        ("测试服的网址是什么？", True),  # Chinese leaves the pronoun out of questions about oneself
        ("“例子”这个词的英文是什么？", False),
    ],
)
def test_a_question_is_about_the_user_when_it_names_them(query: str, about: bool) -> None:
    profile = build_query_profile(
        query=query, vocabulary=default_vocabulary(), runtime=RuntimeState()
    )
    assert profile.about_user is about


@pytest.mark.django_db
def test_the_worker_embeds_each_item_and_the_vector_goes_with_it(
    owner: APIClient, said: None, tenant
) -> None:
    end_user = EndUser.objects.get(tenant=tenant, external_id="u_1")
    owner_key = Owner(tenant.pk, end_user.pk)
    store = stm_store()
    items = store.items_of(owner=owner_key)
    assert items
    vectors = store.vectors_of(owner=owner_key, item_ids=[i.id for i in items])
    assert set(vectors) == {i.id for i in items}
    assert all(len(v) == 384 * 2 for v in vectors.values())  # float16

    deleted = owner.delete(reverse("memories:item", kwargs={"item_id": items[0].id}))
    assert deleted.status_code == 204
    assert items[0].id not in store.vectors_of(owner=owner_key, item_ids=[items[0].id])


@pytest.mark.django_db
def test_a_stranger_recalls_none_of_it(stranger: APIClient, said: None) -> None:
    body = recall(stranger, "How do I deploy?")
    assert body["items"] == []


def test_a_category_word_is_held_by_the_thing_it_names_one_way_only() -> None:
    vocabulary = default_vocabulary()
    asked = content_terms("Which cloud do we use?")
    holding = best_holding(asked, [("m", "We run on AWS")], related_terms(asked, vocabulary))
    assert holding.holds(0.34)
    # naming one thing does not reach its siblings
    named = content_terms("Do we use GCP?")
    holding = best_holding(named, [("m", "We run on AWS")], related_terms(named, vocabulary))
    assert not holding.holds(0.34)


def test_one_term_passes_alone_but_two_terms_need_two() -> None:
    assert best_holding(["deploy"], [("m", "I deploy with Terraform")]).holds(0.34)
    assert not best_holding(["deploy", "egg"], [("m", "I deploy with Terraform")]).holds(0.34)
    # a longer or shorter form of the same English stem counts
    assert best_holding(["allergi"], [("m", "I am allergic to peanuts")]).holds(0.34)


@pytest.fixture
def lived(owner: APIClient, django_capture_on_commit_callbacks) -> None:
    append(
        owner,
        "s-3",
        "u_1",
        ["I'm based in Lisbon.", "我女儿今年上小学三年级。"],
        django_capture_on_commit_callbacks,
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "event"),
    [("Which city am I in?", "s-3-0"), ("孩子读几年级了？", "s-3-1")],
)
def test_a_question_about_oneself_in_other_words_recalls_the_statement(
    owner: APIClient, lived: None, query: str, event: str
) -> None:
    # no word of the question is in the statement: its meaning and its asking about the user's
    # own world bring it
    body = recall(owner, query)
    assert event in recalled_events(body), body["explain"]["routing"]
    profile = body["explain"]["query_profile"]
    assert profile["own_world_score"] > 0 and profile["own_world_memories"] >= 1, profile


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query", ["What's the population of Portugal's capital?", "一般的小学生每天写多久作业？"]
)
def test_a_question_about_the_world_near_the_memory_in_meaning_injects_nothing(
    owner: APIClient, lived: None, query: str
) -> None:
    body = recall(owner, query)
    assert body["items"] == [], body["explain"]["routing"]
    profile = body["explain"]["query_profile"]
    assert profile["semantic_margin"] > 0.05, profile  # near, and still not its answer
    assert profile["own_world_memories"] == 0, profile


@pytest.mark.django_db
def test_with_the_own_world_rule_switched_off_a_paraphrase_needs_the_margin(
    owner: APIClient, lived: None, settings
) -> None:
    settings.RECALL_OWN_WORLD = False
    body = recall(owner, "Which city am I in?")
    profile = body["explain"]["query_profile"]
    assert profile["own_world_score"] == 0 and profile["own_world_memories"] == 0, profile
    assert profile["about_world"] is False


@pytest.mark.django_db
def test_a_question_naming_someone_the_memory_knows_is_left_to_the_words(
    owner: APIClient, said: None
) -> None:
    # "Priya" is held by the memory: what is near in meaning but says nothing of her is no answer
    body = recall(owner, "What does Priya think about our cloud costs?")
    profile = body["explain"]["query_profile"]
    assert profile["own_world_memories"] == 0, profile
    # a name nobody in the memory holds changes nothing
    body = recall(owner, "Which cloud are we on for Q3?")
    assert "s-1-1" in recalled_events(body), body["explain"]["routing"]


@pytest.mark.django_db
def test_a_question_in_the_same_session_recalls_what_was_said_there(
    owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    append(
        owner,
        "s-9",
        "u_1",
        ["Please remember that my cat is called Miso."],
        django_capture_on_commit_callbacks,
    )
    body = recall(owner, "What is my cat called?", session="s-9")
    assert "s-9-0" in recalled_events(body), body["explain"]["routing"]
