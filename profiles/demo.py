"""The demo tenant the run script creates, so a fresh install has something to try."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction

from profiles.models import ApiKey, Project, Tenant, TenantMembership, Workspace
from profiles.services.api_keys import api_key_create, api_keys_revoke
from profiles.services.end_users import end_user_get_or_create
from profiles.services.profile_versions import preference_set

DEMO_KEY_NAME = "demo key"


@dataclass(frozen=True)
class DemoSeed:
    tenant: Tenant
    username: str
    api_key: str


@transaction.atomic
def demo_seed(*, username: str, password: str) -> DemoSeed:
    """Create or refresh the demo tenant, its tenant admin login and a new demo API key.

    Safe to rerun: rows are reused, the password is reset, older demo keys are revoked.
    """
    tenant, _ = Tenant.objects.get_or_create(slug="demo", defaults={"name": "Demo tenant"})
    project, _ = Project.objects.get_or_create(
        tenant=tenant,
        key="shop",
        defaults={"name": "Demo shop", "default_env": "staging", "metadata": {"repo": "shop"}},
    )
    Workspace.objects.get_or_create(
        tenant=tenant,
        key="shop-dev",
        defaults={"name": "Shop developers", "project": project, "default_env": "dev"},
    )
    end_user = end_user_get_or_create(tenant=tenant, external_id="u_demo")
    preference_set(end_user=end_user, key="preference.answer_style", value="brief_first")

    user_model = get_user_model()
    user, _ = user_model.objects.get_or_create(username=username, defaults={"is_staff": True})
    user.is_staff = True
    user.set_password(password)
    user.save()
    for role in TenantMembership.Role.values:
        TenantMembership.objects.get_or_create(user=user, tenant=tenant, role=role)

    api_keys_revoke(keys=ApiKey.objects.filter(tenant=tenant, name=DEMO_KEY_NAME))
    _, secret = api_key_create(
        tenant=tenant, name=DEMO_KEY_NAME, scopes=["read", "write", "admin"], created_by=user
    )
    return DemoSeed(tenant=tenant, username=username, api_key=secret)
