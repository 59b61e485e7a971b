from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from profiles.key_cache import api_key_cache
from profiles.models import ApiKey
from profiles.services.api_keys import api_key_create, api_key_revoke
from profiles.services.tenants import tenant_save
from transcripts.models import Session


def events_url(session_id: str = "s-1") -> str:
    return reverse("transcripts:events", kwargs={"session_id": session_id})


BODY = {"user_id": "u_1", "events": [{"role": "user", "content": "hello"}]}


@pytest.mark.django_db
def test_keys_are_stored_hashed_and_the_secret_is_shown_only_once(tenant) -> None:
    api_key, secret = api_key_create(tenant=tenant, name="agent", scopes=["read"])

    stored = ApiKey.objects.get(pk=api_key.pk)
    assert secret.startswith(f"mk_{stored.prefix}_")
    assert stored.key_hash != secret and len(stored.key_hash) == 64
    assert secret not in {str(value) for value in vars(stored).values()}


@pytest.mark.django_db
def test_a_valid_key_works_and_records_its_last_use(tenant, client_for) -> None:
    client = client_for(tenant)
    response = client.post(events_url(), BODY, format="json")
    assert response.status_code == 201
    assert ApiKey.objects.get(tenant=tenant).last_used_at is not None


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header",
    ["", "Bearer", "Bearer mk_unknown_secret", "Token abc", "Bearer a b"],
)
def test_missing_or_unknown_keys_are_401(header: str) -> None:
    client = APIClient()
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)
    response = client.post(events_url(), BODY, format="json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert Session.objects.count() == 0


@pytest.mark.django_db
def test_a_revoked_key_is_refused_at_once(
    tenant, client_for, django_capture_on_commit_callbacks
) -> None:
    client = client_for(tenant)
    assert client.post(events_url(), BODY, format="json").status_code == 201
    assert api_key_cache().get(ApiKey.objects.get(tenant=tenant).key_hash) is not None  # cached

    with django_capture_on_commit_callbacks(execute=True):
        api_key_revoke(api_key=ApiKey.objects.get(tenant=tenant))

    response = client.get(events_url())
    assert response.status_code == 401


@pytest.mark.django_db
def test_keys_of_a_deactivated_tenant_are_refused(
    tenant, client_for, django_capture_on_commit_callbacks
) -> None:
    client = client_for(tenant)
    assert client.get(events_url()).status_code == 404  # authenticated (and now cached)
    with django_capture_on_commit_callbacks(execute=True):
        tenant.is_active = False
        tenant_save(tenant=tenant)
    assert client.get(events_url()).status_code == 401


@pytest.mark.django_db
def test_a_cached_key_authenticates_without_a_query(
    tenant, client_for, django_assert_num_queries
) -> None:
    client = client_for(tenant, ("read",))
    assert client.get(events_url()).status_code == 404  # cached by the first request
    with django_assert_num_queries(1):  # the session lookup of the view, nothing for the key
        assert client.get(events_url()).status_code == 404


@pytest.mark.django_db
def test_scopes_are_enforced_and_a_refused_write_changes_nothing(tenant, client_for) -> None:
    reader = client_for(tenant, ("read",))
    writer = client_for(tenant, ("write",))

    refused = reader.post(events_url(), BODY, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_denied"
    assert "write" in refused.json()["error"]["message"]
    assert Session.objects.count() == 0

    assert writer.post(events_url(), BODY, format="json").status_code == 201
    assert writer.get(events_url()).status_code == 403
    assert reader.get(events_url()).status_code == 200
    profile_url = reverse("profiles:profile", kwargs={"user_id": "u_1"})
    assert (
        writer.patch(profile_url, {"profile": {"language": "en"}}, format="json").status_code == 403
    )


@pytest.mark.django_db
def test_each_key_is_throttled_through_redis(tenant, client_for, settings) -> None:
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    busy, quiet = client_for(tenant, ("read",)), client_for(tenant, ("read",))
    url = reverse("profiles:profile", kwargs={"user_id": "nobody"})

    statuses = [busy.get(url).status_code for _ in range(4)]

    assert statuses == [404, 404, 404, 429]
    throttled = busy.get(url)
    assert throttled.json()["error"]["code"] == "throttled"
    assert int(throttled["Retry-After"]) >= 1
    assert quiet.get(url).status_code == 404  # another key has its own budget


@pytest.mark.django_db
def test_create_api_key_command_prints_a_working_key(tenant, capsys) -> None:
    call_command("create_api_key", tenant.slug, "--scopes", "read", "--name", "cli")
    secret = capsys.readouterr().out.strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get(events_url()).status_code == 404  # authenticated; no such session
    assert ApiKey.objects.get(name="cli").scopes == ["read"]


@pytest.mark.django_db
def test_unknown_scopes_are_refused(tenant) -> None:
    from memoryproject.errors import Invalid

    with pytest.raises(Invalid):
        api_key_create(tenant=tenant, name="x", scopes=["root"])
    assert ApiKey.objects.count() == 0


@pytest.mark.django_db
def test_refreshing_a_cached_key_never_brings_a_removed_one_back(tenant, client_for) -> None:
    from datetime import timedelta

    from django.utils import timezone

    client = client_for(tenant, ("read",))
    client.get(events_url())  # cached now
    api_key = ApiKey.objects.get(tenant=tenant)
    cache = api_key_cache()

    api_key.last_used_at = timezone.now() - timedelta(hours=1)
    cache.refresh(api_key)
    assert cache.get(api_key.key_hash).last_used_at == api_key.last_used_at

    cache.forget([api_key.key_hash])
    cache.refresh(api_key)
    assert cache.get(api_key.key_hash) is None
