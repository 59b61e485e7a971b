"""Erasure finishes verified whatever the user holds, while another user keeps everything."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories.history.search import history_search_index
from memories.history.vectors import history_vector_index
from memories.ltm.search import card_search_index
from memories.ltm.services import CardInput, cards_import, outbox_drain
from memories.ltm.vectors import vector_index
from memories.review.deletion import deletion_approve
from memories.review.models import DeletionRequest
from memories.stm.store import stm_store
from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection
from memoryproject.redis_keys import Owner
from profiles.models import EndUser
from tests.factories import StaffUserFactory
from tests.memories.review.test_erasure import seed_user


@pytest.fixture(autouse=True)
def no_drain_scheduled():
    """Each append schedules its history drain (a test that queued one to the broker leaves
    the shared flag set for a few seconds)."""
    redis_connection().delete(keys.history_drain_scheduled())


SHAPES = {
    "no cards": {"cards": False, "items": True, "history": True, "transcripts": True},
    "no items": {"cards": True, "items": False, "history": True, "transcripts": True},
    "no history": {"cards": True, "items": True, "history": False, "transcripts": True},
    "no transcripts": {"cards": True, "items": True, "history": False, "transcripts": False},
    "only a profile": {"cards": False, "items": False, "history": False, "transcripts": False},
}


def seed_shape(owner, tenant, capture, shape: dict[str, bool], user: str = "u_42") -> EndUser:
    """A user holding exactly what `shape` names, beside a profile."""
    patched = owner.patch(
        reverse("profiles:profile", kwargs={"user_id": user}),
        {"profile": {"display_name": "Ada"}},
        format="json",
    )
    assert patched.status_code == 200, patched.json()
    if shape["transcripts"]:
        # Small talk: nothing for extraction to keep. Without the commit callbacks the
        # history outbox is never drained, so no entry is indexed.
        with capture(execute=shape["history"]):
            appended = owner.post(
                reverse("transcripts:events", kwargs={"session_id": "s_1"}),
                {
                    "user_id": user,
                    "events": [
                        {"role": "user", "content": "Hello there."},
                        {"role": "assistant", "content": "Hi! How can I help?"},
                    ],
                },
                format="json",
            )
        assert appended.status_code == 201, appended.json()
    if shape["items"]:
        with capture(execute=True):
            proposed = owner.post(
                reverse("memories:proposals"),
                {
                    "proposals": [
                        {
                            "user_id": user,
                            "session_id": "s_1",
                            # a fact: an agent's constraint would wait for verification
                            "memory_type": "fact",
                            "summary": "The billing service runs on Kubernetes",
                            "confidence": 0.9,
                            "importance": 0.8,
                            "verified": True,
                        }
                    ]
                },
                format="json",
            )
        assert proposed.status_code == 201, proposed.json()
    if shape["cards"]:
        cards_import(
            tenant=tenant,
            cards=[
                CardInput(
                    memory_type="semantic_fact", summary="Ada rides a blue bike", user_id=user
                )
            ],
        )
        outbox_drain()
    return EndUser.objects.get(tenant=tenant, external_id=user)


def held(tenant, end_user: EndUser) -> dict[str, int]:
    tenant_id, user_id = str(tenant.pk), end_user.external_id
    return {
        "cards": len(card_search_index().ids_where(tenant_id=tenant_id, user_id=user_id))
        + len(vector_index().ids_where(tenant_id=tenant_id, user_id=user_id)),
        "items": len(stm_store().items_of(owner=Owner(tenant.pk, end_user.pk))),
        "history": len(history_search_index().ids_where(tenant_id=tenant_id, user_id=user_id))
        + len(history_vector_index().ids_where(tenant_id=tenant_id, user_id=user_id)),
        "transcripts": end_user.sessions.count(),
    }


@pytest.mark.parametrize("shape", [*SHAPES, "everything"])
def test_erasing_a_user_of_any_shape_finishes_verified(
    shape, tenant, owner, django_capture_on_commit_callbacks
) -> None:
    # Given another user of the tenant holding something in every store
    other = seed_user(owner, tenant, django_capture_on_commit_callbacks, "u_7", "s_7")
    other_before = held(tenant, other["end_user"])
    assert all(other_before.values()), other_before
    # ... and the user to erase holding exactly what the shape says
    if shape == "everything":
        end_user = seed_user(owner, tenant, django_capture_on_commit_callbacks)["end_user"]
        expected = dict.fromkeys(("cards", "items", "history", "transcripts"), True)
    else:
        expected = SHAPES[shape]
        end_user = seed_shape(owner, tenant, django_capture_on_commit_callbacks, expected)
    before = held(tenant, end_user)
    assert {name: bool(n) for name, n in before.items()} == expected, before

    # When the erasure is asked for and approved
    asked = owner.post(reverse("memories:forget", kwargs={"user_id": "u_42"}))
    assert asked.status_code == 202, asked.json()
    with django_capture_on_commit_callbacks(execute=True):
        deletion_approve(
            request=DeletionRequest.objects.get(request_id=asked.json()["request_id"]),
            reviewer=StaffUserFactory(),
        )

    # Then it is done and verified, at the first round
    request = DeletionRequest.objects.get(request_id=asked.json()["request_id"])
    assert request.status == "done", (request.last_error, request.progress)
    checks = request.receipt["checks"]
    assert checks["ok"] and not any(checks["by_id"].values()), checks
    assert request.attempts == 0  # no round of steps had to run again
    assert not EndUser.objects.filter(pk=end_user.pk).exists()
    # ... and the other user keeps everything
    assert held(tenant, other["end_user"]) == other_before


def test_an_empty_id_list_matches_nothing_in_every_index(
    tenant, owner, django_capture_on_commit_callbacks
) -> None:
    seed_user(owner, tenant, django_capture_on_commit_callbacks, "u_7", "s_7")
    tenant_id = str(tenant.pk)
    for index in (
        card_search_index(),
        vector_index(),
        history_search_index(),
        history_vector_index(),
    ):
        assert index.ids_where(tenant_id=tenant_id), index  # the tenant holds entries
        assert index.ids_where(tenant_id=tenant_id, ids=[]) == []
        assert index.ids_where(tenant_id=tenant_id, ids=[], user_id="u_7") == []
