"""Every way a key stops being valid (or loses a scope) holds from its very next request,
although lookups are cached in Redis for minutes."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from profiles.key_cache import api_key_cache
from profiles.models import ApiKey, Tenant
from profiles.selectors import api_key_for_secret, api_key_hash
from profiles.services.api_keys import api_key_revoke, api_key_update, api_keys_revoke
from profiles.services.tenants import tenant_delete, tenants_set_active
from tests.factories import MembershipFactory, StaffUserFactory
from transcripts.models import Session

APPEND = {"user_id": "u_1", "events": [{"role": "user", "content": "hello"}]}


def append_url(session_id: str = "s-1") -> str:
    return reverse("transcripts:events", kwargs={"session_id": session_id})


def warmed(client: APIClient) -> APIClient:
    """The client after one successful request, so its key's lookup is cached."""
    assert client.get(append_url("nothing-here")).status_code == 404  # authenticated
    assert api_key_cache().get(api_key_hash(client.api_secret)) is not None
    return client


def assert_refused(client: APIClient) -> None:
    """The next request answers 401 and writes nothing."""
    sessions = Session.objects.count()
    response = client.post(append_url(), APPEND, format="json")
    assert response.status_code == 401, response.content
    assert response.json()["error"]["code"] == "unauthenticated"
    assert Session.objects.count() == sessions
    assert api_key_cache().get(api_key_hash(client.api_secret)) is None


def key_of(client: APIClient) -> ApiKey:
    return ApiKey.objects.get(key_hash=api_key_hash(client.api_secret))


@pytest.fixture
def agent(tenant: Tenant, client_for: Callable[..., APIClient]) -> APIClient:
    return warmed(client_for(tenant, ("read", "write")))


@pytest.fixture
def tenant_admin(tenant: Tenant) -> Client:
    staff = StaffUserFactory()
    MembershipFactory(user=staff, tenant=tenant)
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def superuser() -> Client:
    client = Client()
    client.force_login(StaffUserFactory(is_superuser=True))
    return client


# --- the key itself ----------------------------------------------------------------------------
@pytest.mark.django_db
def test_revoked_by_the_service(agent, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        api_key_revoke(api_key=key_of(agent))
    assert_refused(agent)


@pytest.mark.django_db
def test_revoked_by_a_queryset(tenant, client_for, django_capture_on_commit_callbacks) -> None:
    first, second = warmed(client_for(tenant)), warmed(client_for(tenant))
    keeper = warmed(client_for(tenant))

    with django_capture_on_commit_callbacks(execute=True):
        revoked = api_keys_revoke(
            keys=ApiKey.objects.exclude(key_hash=api_key_hash(keeper.api_secret))
        )
        again = api_keys_revoke(keys=ApiKey.objects.all())

    assert (revoked, again) == (2, 1)  # keys revoked before are left as they were
    assert_refused(first)
    assert_refused(second)
    assert_refused(keeper)


@pytest.mark.django_db
def test_revoked_on_the_admin_change_form(
    agent, tenant_admin, django_capture_on_commit_callbacks
) -> None:
    key = key_of(agent)
    url = reverse("admin:profiles_apikey_change", args=[key.pk])
    assert "Revoke this key" in tenant_admin.get(url).content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        response = tenant_admin.post(
            url, {"name": key.name, "scopes": ["read", "write"], "revoke": "on"}
        )

    assert response.status_code == 302
    assert_refused(agent)
    key.refresh_from_db()
    assert key.revoked_at is not None
    # A revoked key is shown read-only: posting to its form changes nothing.
    tenant_admin.post(url, {"name": "renamed", "scopes": ["read"]})
    key.refresh_from_db()
    assert key.name != "renamed" and key.scopes == ["read", "write"]


@pytest.mark.django_db
def test_revoked_by_the_admin_bulk_action(
    tenant, client_for, tenant_admin, django_capture_on_commit_callbacks
) -> None:
    agents = [warmed(client_for(tenant)) for _ in range(2)]

    with django_capture_on_commit_callbacks(execute=True):
        response = tenant_admin.post(
            reverse("admin:profiles_apikey_changelist"),
            {"action": "revoke_keys", "_selected_action": [key_of(a).pk for a in agents]},
            follow=True,
        )

    assert "Revoked 2 key(s)." in response.content.decode()
    for client in agents:
        assert_refused(client)


@pytest.mark.django_db
def test_seed_demo_revokes_the_previous_demo_key_at_once(
    capsys, django_capture_on_commit_callbacks
) -> None:
    def seed() -> APIClient:
        with django_capture_on_commit_callbacks(execute=True):
            call_command("seed_demo", "--password", "demo-pass")
        secret = re.search(r"API key:\s+(\S+)", capsys.readouterr().out).group(1)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        client.api_secret = secret  # type: ignore[attr-defined]
        return client

    previous = warmed(seed())
    current = seed()

    assert_refused(previous)
    assert current.post(append_url(), APPEND, format="json").status_code == 201
    assert ApiKey.objects.filter(name="demo key", revoked_at__isnull=True).count() == 1


# --- scopes ------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_a_reduced_scope_is_lost_at_once(
    agent, tenant_admin, django_capture_on_commit_callbacks
) -> None:
    key = key_of(agent)

    with django_capture_on_commit_callbacks(execute=True):
        response = tenant_admin.post(
            reverse("admin:profiles_apikey_change", args=[key.pk]),
            {"name": "reader now", "scopes": ["read"]},
        )

    assert response.status_code == 302
    refused = agent.post(append_url(), APPEND, format="json")
    assert refused.status_code == 403
    assert "'write'" in refused.json()["error"]["message"]
    assert Session.objects.count() == 0
    assert agent.get(append_url("nothing-here")).status_code == 404  # still reads
    key.refresh_from_db()
    assert (key.name, key.scopes, key.revoked_at) == ("reader now", ["read"], None)


