"""Writes of Layer 1: tenants, API keys, end users, profiles, versioned preferences and facts."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import QuerySet
from django.db.models.signals import post_save
from django.utils import timezone

from memories.audit.services import Action, Actor, audit_record
from memoryproject.errors import Conflict, Invalid
from memoryproject.quarantine import WritePath, held_view, hold, screen_for
from memoryproject.redaction import Redactor, Report, redactor_for
from profiles.models import (
    AgentSetting,
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

logger = logging.getLogger(__name__)

LAST_USED_PRECISION = timedelta(seconds=60)
PROFILE_FIELDS = ("language", "answer_style", "timezone", "display_name", "extras")
REDACTED_PROFILE_FIELDS = ("answer_style", "display_name", "extras")
SENSITIVE_ONLY = "Holds nothing but sensitive data (redacted), so not stored."
TENANT_FIELDS = ("slug", "name", "is_active")


def staff_audit(
    *,
    tenant: Tenant | int,
    action: str,
    staff: Any,
    object_type: str,
    object_id: str,
    before: Any = None,
    after: Any = None,
    details: dict[str, Any] | None = None,
    end_user_pk: int | None = None,
) -> None:
    """Record a staff user's change of Layer 1 in the tenant's audit trail (in the caller's
    transaction). The trail sits below this layer, so every writer can record into it."""
    audit_record(
        tenant=tenant,
        action=action,
        actor=Actor.staff(staff),
        object_type=object_type,
        object_id=object_id,
        before=before,
        after=after,
        end_user_pk=end_user_pk,
        details=details,
    )


# --- API keys ----------------------------------------------------------------------------------
def api_key_create(
    *,
    tenant: Tenant,
    name: str,
    scopes: Iterable[str],
    created_by: User | None = None,
    trusted_writer: bool = False,
) -> tuple[ApiKey, str]:
    """Create a key and return it with its secret, which is shown once and never stored;
    a key a staff user creates (`created_by`) is an audit event."""
    scope_list = _valid_scopes(scopes)
    prefix = secrets.token_hex(6)
    secret = f"mk_{prefix}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        tenant=tenant,
        name=name,
        prefix=prefix,
        key_hash=api_key_hash(secret),
        scopes=scope_list,
        trusted_writer=trusted_writer,
        created_by=created_by,
    )
    if created_by is not None:  # keys made by commands and tests are not staff changes
        staff_audit(
            tenant=tenant,
            action="create",
            staff=created_by,
            object_type="api_key",
            object_id=f"api_key:{api_key.pk}",
            after=_key_state(api_key),
        )
    return api_key, secret


def _key_state(api_key: ApiKey) -> dict[str, Any]:
    return {
        "name": api_key.name,
        "prefix": api_key.prefix,
        "scopes": list(api_key.scopes),
        "trusted_writer": api_key.trusted_writer,
        "revoked": api_key.revoked_at is not None,
    }


def _valid_scopes(scopes: Iterable[str]) -> list[str]:
    scope_list = sorted(set(scopes))
    unknown = set(scope_list) - set(ApiKey.Scope.values)
    if unknown or not scope_list:
        raise Invalid(
            "Scopes must be a non-empty subset of read, write, admin.",
            fields={"scopes": [f"Unknown scope(s): {', '.join(sorted(unknown)) or 'none given'}"]},
        )
    return scope_list


def api_key_cache_forget(*, key_hashes: Iterable[str]) -> None:
    """Drop the cached lookups of these keys as soon as the current transaction commits.

    Every change that can narrow or end a key (revocation, new scopes, its tenant changed,
    deactivated or deleted) goes through a service here that calls this, so the very next
    request with the key is authenticated from PostgreSQL. Signals would not do: queryset
    updates and bulk deletes skip them.
    """
    hashes = sorted(set(key_hashes))
    if not hashes:
        return
    from profiles.key_cache import api_key_cache

    transaction.on_commit(lambda: api_key_cache().forget(hashes))


def api_keys_revoke(*, keys: QuerySet[ApiKey], staff: Any = None) -> int:
    """Revoke every active key of `keys` in one step; later requests with them answer 401.

    Returns how many keys were revoked (keys revoked before are left as they are). With
    `staff`, each revocation is an audit event of its tenant.
    """
    with transaction.atomic():
        active = list(
            ApiKey.objects.select_for_update().filter(
                pk__in=keys.values("pk"), revoked_at__isnull=True
            )
        )
        hashes = [key.key_hash for key in active]
        revoked = ApiKey.objects.filter(key_hash__in=hashes).update(revoked_at=timezone.now())
        api_key_cache_forget(key_hashes=hashes)
        for key in active if staff is not None else ():
            before = _key_state(key)
            staff_audit(
                tenant=key.tenant_id,
                action="revoke",
                staff=staff,
                object_type="api_key",
                object_id=f"api_key:{key.pk}",
                before=before,
                after={**before, "revoked": True},
            )
    return revoked


def api_key_revoke(*, api_key: ApiKey, staff: Any = None) -> ApiKey:
    """Revoke a key at once; later requests with it answer 401."""
    api_keys_revoke(keys=ApiKey.objects.filter(pk=api_key.pk), staff=staff)
    api_key.refresh_from_db(fields=["revoked_at"])
    return api_key


def api_key_update(
    *,
    api_key: ApiKey,
    name: str,
    scopes: Iterable[str],
    staff: Any = None,
    trusted_writer: bool | None = None,
) -> ApiKey:
    """Rename a key, change its scopes or whether it is a trusted writer; each change holds
    from the key's next request on."""
    scope_list = _valid_scopes(scopes)
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().get(pk=api_key.pk)
        if locked.revoked_at is not None:
            raise Conflict("A revoked key cannot be changed.")
        before = _key_state(locked)
        api_key.name, api_key.scopes = name, scope_list
        if trusted_writer is not None:
            api_key.trusted_writer = trusted_writer
        api_key.save(update_fields=["name", "scopes", "trusted_writer"])
        api_key_cache_forget(key_hashes=[locked.key_hash])
        after = _key_state(api_key)
        if staff is not None and after != before:
            staff_audit(
                tenant=api_key.tenant_id,
                action="update",
                staff=staff,
                object_type="api_key",
                object_id=f"api_key:{api_key.pk}",
                before=before,
                after=after,
            )
    return api_key


