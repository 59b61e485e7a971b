"""Deleting an end user in the admin offers an erasure request instead of a dead end."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from memories.audit.models import AuditEvent
from memories.review.models import DeletionRequest
from profiles.models import EndUser
from tests.factories import EndUserFactory, MembershipFactory, TenantFactory


@pytest.fixture
def tenant_admin(db: None) -> dict[str, Any]:
    mine, theirs = TenantFactory(slug="mine"), TenantFactory(slug="theirs")
    membership = MembershipFactory(tenant=mine)
    client = Client()
    client.force_login(membership.user)
    return {
        "client": client,
        "staff": membership.user,
        "mine": mine,
        "ada": EndUserFactory(tenant=mine, external_id="ada"),
        "cy": EndUserFactory(tenant=mine, external_id="cy"),
        "bob": EndUserFactory(tenant=theirs, external_id="bob"),
    }


def delete_url(end_user: EndUser) -> str:
    return reverse("admin:profiles_enduser_delete", args=[end_user.pk])


def test_delete_on_an_end_user_offers_an_erasure_request(tenant_admin) -> None:
    client, ada = tenant_admin["client"], tenant_admin["ada"]
    change = client.get(reverse("admin:profiles_enduser_change", args=[ada.pk])).content.decode()
    assert delete_url(ada) in change

    offer = client.get(delete_url(ada))

    page = offer.content.decode()
    assert offer.status_code == 200
    assert "permission" not in page and 'id="request-erasure"' in page
    assert not DeletionRequest.objects.exists()

    made = client.post(delete_url(ada), {"reason": "asked by the user"})

    deletion = DeletionRequest.objects.get()
    assert made.status_code == 302
    assert made["Location"] == reverse("admin:memories_deletionrequest_change", args=[deletion.pk])
    assert (deletion.kind, deletion.target, deletion.status, deletion.reason) == (
        "user",
        "ada",
        "pending",
        "asked by the user",
    )
    assert deletion.requested_by == f"staff:{tenant_admin['staff'].pk}:{tenant_admin['staff']}"
    assert EndUser.objects.filter(pk=ada.pk).exists()  # erased only once a reviewer approves
    assert AuditEvent.objects.filter(action="request_deletion", end_user_pk=ada.pk).exists()

    again = client.get(delete_url(ada)).content.decode()
    assert deletion.request_id in again and 'id="request-erasure"' not in again


def test_the_list_action_requests_erasure_of_the_selected_users(tenant_admin) -> None:
    client, ada, cy = tenant_admin["client"], tenant_admin["ada"], tenant_admin["cy"]
    changelist = reverse("admin:profiles_enduser_changelist")
    assert 'value="delete_selected"' not in client.get(changelist).content.decode()

    chosen = {"action": "request_erasure", "_selected_action": [ada.pk, cy.pk]}
    confirm = client.post(changelist, chosen)
    assert confirm.status_code == 200 and 'id="request-erasure"' in confirm.content.decode()
    assert not DeletionRequest.objects.exists()

    client.post(changelist, {**chosen, "post": "yes", "reason": "account closed"})

    assert set(DeletionRequest.objects.values_list("target", "kind")) == {
        ("ada", "user"),
        ("cy", "user"),
    }


def test_another_tenants_user_gets_no_offer(tenant_admin) -> None:
    client, bob = tenant_admin["client"], tenant_admin["bob"]

    assert client.get(delete_url(bob)).status_code == 404
    assert client.post(delete_url(bob), {"reason": "x"}).status_code == 404
    assert not DeletionRequest.objects.exists()