@pytest.mark.django_db
def test_scopes_changed_by_the_service(agent, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        api_key_update(api_key=key_of(agent), name="writer", scopes=["write"])

    assert agent.get(append_url("nothing-here")).status_code == 403
    assert agent.post(append_url(), APPEND, format="json").status_code == 201


# --- the key's tenant --------------------------------------------------------------------------
@pytest.mark.django_db
def test_tenant_deactivated_on_the_admin_change_form(
    tenant, agent, superuser, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = superuser.post(
            reverse("admin:profiles_tenant_change", args=[tenant.pk]),
            {"slug": tenant.slug, "name": tenant.name},  # "is_active" unticked
        )

    assert response.status_code == 302
    assert_refused(agent)
    tenant.refresh_from_db()
    assert tenant.is_active is False


@pytest.mark.django_db
def test_tenants_deactivated_by_the_admin_bulk_action(
    tenant, other_tenant, client_for, superuser, django_capture_on_commit_callbacks
) -> None:
    mine, theirs = warmed(client_for(tenant)), warmed(client_for(other_tenant))

    with django_capture_on_commit_callbacks(execute=True):
        response = superuser.post(
            reverse("admin:profiles_tenant_changelist"),
            {"action": "deactivate_tenants", "_selected_action": [tenant.pk, other_tenant.pk]},
            follow=True,
        )

    assert "Deactivated 2 tenant(s)." in response.content.decode()
    assert_refused(mine)
    assert_refused(theirs)

    with django_capture_on_commit_callbacks(execute=True):
        superuser.post(
            reverse("admin:profiles_tenant_changelist"),
            {"action": "activate_tenants", "_selected_action": [tenant.pk]},
        )
    assert mine.post(append_url(), APPEND, format="json").status_code == 201
    assert_refused(theirs)


@pytest.mark.django_db
def test_tenant_deactivated_by_the_service(
    tenant, other_tenant, client_for, django_capture_on_commit_callbacks
) -> None:
    mine, theirs = warmed(client_for(tenant)), warmed(client_for(other_tenant))

    with django_capture_on_commit_callbacks(execute=True):
        changed = tenants_set_active(tenants=Tenant.objects.filter(pk=tenant.pk), is_active=False)

    assert changed == 1
    assert_refused(mine)
    assert theirs.post(append_url(), APPEND, format="json").status_code == 201


@pytest.mark.django_db
def test_tenant_deleted_by_the_service(tenant, agent, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        tenant_delete(tenant=tenant)
    assert_refused(agent)


@pytest.mark.django_db
def test_tenant_deleted_in_the_admin(
    tenant, agent, superuser, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = superuser.post(
            reverse("admin:profiles_tenant_delete", args=[tenant.pk]), {"post": "yes"}
        )
    assert response.status_code == 302
    assert not Tenant.objects.filter(pk=tenant.pk).exists()
    assert_refused(agent)


# --- the cache itself --------------------------------------------------------------------------
@pytest.mark.django_db
def test_a_lookup_racing_a_revocation_cannot_cache_the_old_row(
    tenant, client_for, django_capture_on_commit_callbacks
) -> None:
    client = client_for(tenant)
    key = key_of(client)
    # A lookup read the key from PostgreSQL while it was still active ...
    stale = ApiKey.objects.select_related("tenant").get(pk=key.pk)
    # ... the key is revoked and its entry forgotten before that lookup writes the cache ...
    with django_capture_on_commit_callbacks(execute=True):
        api_key_revoke(api_key=key)
    api_key_cache().put(stale)
    api_key_cache().refresh(stale)

    # ... so the old row never reaches the cache, and the key is refused.
    assert api_key_cache().get(key.key_hash) is None
    assert api_key_for_secret(secret=client.api_secret) is None
    assert_refused(client)
