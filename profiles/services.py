"""Writes of Layer 1: tenants, API keys, end users, profiles, versioned preferences and facts."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memoryproject.errors import Conflict, Invalid
from memoryproject.redaction import Redactor, Report, redactor_for
from profiles.models import (
    ApiKey,
    EndUser,
    Project,
    Source,
    StableFact,
    Tenant,
    UserPreference,
    UserProfile,
    UserProjectRole,
)
from profiles.selectors import api_key_hash

LAST_USED_PRECISION = timedelta(seconds=60)
PROFILE_FIELDS = ("language", "answer_style", "timezone", "display_name", "extras")
REDACTED_PROFILE_FIELDS = ("answer_style", "display_name", "extras")
SENSITIVE_ONLY = "Holds nothing but sensitive data (redacted), so not stored."


# --- API keys ----------------------------------------------------------------------------------
def api_key_create(
    *,
    tenant: Tenant,
    name: str,
    scopes: Iterable[str],
    created_by: User | None = None,
) -> tuple[ApiKey, str]:
    """Create a key and return it with its secret, which is shown once and never stored."""
    scope_list = sorted(set(scopes))
    unknown = set(scope_list) - set(ApiKey.Scope.values)
    if unknown or not scope_list:
        raise Invalid(
            "Scopes must be a non-empty subset of read, write, admin.",
            fields={"scopes": [f"Unknown scope(s): {', '.join(sorted(unknown)) or 'none given'}"]},
        )
    prefix = secrets.token_hex(6)
    secret = f"mk_{prefix}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        tenant=tenant,
        name=name,
        prefix=prefix,
        key_hash=api_key_hash(secret),
        scopes=scope_list,
        created_by=created_by,
    )
    return api_key, secret


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    """Revoke a key at once; later requests with it answer 401."""
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


def api_key_touch(*, api_key: ApiKey) -> None:
    """Record use, writing at most once a minute per key so hot keys cost no extra writes."""
    now = timezone.now()
    if api_key.last_used_at and now - api_key.last_used_at < LAST_USED_PRECISION:
        return
    from profiles.key_cache import api_key_cache

    if not api_key_cache().claim_touch(api_key.pk, seconds=LAST_USED_PRECISION.seconds):
        return  # another process recorded this minute's use
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    api_key.last_used_at = now
    api_key_cache().refresh(api_key)  # other processes then skip the claim for a minute


# --- end users and their profiles ----------------------------------------------------------------
def end_user_get_or_create(*, tenant: Tenant, external_id: str) -> EndUser:
    """The tenant's end user with this id, created on first sight."""
    try:
        with transaction.atomic():
            end_user, _ = EndUser.objects.get_or_create(tenant=tenant, external_id=external_id)
    except IntegrityError:  # a concurrent request created it first
        end_user = EndUser.objects.get(tenant=tenant, external_id=external_id)
    return end_user


def _write_version(
    model: type[UserPreference] | type[StableFact],
    *,
    owner: dict[str, Any],
    value: Any,
    details: dict[str, Any],
) -> UserPreference | StableFact:
    """Make `value` the current version for `owner`; keeps the previous row as history.

    The caller holds a row lock on the owner, so versions of one key never race.
    """
    current = model.objects.filter(**owner, is_current=True).first()
    if current is not None:
        unchanged = current.value == value and all(
            getattr(current, name) == val for name, val in details.items() if name != "source_ids"
        )
        if unchanged:
            return current
        current.is_current = False
        current.save(update_fields=["is_current"])
    row = model(**owner, value=value, version=current.version + 1 if current else 1, **details)
    row.full_clean(validate_unique=False, validate_constraints=False)
    row.save()
    return row


def _refuse_emptied(report: Report) -> None:
    if report.emptied:
        raise Invalid(
            "A value holds nothing but sensitive data.",
            fields={path: [SENSITIVE_ONLY] for path in report.emptied},
        )


