"""Reads of Layer 1, always scoped by the caller's tenant."""

from __future__ import annotations

import hashlib
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from memoryproject.errors import NotFound
from profiles.models import (
    ApiKey,
    EndUser,
    StableFact,
    Tenant,
    TenantMembership,
    UserPreference,
    UserProfile,
    UserProjectRole,
)


def api_key_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_key_for_secret(*, secret: str) -> ApiKey | None:
    """The active key of an active tenant whose secret this is, or None."""
    from profiles.key_cache import api_key_cache

    key_hash = api_key_hash(secret)
    cached = api_key_cache().get(key_hash)
    if cached is not None:
        return cached
    api_key = (
        ApiKey.objects.select_related("tenant")
        .filter(key_hash=key_hash, revoked_at__isnull=True, tenant__is_active=True)
        .first()
    )
    if api_key is not None:
        api_key_cache().put(api_key)
    return api_key


def tenants_for_staff(*, user: User | AnonymousUser, role: str | None = None) -> QuerySet[Tenant]:
    """Tenants a staff user may work in (all of them for a superuser)."""
    if not user.is_authenticated or not user.is_active:
        return Tenant.objects.none()
    if user.is_superuser:
        return Tenant.objects.all()
    memberships = TenantMembership.objects.filter(user=user)
    if role:
        memberships = memberships.filter(role=role)
    return Tenant.objects.filter(pk__in=memberships.values("tenant_id"))


def end_user_for(*, tenant: Tenant, external_id: str) -> EndUser:
    """The tenant's end user with this id; NotFound otherwise (also for other tenants' users)."""
    try:
        return EndUser.objects.get(tenant=tenant, external_id=external_id)
    except EndUser.DoesNotExist:
        raise NotFound(f"No user {external_id!r}.") from None


def current_preferences(*, end_user: EndUser) -> QuerySet[UserPreference]:
    return UserPreference.objects.filter(end_user=end_user, is_current=True).order_by("key")


def current_facts_for_user(*, end_user: EndUser) -> QuerySet[StableFact]:
    """Facts that apply to this user: tenant-wide, of the user's projects, and the user's own."""
    project_ids = UserProjectRole.objects.filter(end_user=end_user).values("project_id")
    return (
        StableFact.objects.filter(tenant_id=end_user.tenant_id, is_current=True)
        .filter(
            Q(scope=StableFact.Scope.TENANT)
            | Q(scope=StableFact.Scope.PROJECT, project_id__in=project_ids)
            | Q(scope=StableFact.Scope.USER, end_user=end_user)
        )
        .select_related("project")
        .order_by("scope", "key")
    )


def empty_profile_document(*, external_id: str) -> dict[str, Any]:
    """The document of an end user Layer 1 knows nothing about."""
    return {
        "user_id": external_id,
        "profile": {
            "language": "",
            "answer_style": "",
            "timezone": "",
            "display_name": "",
            "extras": {},
            "updated_at": None,
        },
        "preferences": [],
        "roles": [],
        "facts": [],
    }


def profile_document_for(*, tenant: Tenant, external_id: str) -> dict[str, Any]:
    """Everything Layer 1 knows about one end user, as plain data."""
    end_user = end_user_for(tenant=tenant, external_id=external_id)
    profile = UserProfile.objects.filter(end_user=end_user).first()
    roles = UserProjectRole.objects.filter(end_user=end_user).select_related("project")
    return {
        "user_id": end_user.external_id,
        "profile": {
            "language": profile.language if profile else "",
            "answer_style": profile.answer_style if profile else "",
            "timezone": profile.timezone if profile else "",
            "display_name": profile.display_name if profile else "",
            "extras": profile.extras if profile else {},
            "updated_at": profile.updated_at if profile else None,
        },
        "preferences": [
            {
                "id": f"pref_{p.pk}",
                "key": p.key,
                "value": p.value,
                "confidence": p.confidence,
                "source": p.source,
                "version": p.version,
                "updated_at": p.created_at,
            }
            for p in current_preferences(end_user=end_user)
        ],
        "roles": [
            {"project": r.project.key, "role": r.role, "permission_scope": r.permission_scope}
            for r in roles
        ],
        "facts": [
            {
                "id": f"fact_{f.pk}",
                "key": f.key,
                "value": f.value,
                "scope": f.scope,
                "project": f.project.key if f.project else None,
                "source": f.source,
                "version": f.version,
                "updated_at": f.created_at,
            }
            for f in current_facts_for_user(end_user=end_user)
        ],
    }
