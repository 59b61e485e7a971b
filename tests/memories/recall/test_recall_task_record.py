"""A question carrying a task on finds what was said earlier in that task, even when no
short-term item holds it: the task's own record (`memories/recall/task_record.py`), through the
API against the real stores."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

RECALL = reverse("memories:recall")


def append(
    client: APIClient, session: str, user: str, task: str, lines: list[tuple[str, str]], capture
) -> None:
    events = [{"id": event_id, "role": "user", "content": text} for event_id, text in lines]
    with capture(execute=True):
        response = client.post(
            reverse("transcripts:events", kwargs={"session_id": session}),
            {"user_id": user, "task_id": task, "events": events},
            format="json",
        )
    assert response.status_code == 201, response.json()


def recall(client: APIClient, **fields) -> dict:
    body = {"user_id": "u_1", "explain": True, **fields}
    response = client.post(RECALL, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def injected_events(body: dict) -> list[str]:
    """The transcript events the injected items stand for: a history entry's own, or those a
    short-term item was made of."""
    return [
        e
        for item in body["items"]
        for key in ("event_ids", "message_ids")
        for e in item["provenance"].get(key, [])
    ]


@pytest.fixture
def latency_task(owner: APIClient, django_capture_on_commit_callbacks) -> None:
    append(
        owner,
        "s-monday",
        "u_1",
        "ledger-latency",
        [
            ("lat-1", "ledger-api p99 latency jumped to 900 ms after yesterday's release."),
            ("lat-2", "I already ruled out the database."),
        ],
        django_capture_on_commit_callbacks,
    )


@pytest.mark.django_db
def test_a_new_session_of_the_task_finds_what_the_task_said(owner, latency_task) -> None:
    body = recall(
        owner,
        session_id="s-tuesday",
        task_id="ledger-latency",
        query="Where were we on the latency issue?",
    )

    assert "lat-1" in injected_events(body), body["injection_text"]
    (entry,) = [i for i in body["items"] if "lat-1" in injected_events({"items": [i]})]
    if entry["source"] == "history":
        assert entry["provenance"]["task_record"] is True
        reasons = body["explain"]["routing"]["history"]["reasons"]
        assert any(r.startswith("the task's own record") for r in reasons), reasons
    else:
        # the statement is a short-term item of the task: nothing is missing from it
        assert entry["source"] == "redis" and entry["provenance"]["task_id"] == "ledger-latency"


@pytest.mark.django_db
def test_as_i_said_finds_the_current_sessions_turn_but_not_the_question(
    owner, django_capture_on_commit_callbacks
) -> None:
    question = "我刚才说芒果系列的复购率是多少来着？"
    append(
        owner,
        "s-zh",
        "u_1",
        "summer-sales",
        [("zh-1", "芒果系列的复购率是 18%。"), ("zh-2", "我住在深圳。"), ("zh-3", question)],
        django_capture_on_commit_callbacks,
    )

    body = recall(owner, session_id="s-zh", task_id="summer-sales", query=question)

    events = injected_events(body)
    assert "zh-1" in events, body["injection_text"]
    assert "zh-3" not in events


@pytest.mark.django_db
def test_another_task_and_another_user_do_not_read_this_tasks_record(owner, latency_task) -> None:
    query = "Where were we on the latency issue?"
    other_task = recall(owner, session_id="s-other", task_id="billing-move", query=query)
    other_user = recall(
        owner, user_id="u_2", session_id="s-u2", task_id="ledger-latency", query=query
    )

    for body in (other_task, other_user):
        assert not [i for i in body["items"] if i["provenance"].get("task_record")], body["items"]
    assert "lat-1" not in injected_events(other_user)


@pytest.mark.django_db
def test_a_task_step_whose_words_short_term_memory_holds_does_not_search_the_record(
    owner, latency_task
) -> None:
    body = recall(
        owner,
        session_id="s-monday",
        task_id="ledger-latency",
        query="Next step after the database was ruled out?",
    )

    assert "history.task_record" not in body["explain"]["latency_ms"]