def redacted_value(value: Any, *, key: str, redactor: Redactor, path: str = "value") -> Any:
    """A preference or fact value redacted (its key says what it is: `profile.bank_card`);
    `Invalid` naming `path` when it held nothing but sensitive content."""
    report = Report()
    redacted = redactor.value(value, path=path, report=report, context=key)
    _refuse_emptied(report)
    return redacted


def preference_set(
    *,
    end_user: EndUser,
    key: str,
    value: Any,
    confidence: float = 1.0,
    source: str = Source.API,
    source_ids: Sequence[str] = (),
    redactor: Redactor | None = None,
) -> UserPreference:
    """Set a preference of an end user as a new version (unchanged values add no version).

    The value is redacted first; one that is nothing but sensitive data is `Invalid`.
    """
    redactor = redactor or redactor_for(end_user.tenant_id)
    value = redacted_value(value, key=key, redactor=redactor)
    with transaction.atomic():
        EndUser.objects.select_for_update().filter(pk=end_user.pk).get()
        row = _write_version(
            UserPreference,
            owner={"tenant_id": end_user.tenant_id, "end_user": end_user, "key": key},
            value=value,
            details={"confidence": confidence, "source": source, "source_ids": list(source_ids)},
        )
    assert isinstance(row, UserPreference)
    return row


def fact_set(
    *,
    tenant: Tenant,
    key: str,
    value: Any,
    project: Project | None = None,
    end_user: EndUser | None = None,
    source: str = Source.API,
    source_ids: Sequence[str] = (),
    approved_by: User | None = None,
    redactor: Redactor | None = None,
) -> StableFact:
    """Set a stable fact for the tenant, one of its projects, or one end user, as a new version."""
    foreign_project = project is not None and project.tenant_id != tenant.pk
    if foreign_project or (end_user is not None and end_user.tenant_id != tenant.pk):
        raise Invalid("The project or user belongs to another tenant.")
    value = redacted_value(value, key=key, redactor=redactor or redactor_for(tenant))
    if end_user is not None:
        scope = StableFact.Scope.USER
    elif project is not None:
        scope = StableFact.Scope.PROJECT
    else:
        scope = StableFact.Scope.TENANT
    with transaction.atomic():
        lock_target: Any = end_user or project or tenant
        type(lock_target).objects.select_for_update().filter(pk=lock_target.pk).get()
        row = _write_version(
            StableFact,
            owner={
                "tenant": tenant,
                "scope": scope,
                "project": project,
                "end_user": end_user,
                "key": key,
            },
            value=value,
            details={
                "source": source,
                "source_ids": list(source_ids),
                "approved_by": approved_by,
                "approved_at": timezone.now() if approved_by else None,
            },
        )
    assert isinstance(row, StableFact)
    return row


@dataclass(frozen=True)
class ProfilePatch:
    """A validated change to one end user's Layer 1 record; every part is optional."""

    profile: dict[str, Any] = field(default_factory=dict)
    preferences: Sequence[dict[str, Any]] = ()
    roles: Sequence[dict[str, Any]] = ()
    facts: Sequence[dict[str, Any]] = ()