def api_key_touch(*, api_key: ApiKey) -> None:
    """Record use, writing at most once a minute per key so hot keys cost no extra writes.

    Bookkeeping only: with PostgreSQL down the use goes unrecorded (logged), and the request
    goes on, served by whatever does not need PostgreSQL.
    """
    now = timezone.now()
    if api_key.last_used_at and now - api_key.last_used_at < LAST_USED_PRECISION:
        return
    from profiles.key_cache import api_key_cache

    if not api_key_cache().claim_touch(api_key.pk, seconds=LAST_USED_PRECISION.seconds):
        return  # another process recorded this minute's use
    try:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    except DatabaseError:
        logger.warning("last use of API key %s not recorded", api_key.prefix, exc_info=True)
        return
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


def end_users_get_or_create(*, tenant: Tenant, external_ids: Iterable[str]) -> dict[str, EndUser]:
    """The tenant's end users with these ids by id, the unknown ones created: one read, one
    insert of the missing, one read back (a user created concurrently is simply found)."""
    wanted = set(external_ids)
    found = {
        u.external_id: u for u in EndUser.objects.filter(tenant=tenant, external_id__in=wanted)
    }
    missing = sorted(wanted - found.keys())
    if missing:
        EndUser.objects.bulk_create(
            [EndUser(tenant=tenant, external_id=external_id) for external_id in missing],
            ignore_conflicts=True,
        )
        for end_user in EndUser.objects.filter(tenant=tenant, external_id__in=missing):
            found[end_user.external_id] = end_user
            # bulk_create sends no signals; receivers of a new end user (cached recall
            # context, say) hear of it as from a save.
            post_save.send(
                sender=EndUser, instance=end_user, created=True, raw=False, using="default"
            )
    return found


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
    staff: Any = None,
) -> StableFact:
    """Set a stable fact for the tenant, one of its projects, or one end user, as a new version.

    With `staff` (an admin's change of a tenant or project fact) it is an audit event; a
    user's facts change through `profile_update`, which records its own.
    """
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
        if staff is not None:
            staff_audit(
                tenant=tenant,
                action="update",
                staff=staff,
                object_type="fact",
                object_id=f"fact:{row.pk}",
                after={"key": key, "value": value, "scope": scope, "version": row.version},
                end_user_pk=end_user.pk if end_user else None,
                details={"keys": [key], "project": project.key if project else ""},
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
    *,
    tenant: Tenant,
    external_id: str,
    patch: ProfilePatch,
    actor: Any = None,
    staff: Any = None,
    source: str = Source.API,
) -> EndUser:
    """Apply a profile patch as one unit: all of it lands or none of it (creates the user).

    Free text (display name, answer style, extras, preference and fact values) is redacted
    before anything is written; a value that held nothing but sensitive data refuses the
    patch (`Invalid` naming e.g. `preferences.0.value`). The API passes its key as `actor`;
    the admin passes the staff user as `staff` (and `source` admin): one audit event either way.
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
            source=source,
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
            source=source,
            source_ids=item.get("source_ids", ()),
            redactor=redactor,
        )
    EndUser.objects.filter(pk=end_user.pk).update(updated_at=timezone.now())
    _audit_profile_change(tenant, end_user, patch, actor, staff)
    return end_user


@dataclass(frozen=True)
class PatchResult:
    """A profile patch applied: its end user (none when nothing of it was written) and the
    values held for review because they read as an instruction to the model."""

    end_user: EndUser | None
    quarantined: list[dict[str, str]]


@transaction.atomic
def profile_patch_apply(
    *, tenant: Tenant, external_id: str, patch: ProfilePatch, actor: Any = None
) -> PatchResult:
    """`profile_update` for a patch from outside: a free-text value (display name, answer
    style, extras, a preference's or fact's value) that reads as an instruction to the model
    is held for review and left out; the rest lands as one unit. A patch that is all held
    writes nothing (not even the end user)."""
    redacted = redacted_patch(patch, redactor=redactor_for(tenant))
    screen = screen_for(tenant)
    quarantined: list[dict[str, str]] = []

    def held(name: str, value: Any, part: dict[str, Any]) -> bool:
        finding = screen.value(value, path=name)
        if finding is None:
            return False
        held_id = hold(
            tenant=tenant,
            path=WritePath.PROFILE,
            finding=finding,
            text=value if isinstance(value, str) else repr(value),
            payload={"user_id": external_id, "patch": part},
            source_kind="profile",
            user_id=external_id,
        )
        quarantined.append(held_view(quarantine_id=held_id, finding=finding))
        return True

    profile = {
        name: value
        for name, value in redacted.profile.items()
        if name not in REDACTED_PROFILE_FIELDS
        or not held(f"profile.{name}", value, {"profile": {name: value}})
    }
    preferences = [
        item
        for index, item in enumerate(redacted.preferences)
        if not held(f"preferences.{index}.value", item.get("value"), {"preferences": [item]})
    ]
    facts = [
        item
        for index, item in enumerate(redacted.facts)
        if not held(f"facts.{index}.value", item.get("value"), {"facts": [item]})
    ]
    kept = ProfilePatch(profile=profile, preferences=preferences, roles=redacted.roles, facts=facts)
    if quarantined and not any((kept.profile, kept.preferences, kept.roles, kept.facts)):
        return PatchResult(end_user=None, quarantined=quarantined)
    end_user = profile_update(tenant=tenant, external_id=external_id, patch=kept, actor=actor)
    return PatchResult(end_user=end_user, quarantined=quarantined)


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
    tenant: Tenant, end_user: EndUser, patch: ProfilePatch, actor: Any, staff: Any
) -> None:
    if actor is None:
        actor = Actor.staff(staff) if staff is not None else Actor.job("profile")
    audit_record(
        tenant=tenant,
        action=Action.UPDATE,
        actor=actor,
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


def tenant_save(*, tenant: Tenant, staff: Any = None) -> Tenant:
    """Save a tenant edited by an admin; its keys' cached lookups (which carry the tenant's
    slug, name and active flag) are dropped, so a deactivation holds from the next request.
    With `staff` the change is an audit event of the tenant."""
    with transaction.atomic():
        before = (
            Tenant.objects.filter(pk=tenant.pk).values(*TENANT_FIELDS).first()
            if tenant.pk
            else None
        )
        tenant.save()
        _forget_keys_of(tenant_ids=[tenant.pk])
        after = {name: getattr(tenant, name) for name in TENANT_FIELDS}
        if staff is not None and after != before:
            staff_audit(
                tenant=tenant,
                action="update" if before else "create",
                staff=staff,
                object_type="tenant",
                object_id=f"tenant:{tenant.pk}",
                before=before,
                after=after,
                details={
                    "changed": sorted(k for k in after if not before or before[k] != after[k])
                },
            )
    return tenant


def tenants_set_active(*, tenants: QuerySet[Tenant], is_active: bool, staff: Any = None) -> int:
    """Activate or deactivate tenants in one step; a deactivated tenant's keys answer 401
    from the next request on. Returns how many tenants changed; with `staff` each change is
    an audit event of its tenant."""
    with transaction.atomic():
        pks = list(tenants.select_for_update().values_list("pk", flat=True))
        changing = list(
            Tenant.objects.filter(pk__in=pks)
            .exclude(is_active=is_active)
            .values(*TENANT_FIELDS, "pk")
        )
        changed = Tenant.objects.filter(pk__in=[row["pk"] for row in changing]).update(
            is_active=is_active
        )
        _forget_keys_of(tenant_ids=pks)
        for row in changing if staff is not None else ():
            before = {name: row[name] for name in TENANT_FIELDS}
            staff_audit(
                tenant=row["pk"],
                action="update",
                staff=staff,
                object_type="tenant",
                object_id=f"tenant:{row['pk']}",
                before=before,
                after={**before, "is_active": is_active},
                details={"changed": ["is_active"]},
            )
    return changed


def agent_setting_save(*, setting: AgentSetting, staff: Any) -> AgentSetting:
    """Save an agent setting edited by an admin, with its audit event."""
    with transaction.atomic():
        before = (
            AgentSetting.objects.filter(pk=setting.pk).values("key", "project_id", "value").first()
            if setting.pk
            else None
        )
        setting.full_clean()
        setting.save()
        staff_audit(
            tenant=setting.tenant_id,
            action="update" if before else "create",
            staff=staff,
            object_type="agent_setting",
            object_id=f"agent_setting:{setting.pk}",
            before=before,
            after={"key": setting.key, "project_id": setting.project_id, "value": setting.value},
            details={"keys": [setting.key]},
        )
    return setting


def agent_setting_delete(*, setting: AgentSetting, staff: Any) -> None:
    """Delete an agent setting, with its audit event."""
    with transaction.atomic():
        staff_audit(
            tenant=setting.tenant_id,
            action="delete",
            staff=staff,
            object_type="agent_setting",
            object_id=f"agent_setting:{setting.pk}",
            before={"key": setting.key, "project_id": setting.project_id, "value": setting.value},
            details={"keys": [setting.key]},
        )
        setting.delete()


def _forget_keys_of(*, tenant_ids: Sequence[int]) -> None:
    hashes = ApiKey.objects.filter(tenant_id__in=tenant_ids, revoked_at__isnull=True)
    api_key_cache_forget(key_hashes=hashes.values_list("key_hash", flat=True))


@transaction.atomic
def tenant_delete(*, tenant: Tenant) -> None:
    """Remove a tenant and every PostgreSQL row it holds, its audit trail included; its keys
    answer 401 from the next request on.

    Audit events refuse deletion unless the transaction says it removes whole tenants.
    """
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL memory.audit_purge = 'on'")
    _forget_keys_of(tenant_ids=[tenant.pk])
    tenant.delete()
