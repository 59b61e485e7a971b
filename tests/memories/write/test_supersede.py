"""A later statement of the user replaces an earlier one that says the same of the same subject
with another value (`memories/write/supersede.py`): the earlier item is kept as the fact's
history, and neither it nor the transcript turn it came from is injected as current. Through
the API against the real stores."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.stm.store import stm_store
from memories.write.supersede import replaces
from memoryproject.redis_keys import Owner
from profiles.models import EndUser, Tenant
from tests.memories.speech import say

RECALL = reverse("memories:recall")


def items_of(tenant: Tenant) -> list:
    user = EndUser.objects.get(tenant=tenant, external_id="u_1")
    return stm_store().items_of(owner=Owner(tenant.pk, user.pk))


def test_the_same_frame_with_another_value_replaces() -> None:
    assert replaces(
        "The backend runs on Python 3.12.", "Our backend runs on Python 3.9.", cued=False
    )
    assert replaces("小程序基础库版本为 3.3.4。", "小程序基础库版本是 2.25.3。", cued=False)
    # the same value again is a repeat, not a change
    assert not replaces(
        "Our backend runs on Python 3.9.", "The backend runs on Python 3.9.", cued=False
    )
    # another subject is another fact, whatever the shared words
    assert not replaces("The backend runs on Python 3.12.", "My laptop runs macOS 14.", cued=False)
    assert not replaces("I pay for Spotify Premium.", "I live in Austin.", cued=True)


@pytest.mark.django_db
def test_a_changed_value_is_injected_alone(
    owner: APIClient, tenant: Tenant, django_capture_on_commit_callbacks
) -> None:
    say(
        owner,
        "s-a",
        "m-old",
        "Our backend runs on Python 3.9.",
        "2026-10-01T09:00:00Z",
        django_capture_on_commit_callbacks,
    )
    say(
        owner,
        "s-a",
        "m-other",
        "I live in Austin with my two dogs.",
        "2026-10-01T09:01:00Z",
        django_capture_on_commit_callbacks,
    )
    say(
        owner,
        "s-b",
        "m-new",
        "We upgraded: the backend runs on Python 3.12 now.",
        "2026-11-01T09:00:00Z",
        django_capture_on_commit_callbacks,
    )

    items = {item.message_ids[0]: item for item in items_of(tenant)}  # the live ones
    assert set(items) == {"m-new", "m-other"}  # another fact stays
    replaced = stm_store().get(owner=items["m-new"].owner, item_id=items["m-new"].supersedes)
    assert replaced is not None and replaced.message_ids == ["m-old"]
    assert replaced.status == "superseded" and replaced.superseded_by == items["m-new"].id

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
    assert "3.12 now (since 2026-11-01; replaces an earlier statement)" in body["injection_text"]
    assert "3.9" not in body["injection_text"], body["injection_text"]
    dropped = body["explain"]["dropped"]
    assert any(d["reason"] == f"replaced by {items['m-new'].id}" for d in dropped), dropped