@transaction.atomic
def profile_update(
    *, tenant: Tenant, external_id: str, patch: ProfilePatch, actor: Any = None
) -> EndUser:
    """Apply a profile patch as one unit: all of it lands or none of it (creates the user).

    Free text (display name, answer style, extras, preference and fact values) is redacted
    before anything is written; a value that held nothing but sensitive data refuses the
    patch (`Invalid` naming e.g. `preferences.0.value`).
    """
    redactor = redactor_for(tenant)
    patch = redacted_patch(patch, redactor=redactor)
    project_keys = {item["project"] for item in [*patch.roles, *patch.facts] if item.get("project")}
    projects = _projects_by_key(tenant=tenant, keys=project_keys)
    end_user = end_user_get_or_create(tenant=tenant, external_id=external_id)
    EndUser.objects.select_for_update().filter(pk=end_user.pk).get()

    if patch.profile:
        profile, _ = UserProfile.objects.get_or_create(end_user=end_user)
        for name in PROFILE_FIELDS:
            if name in patch.profile:
                setattr(profile, name, patch.profile[name])
        profile.full_clean()
        profile.save()

    for item in patch.preferences:
        preference_set(
            end_user=end_user,
            key=item["key"],
            value=item["value"],
            confidence=item.get("confidence", 1.0),
            source_ids=item.get("source_ids", ()),
            redactor=redactor,
        )

    for item in patch.roles:
        project = projects[item["project"]]
        if item.get("role") is None:
            UserProjectRole.objects.filter(end_user=end_user, project=project).delete()
            continue
        UserProjectRole.objects.update_or_create(
            end_user=end_user,
            project=project,
            defaults={
                "tenant": tenant,
                "role": item["role"],
                "permission_scope": item.get("permission_scope", UserProjectRole.Scope.READ_ONLY),
            },
        )

    for item in patch.facts:
        fact_set(
            tenant=tenant,
            key=item["key"],
            value=item["value"],
            end_user=end_user,
            project=projects[item["project"]] if item.get("project") else None,
            source_ids=item.get("source_ids", ()),
            redactor=redactor,
        )
    EndUser.objects.filter(pk=end_user.pk).update(updated_at=timezone.now())
    _audit_profile_change(tenant, end_user, patch, actor)
    return end_user


def redacted_patch(patch: ProfilePatch, *, redactor: Redactor) -> ProfilePatch:
    """The patch with its free text redacted; `Invalid` naming every value that held nothing
    but sensitive content."""
    report = Report()
    profile = {
        name: redactor.value(value, path=f"profile.{name}", report=report)
        if name in REDACTED_PROFILE_FIELDS
        else value
        for name, value in patch.profile.items()
    }

    def items(part: str, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {
                **row,
                "value": redactor.value(
                    row["value"], path=f"{part}.{i}.value", report=report, context=row["key"]
                ),
            }
            if "value" in row
            else row
            for i, row in enumerate(rows)
        ]

    redacted = ProfilePatch(
        profile=profile,
        preferences=items("preferences", patch.preferences),
        roles=patch.roles,
        facts=items("facts", patch.facts),
    )
    _refuse_emptied(report)
    return redacted


def _audit_profile_change(
    tenant: Tenant, end_user: EndUser, patch: ProfilePatch, actor: Any
) -> None:
    from memories.review.audit import Action, Actor, audit_record

    audit_record(
        tenant=tenant,
        action=Action.UPDATE,
        actor=actor or Actor.job("profile"),
        object_type="profile",
        object_id=f"end_user:{end_user.pk}",  # not the tenant's id: audit outlives erasure
        after=asdict(patch),
        end_user_pk=end_user.pk,
        details={
            "parts": [name for name, value in asdict(patch).items() if value],
            "keys": sorted(
                item["key"] for item in [*patch.preferences, *patch.facts] if "key" in item
            ),
        },
    )


def _projects_by_key(*, tenant: Tenant, keys: set[str]) -> dict[str, Project]:
    found = {p.key: p for p in Project.objects.filter(tenant=tenant, key__in=keys)}
    missing = sorted(keys - found.keys())
    if missing:
        raise Invalid(
            "Unknown project(s).",
            fields={"project": [f"No project {key!r} in this tenant." for key in missing]},
        )
    return found


def tenant_create(*, slug: str, name: str) -> Tenant:
    """Create a tenant; its slug must be unique."""
    tenant = Tenant(slug=slug, name=name)
    tenant.full_clean()
    try:
        with transaction.atomic():
            tenant.save()
    except IntegrityError:
        raise Conflict(f"Tenant {slug!r} exists already.") from None
    return tenant


@transaction.atomic
def tenant_delete(*, tenant: Tenant) -> None:
    """Remove a tenant and every PostgreSQL row it holds, its audit trail included.

    Audit events refuse deletion unless the transaction says it removes whole tenants.
    """
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL memory.audit_purge = 'on'")
    tenant.delete()
