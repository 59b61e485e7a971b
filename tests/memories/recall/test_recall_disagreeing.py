"""Two statements of the user in one frame with other values, said on different days, that the
write path did not compare (one of them is only a turn in history): recall injects both,
dated, the earlier saying a later one differs (`memories/recall/disagreeing.py`). Through the
API against the real stores."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.recall.disagreeing import Statement, disagreements
from memories.vocabulary import default_vocabulary
from tests.memories.speech import say

RECALL = reverse("memories:recall")
DAY = 86400.0


def disagreeing(earlier: str, later: str, *, apart: float = 20 * DAY) -> list[tuple[str, str]]:
    said = [Statement("old", earlier, 1_000_000.0), Statement("new", later, 1_000_000.0 + apart)]
    return [(d.earlier, d.later) for d in disagreements(said, default_vocabulary())]


def test_one_frame_with_another_value_disagrees() -> None:
    assert disagreeing("Our backend runs on Python 3.9.", "The backend runs on Python 3.12.") == [
        ("old", "new")
    ]
    assert disagreeing("The standup is at 9:30.", "The standup is at 10:15 now.")
    assert disagreeing("小程序基础库版本是 2.25.3。", "小程序基础库版本为 3.3.4。")


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
    # one subject in other words: not guessed
    assert not disagreeing("My dentist is Dr. Okafor.", "These days I see Dr. Lindgren.")
    # said within the hour: one telling, not a change
    assert not disagreeing(
        "Our backend runs on Python 3.9.", "The backend runs on Python 3.12.", apart=60
    )


def forget_short_term_items(client: APIClient) -> None:
    """What extraction made so far is gone (expired or deleted): only history holds it."""
    listed = client.get(reverse("memories:stm"), {"user_id": "u_1", "limit": 200})
    assert listed.status_code == 200, listed.json()
    for item in listed.json()["items"]:
        deleted = client.delete(reverse("memories:item", kwargs={"item_id": item["id"]}))
        assert deleted.status_code == 204, deleted.content


@pytest.mark.django_db
def test_disagreeing_statements_are_injected_dated(
    owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    capture = django_capture_on_commit_callbacks
    say(owner, "s-a", "m-old", "Our backend runs on Python 3.9.", "2026-10-01T09:00:00Z", capture)
    say(
        owner, "s-a", "m-dog", "My dog Biscuit runs every morning.", "2026-10-01T09:05:00Z", capture
    )
    forget_short_term_items(owner)
    say(owner, "s-b", "m-new", "The backend runs on Python 3.12.", "2026-11-01T09:00:00Z", capture)

    response = owner.post(
        RECALL,
        {
            "user_id": "u_1",
            "session_id": "s-c",
            "query": "Which Python version does the backend run on?",
            "explain": True,
        },
        format="json",
    )
    body = response.json()
    assert response.status_code == 200, body
    lines = body["injection_text"].splitlines()
    old = [line for line in lines if "3.9" in line]
    new = [line for line in lines if "3.12" in line]
    assert old and new, (lines, body["explain"]["dropped"], body["explain"]["routing"])
    assert all("2026-10-01; earlier; a statement of 2026-11-01 differs" in line for line in old)
    assert any("2026-11-01" in line and "the latest" in line for line in new), new
    assert not any("Biscuit" in line and "earlier" in line for line in lines), lines
    assert any("dated: a later one differs" in note for note in body["explain"]["notes"])
    # said in an earlier session, with no task: not what the current task holds
    assert "Short-term memory from earlier sessions:" in body["injection_text"]
    assert "Current task short-term memory:" not in body["injection_text"]
