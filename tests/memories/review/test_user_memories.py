"""GET /v1/users/{id}/memories: the profile, live items and own cards of one user, paged."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.ltm.services import CardInput, cards_import

PROPOSALS = reverse("memories:proposals")
PROFILE = reverse("profiles:profile", kwargs={"user_id": "u_42"})


def memories_url(user_id: str) -> str:
    return reverse("memories:user-memories", kwargs={"user_id": user_id})


@pytest.mark.django_db
def test_everything_about_a_user_comes_in_one_answer_paged_part_by_part(
    tenant, trusted_owner: APIClient, stranger: APIClient
) -> None:
    trusted_owner.patch(PROFILE, {"profile": {"language": "en"}}, format="json")
    for n in range(3):
        trusted_owner.post(
            PROPOSALS,
            {
                "proposals": [
                    {
                        "user_id": "u_42",
                        "session_id": "s_1",
                        "memory_type": "fact",
                        "summary": f"deploy target number {n} is prod-k8s-{n}",
                        "verified": True,
                    }
                ]
            },
            format="json",
        )
    cards_import(
        tenant=tenant,
        cards=[
            CardInput(memory_type="preference", user_id="u_42", summary="conclusion first"),
            CardInput(memory_type="procedure", summary="a shared card of the tenant"),
            CardInput(memory_type="preference", user_id="u_bob", summary="bob's card"),
        ],
    )

    first = trusted_owner.get(memories_url("u_42"), {"limit": 2}).json()
    second = trusted_owner.get(
        memories_url("u_42"), {"limit": 2, "items_before": first["next_items_before"]}
    ).json()

    assert first["user_id"] == "u_42" and first["profile"]["profile"]["language"] == "en"
    assert [i["summary"][-10:] for i in first["items"]] == ["prod-k8s-2", "prod-k8s-1"]
    assert [i["summary"][-10:] for i in second["items"]] == ["prod-k8s-0"]
    assert second["next_items_before"] is None
    assert [c["summary"] for c in first["cards"]] == ["conclusion first"]
    assert first["next_cards_cursor"] is None
    assert stranger.get(memories_url("u_42")).status_code == 404
    assert trusted_owner.get(memories_url("u_nobody")).status_code == 404
    assert trusted_owner.get(memories_url("u_42"), {"limit": 500}).status_code == 400
