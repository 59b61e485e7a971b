"""An agent quoting the memory it was given is no second source: the echo does not come back as
more evidence, and the memory cites where it was said again; through the API against the real
stores."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

RECALL = reverse("memories:recall")


def append(client: APIClient, session: str, events: list[tuple[str, str, str]], capture) -> None:
    body = [{"id": i, "role": role, "content": text} for i, role, text in events]
    with capture(execute=True):
        response = client.post(
            reverse("transcripts:events", kwargs={"session_id": session}),
            {"user_id": "u_1", "events": body},
            format="json",
        )
    assert response.status_code == 201, response.json()


def recall(client: APIClient, session: str, query: str, layers: list[str] | None = None) -> dict:
    body = {"user_id": "u_1", "session_id": session, "query": query, "explain": True}
    if layers:
        body["layers"] = layers
    response = client.post(RECALL, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.mark.django_db
def test_an_assistant_quoting_its_memory_adds_no_item(
    owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    said = "I deploy the billing service with Terraform from the ops repository"
    append(owner, "s-1", [("m-1", "user", said)], django_capture_on_commit_callbacks)
    query = "How does the billing service get deployed with Terraform?"
    before = recall(owner, "s-2", query)
    assert before["items"], before["explain"]["routing"]

    # the agent answers in another session, quoting what it was given
    append(
        owner,
        "s-2",
        [
            ("m-2", "user", "Good morning!"),
            ("m-3", "assistant", f"Noted. From memory: {said}."),
        ],
        django_capture_on_commit_callbacks,
    )
    after = recall(owner, "s-3", query)

    assert len(after["items"]) == len(before["items"]), after["items"]
    events = [e for i in after["items"] for e in i["provenance"].get("event_ids", [])]
    assert "m-3" not in events
    reasons = [d["reason"] for d in after["explain"]["dropped"]]
    assert any(r.startswith(("echo of", "duplicate of")) for r in reasons), reasons


@pytest.mark.django_db
def test_an_echo_of_a_standing_rule_is_not_recalled_beside_it(
    owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    rule = "I prefer short answers with the command first"
    append(owner, "s-1", [("m-1", "user", rule)], django_capture_on_commit_callbacks)
    append(
        owner,
        "s-2",
        [("m-2", "user", "Hi!"), ("m-3", "assistant", f"Noted. From memory: Preference: {rule}")],
        django_capture_on_commit_callbacks,
    )

    # only history is searched: the rule is not among the candidates
    body = recall(owner, "s-3", "What did you note from memory about my answers?", ["history"])

    events = [e for i in body["items"] for e in i["provenance"].get("event_ids", [])]
    assert "m-1" in events and "m-3" not in events, body["items"]
    reasons = [d["reason"] for d in body["explain"]["dropped"]]
    assert any(r.startswith("echo of stm_") for r in reasons), reasons


@pytest.mark.django_db
def test_the_memory_cites_where_it_was_said_again(
    owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    said = "Our staging database lives in the Frankfurt region"
    append(owner, "s-1", [("m-1", "user", said)], django_capture_on_commit_callbacks)
    append(
        owner,
        "s-2",
        [("m-2", "assistant", f"Right, as you said: {said}.")],
        django_capture_on_commit_callbacks,
    )

    body = recall(owner, "s-3", "Which region is the staging database in, Frankfurt?")

    (item,) = [i for i in body["items"] if i["source"] == "redis"]
    assert "m-2" in item["provenance"].get("also_said_in", []), item["provenance"]
    assert all(
        i["source"] != "history" or "m-2" not in i["provenance"]["event_ids"] for i in body["items"]
    )
