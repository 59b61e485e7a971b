from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from profiles.models import ApiKey, EndUser, Project, TenantMembership, UserPreference
from tests.factories import (
    EndUserFactory,
    MembershipFactory,
    ProjectFactory,
    StaffUserFactory,
    TenantFactory,
)
from transcripts.models import Session


@pytest.fixture
def two_tenants(db):
    """A tenant admin of `mine`, and rows in `mine` and `theirs`."""
    mine, theirs = TenantFactory(slug="mine"), TenantFactory(slug="theirs")
    admin_user = StaffUserFactory(username="alice")
    MembershipFactory(user=admin_user, tenant=mine)
    for tenant in (mine, theirs):
        project = ProjectFactory(tenant=tenant, key=f"{tenant.slug}-project")
        user = EndUserFactory(tenant=tenant, external_id=f"{tenant.slug}-user")
        Session.objects.create(tenant=tenant, end_user=user, external_id=f"{tenant.slug}-session")
        ApiKey.objects.create(
            tenant=tenant, name=f"{tenant.slug}-key", prefix=tenant.slug, key_hash=tenant.slug
        )
        assert project
    client = Client()
    client.force_login(admin_user)
    return client, mine, theirs


CHANGELISTS = [
    "admin:profiles_tenant_changelist",
    "admin:profiles_project_changelist",
    "admin:profiles_enduser_changelist",
    "admin:profiles_apikey_changelist",
    "admin:transcripts_session_changelist",
]


@pytest.mark.parametrize("url_name", CHANGELISTS)
def test_a_tenant_admin_sees_only_their_tenants_rows(two_tenants, url_name: str) -> None:
    client, _, _ = two_tenants
    response = client.get(reverse(url_name))
    assert response.status_code == 200
    page = response.content.decode()
    assert "mine" in page
    assert "theirs" not in page


def test_forms_offer_only_own_tenants_objects(two_tenants) -> None:
    client, mine, theirs = two_tenants
    page = client.get(reverse("admin:profiles_workspace_add")).content.decode()
    options = re.findall(r'<option value="(\d+)"', page)
    own_ids = {str(mine.pk), *(str(p.pk) for p in Project.objects.filter(tenant=mine))}
    assert options and set(options) <= own_ids
    assert str(theirs.pk) not in re.findall(r'name="tenant".*?</select>', page, re.S)[0]


def test_picking_another_tenants_object_is_refused(two_tenants) -> None:
    client, mine, theirs = two_tenants
    their_project = Project.objects.get(tenant=theirs)

    response = client.post(
        reverse("admin:profiles_workspace_add"),
        {"tenant": mine.pk, "project": their_project.pk, "key": "ws", "name": "WS"},
    )
    also = client.post(
        reverse("admin:profiles_project_add"),
        {"tenant": theirs.pk, "key": "sneaky", "name": "Sneaky", "metadata": "{}"},
    )

    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert also.status_code == 200 and "Select a valid choice" in also.content.decode()
    assert not Project.objects.filter(key="sneaky").exists()


def test_another_tenants_object_cannot_be_opened_or_changed(two_tenants) -> None:
    client, _, theirs = two_tenants
    their_user = EndUser.objects.get(tenant=theirs)
    url = reverse("admin:profiles_enduser_change", args=[their_user.pk])

    assert client.get(url).status_code == 302  # "does not exist" for this admin
    client.post(url, {"external_id": "renamed", "tenant": theirs.pk})
    assert EndUser.objects.get(pk=their_user.pk).external_id == "theirs-user"


def test_a_tenant_admin_cannot_grant_roles(two_tenants) -> None:
    client, mine, _ = two_tenants
    assert client.get(reverse("admin:profiles_tenantmembership_changelist")).status_code == 403
    response = client.post(
        reverse("admin:profiles_tenantmembership_add"),
        {"user": 1, "tenant": mine.pk, "role": "reviewer"},
    )
    assert response.status_code == 403
    assert TenantMembership.objects.count() == 1
    assert client.get(reverse("admin:auth_user_changelist")).status_code == 403


def test_staff_without_membership_sees_no_models(db) -> None:
    TenantFactory()
    client = Client()
    client.force_login(StaffUserFactory())
    assert client.get(reverse("admin:profiles_project_changelist")).status_code == 403


def test_an_api_key_created_in_the_admin_is_shown_once_and_works(two_tenants) -> None:
    client, mine, _ = two_tenants
    response = client.post(
        reverse("admin:profiles_apikey_add"),
        {"tenant": mine.pk, "name": "from admin", "scopes": ["read"]},
        follow=True,
    )
    secret = re.search(r"(mk_[0-9a-f]{12}_[A-Za-z0-9_-]+)", response.content.decode()).group(1)
    key = ApiKey.objects.get(name="from admin")
    assert key.scopes == ["read"] and key.created_by.username == "alice"

    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.get(reverse("profiles:profile", kwargs={"user_id": "mine-user"})).status_code == 200
    assert secret not in client.get(reverse("admin:profiles_apikey_changelist")).content.decode()


def test_revoke_action_revokes_keys(two_tenants) -> None:
    client, mine, _ = two_tenants
    key = ApiKey.objects.get(tenant=mine)
    client.post(
        reverse("admin:profiles_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [key.pk]},
    )
    key.refresh_from_db()
    assert key.revoked_at is not None


def test_saving_a_preference_in_the_admin_adds_a_version(two_tenants) -> None:
    client, mine, _ = two_tenants
    user = EndUser.objects.get(tenant=mine)
    add = reverse("admin:profiles_userpreference_add")
    client.post(
        add,
        {
            "end_user": user.pk,
            "key": "preference.answer_style",
            "value": '"brief"',
            "confidence": 1,
        },
    )
    first = UserPreference.objects.get(end_user=user)
    client.post(
        reverse("admin:profiles_userpreference_change", args=[first.pk]),
        {"value": '"detailed"', "confidence": 0.5},
    )
    rows = UserPreference.objects.filter(end_user=user).order_by("version")
    assert [(r.value, r.version, r.is_current, r.source) for r in rows] == [
        ("brief", 1, False, "admin"),
        ("detailed", 2, True, "admin"),
    ]
