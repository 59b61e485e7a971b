"""A task's tool results and the assistant's conclusions, appended as transcript events, are
recalled by a question of the same task that names what they concern, in Chinese or English;
never in another task, for another user or tenant, nor as standing rules."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.stm.items import StmItem
from memories.stm.selectors import stm_items_for

RECALL = reverse("memories:recall")
TOOL_OUTPUT = "billing-api: db pool 48/50 in use, wait queue 1200, p99 2.3s"
QUESTION_ZH = "billing-api 的连接池现在什么情况？"
QUESTION_EN = "what did the pool look like on billing-api?"


def debugging(session: str, task: str, conclusion: str) -> list[dict[str, Any]]:
    return [
        {"id": f"{session}-1", "role": "user", "content": "billing-api is slow again"},
        {"id": f"{session}-2", "role": "assistant", "content": "Let me read its pool stats."},
        {
            "id": f"{session}-3",
            "role": "tool",
            "tool_call_id": f"{session}-call",
            "metadata": {"tool_name": "psql_stats"},
            "content": TOOL_OUTPUT,
        },
        {"id": f"{session}-4", "role": "assistant", "content": conclusion},
    ]


def append(client: APIClient, session: str, task: str, events: list[dict], user: str = "u_42"):
    response = client.post(
        reverse("transcripts:events", kwargs={"session_id": session}),
        {"user_id": user, "task_id": task, "events": events},
        format="json",
    )
    assert response.status_code == 201, response.json()


def recall(client: APIClient, query: str, **fields: Any) -> dict[str, Any]:
    body = {"user_id": "u_42", "query": query, "explain": True, **fields}
    response = client.post(RECALL, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def working_items(tenant, user: str = "u_42") -> dict[str, StmItem]:
    found = stm_items_for(tenant=tenant, user_id=user, limit=200).items
    return {i.subtype: i for i in found if i.source.get("kind") in ("tool", "assistant")}


def injected(body: dict[str, Any]) -> list[str]:
    return [item["memory_id"] for item in body["items"]]


def assert_recalled_in_the_task(body: dict[str, Any], items: dict[str, StmItem]) -> None:
    observation = items["tool_result"]
    assert observation.id in injected(body)
    assert "billing-api (psql_stats): db pool 48/50 in use" in body["injection_text"]
    routing = body["explain"]["routing"]["redis"]
    assert routing["asked"] is True
    assert any("entities seen recently" in reason for reason in routing["reasons"])
    assert "billing-api" in body["explain"]["query_profile"]["entities"]
    item = next(i for i in body["items"] if i["memory_id"] == observation.id)
    assert item["source"] == "redis"
    assert item["provenance"]["task_id"] == observation.task_id
    assert item["provenance"]["tool_call_ids"] == [observation.source["tool_call_ids"][0]]


def assert_never_elsewhere(
    body: dict[str, Any], items: dict[str, StmItem], *, nothing_alike: bool = True
) -> None:
    """None of `items` is injected or standing; with `nothing_alike`, no short-term or
    long-term line shows their figures (history, quoting the transcript, may)."""
    ids = {i.id for i in items.values()}
    assert not ids & set(injected(body))
    assert not ids & {rule["memory_id"] for rule in body["constraints_block"]["standing"]}
    if nothing_alike:
        text = body["injection_text"]
        for history in ("相关历史对话", "From earlier conversations"):
            text = text.split(history)[0]
        assert "48/50" not in text


@pytest.mark.django_db
def test_a_chinese_question_recalls_the_tools_figures_and_the_conclusion(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        append(
            owner,
            "s-zh",
            "bug-789",
            debugging("s-zh", "bug-789", "已排除数据库问题，问题出在连接池。"),
        )
    items = working_items(tenant)
    assert set(items) == {"tool_result", "exclusion", "conclusion"}

    body = recall(owner, QUESTION_ZH, session_id="s-zh", task_id="bug-789")

    assert_recalled_in_the_task(body, items)
    # 连接池 names the pool figures and the assistant's conclusion alike
    assert items["conclusion"].id in injected(body)
    assert "问题出在连接池" in body["injection_text"]
    assert body["language"] == "zh"
    # the session's task is the active one when the request names none
    again = recall(owner, QUESTION_ZH, session_id="s-zh")
    assert items["tool_result"].id in injected(again)


@pytest.mark.django_db
def test_an_english_question_recalls_the_tools_figures(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        append(
            owner,
            "s-en",
            "inc-12",
            debugging("s-en", "inc-12", "The database is ruled out; root cause is the db pool."),
        )
    items = working_items(tenant)
    assert set(items) == {"tool_result", "exclusion", "conclusion"}
    assert items["conclusion"].confidence < 0.85  # the assistant's word, not the user's

    body = recall(owner, QUESTION_EN, session_id="s-en", task_id="inc-12")

    assert_recalled_in_the_task(body, items)
    assert body["language"] == "en"


@pytest.mark.django_db
def test_they_stay_in_their_task_user_and_tenant(
    tenant, owner: APIClient, stranger: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        append(owner, "s-zh", "bug-789", debugging("s-zh", "bug-789", "问题出在连接池。"))
        # the same user debugging something else, in a session of its own
        append(owner, "s-other", "bug-999", [{"role": "user", "content": "order-api 502 again"}])
    items = working_items(tenant)
    observation = items["tool_result"]

    # Another task of the same user names billing-api: the entity index finds the item, and
    # the task's working memory is left out.
    other_task = recall(owner, QUESTION_ZH, session_id="s-other", task_id="bug-999")
    assert_never_elsewhere(other_task, items)
    dropped = {d["memory_id"]: d["reason"] for d in other_task["explain"]["dropped"]}
    assert dropped[observation.id] == "working memory of task bug-789 (tool)"
    # A new, unrelated session without a task: nothing, and no standing rule either.
    fresh = recall(owner, QUESTION_EN, session_id="s-new")
    assert_never_elsewhere(fresh, items)
    # Another user of the tenant, and another tenant's agent, get nothing.
    assert_never_elsewhere(recall(owner, QUESTION_ZH, user_id="u_7", session_id="s-7"), items)
    theirs = recall(stranger, QUESTION_ZH, session_id="s-zh", task_id="bug-789")
    assert theirs["items"] == [] and "48/50" not in theirs["injection_text"]
    item_url = reverse("memories:item", kwargs={"item_id": observation.id})
    assert stranger.get(item_url).status_code == 404
    events_url = reverse("transcripts:events", kwargs={"session_id": "s-zh"})
    assert stranger.get(events_url).status_code == 404
    # The owner still sees it in the task.
    assert observation.id in injected(recall(owner, QUESTION_ZH, session_id="s-zh"))


# --- a real worker -----------------------------------------------------------------------------


def wait_for(tenant, user: str, subtypes: set[str], worker) -> dict[str, StmItem]:
    deadline = time.monotonic() + 90
    found: dict[str, StmItem] = {}
    while time.monotonic() < deadline and set(found) != subtypes:
        found = working_items(tenant, user)
        time.sleep(0.3)
    assert worker.poll() is None, "the worker exited"
    assert set(found) == subtypes, found
    return found


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_makes_working_memory_recalled_in_both_languages(
    tenant, owner: APIClient, stranger: APIClient, worker, publish_to_broker
) -> None:
    append(
        owner, "s-zh", "bug-789", debugging("s-zh", "bug-789", "已排除数据库问题，问题出在连接池。")
    )
    append(
        owner,
        "s-en",
        "inc-12",
        debugging("s-en", "inc-12", "It's not the network. Root cause is the db pool."),
        user="u_43",
    )
    zh = wait_for(tenant, "u_42", {"tool_result", "exclusion", "conclusion"}, worker)
    en = wait_for(tenant, "u_43", {"tool_result", "exclusion", "conclusion"}, worker)

    body_zh = recall(owner, QUESTION_ZH, session_id="s-zh", task_id="bug-789")
    assert_recalled_in_the_task(body_zh, zh)
    assert zh["conclusion"].id in injected(body_zh)
    body_en = recall(owner, QUESTION_EN, user_id="u_43", session_id="s-en", task_id="inc-12")
    assert_recalled_in_the_task(body_en, en)

    # Neither user gets the other's, a new session gets neither, a stranger gets nothing.
    # (u_42's own reading in s-zh is alike: same tool, same figures)
    assert_never_elsewhere(recall(owner, QUESTION_EN, session_id="s-zh"), en, nothing_alike=False)
    assert_never_elsewhere(recall(owner, QUESTION_ZH, session_id="s-new"), zh)
    theirs = recall(stranger, QUESTION_ZH, session_id="s-zh", task_id="bug-789")
    assert theirs["items"] == []
    assert (
        stranger.get(reverse("memories:item", kwargs={"item_id": zh["tool_result"].id})).status_code
        == 404
    )
