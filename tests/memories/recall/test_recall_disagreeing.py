"""Two statements of the user about one subject, said on different days, that the write path
could not tell one replaces the other: recall injects both, dated, the earlier saying a later
one differs (`memories/recall/disagreeing.py`). Through the API against the real stores, with
the configured embedder."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.recall.disagreeing import Statement, disagreements
from memories.vocabulary import default_vocabulary
from profiles.models import Tenant
from tests.memories.speech import say

RECALL = reverse("memories:recall")
DAY = 86400.0


def disagreeing(earlier: str, later: str, *, apart: float = 20 * DAY) -> list[tuple[str, str]]:
    said = [Statement("old", earlier, 1_000_000.0), Statement("new", later, 1_000_000.0 + apart)]
    return [(d.earlier, d.later) for d in disagreements(said, default_vocabulary())]


def test_one_subject_in_other_words_disagrees() -> None:
    assert disagreeing(
        "My dentist is Dr. Okafor.", "These days I see Dr. Lindgren for my teeth."
    ) == [("old", "new")]
    assert disagreeing("Our standup is at 9:30.", "We hold the standup at 10:15.")
    assert disagreeing("我的牙医是李医生。", "现在给我看牙的是王医生。")


def test_what_does_not_disagree_is_left_alone() -> None:
    # another subject
    assert not disagreeing("I'm based in Lisbon.", "Our CI runs on GitHub Actions.")
    # the same statement again, or one holding the other
    assert not disagreeing("I'm based in Lisbon.", "I'm based in Lisbon, Portugal.")
    # two events of one kind: both happened
    assert not disagreeing(
        "We went camping at Lake Tahoe with the kids.",
        "We also went camping again, in the mountains.",
    )
    # said within the hour: one telling, not a change
    assert not disagreeing(
        "My dentist is Dr. Okafor.", "These days I see Dr. Lindgren for my teeth.", apart=60
    )


@pytest.mark.django_db
def test_disagreeing_statements_are_injected_dated(
    owner: APIClient, tenant: Tenant, django_capture_on_commit_callbacks
) -> None:
    capture = django_capture_on_commit_callbacks
    say(owner, "s-a", "m-old", "My dentist is Dr. Okafor.", "2026-10-01T09:00:00Z", capture)
    say(
        owner,
        "s-a",
        "m-dog",
        "I walk my dog Biscuit every morning.",
        "2026-10-01T09:05:00Z",
        capture,
    )
    say(
        owner,
        "s-b",
        "m-new",
        "These days I see Dr. Lindgren for my teeth.",
        "2026-11-01T09:00:00Z",
        capture,
    )
    response = owner.post(
        RECALL,
        {"user_id": "u_1", "session_id": "s-c", "query": "Who is my dentist?", "explain": True},
        format="json",
    )
    body = response.json()
    assert response.status_code == 200, body
    lines = body["injection_text"].splitlines()
    okafor = [line for line in lines if "Okafor" in line]
    lindgren = [line for line in lines if "Lindgren" in line]
    assert okafor and lindgren, lines
    assert all(
        "2026-10-01" in line and "earlier; a statement of 2026-11-01 differs" in line
        for line in okafor
    ), okafor
    assert any("2026-11-01" in line and "the latest" in line for line in lindgren), lindgren
    assert not any("Biscuit" in line and "earlier" in line for line in lines), lines
    assert any("dated: a later one differs" in note for note in body["explain"]["notes"])
    # said in earlier sessions, with no task: not what the current task holds
    assert "Short-term memory from earlier sessions:" in body["injection_text"]
    assert "Current task short-term memory:" not in body["injection_text"]
