"""Profile patches: one end user's profile, preferences, roles and facts changed as one unit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from memories.audit.services import Action, Actor, audit_record, changes_between
from memoryproject.errors import Invalid
from memoryproject.quarantine import WritePath, held_view, hold, screen_for
from memoryproject.redaction import Redactor, Report, redactor_for
from profiles.models import (
    EndUser,
    Project,
    Source,
    StableFact,
    Tenant,
    UserPreference,
    UserProfile,
    UserProjectRole,
)
from profiles.services.end_users import end_user_get_or_create
from profiles.services.profile_trust import ProfileHold, hold_for_verification, reads_as_text
from profiles.services.profile_versions import (
    fact_field,
    fact_set,
    preference_set,
    refuse_emptied,
)

PROFILE_FIELDS = ("language", "answer_style", "timezone", "display_name", "extras")
REDACTED_PROFILE_FIELDS = ("answer_style", "display_name", "extras")


@dataclass(frozen=True)
class ProfilePatch:
    """A validated change to one end user's Layer 1 record; every part is optional."""

    profile: dict[str, Any] = field(default_factory=dict)
    preferences: Sequence[dict[str, Any]] = ()
    roles: Sequence[dict[str, Any]] = ()
    facts: Sequence[dict[str, Any]] = ()

    @classmethod
    def of(cls, part: Mapping[str, Any]) -> ProfilePatch:
        """A patch from its JSON form, as a part of one is kept for a reviewer."""
        return cls(
            profile=dict(part.get("profile", {})),
            preferences=part.get("preferences", ()),
            roles=part.get("roles", ()),
            facts=part.get("facts", ()),
        )


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
    before = touched_state(end_user=end_user, patch=patch)

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
    after = touched_state(end_user=end_user, patch=patch)
    _audit_profile_change(tenant, end_user, patch, actor, staff, before=before, after=after)
    return end_user


def touched_state(*, end_user: EndUser, patch: ProfilePatch) -> dict[str, Any]:
    """The stored values of everything `patch` touches, by field name (`profile.timezone`,
    `preferences.<key>`, `facts.<key>` or `facts.<key>@<project>`, `roles.<project>`); None
    where there is none. Read before and after the patch, it says what changed."""
    state: dict[str, Any] = {}
    if patch.profile:
        profile = UserProfile.objects.filter(end_user=end_user).values(*PROFILE_FIELDS).first()
        for name in PROFILE_FIELDS:
            if name in patch.profile:
                state[f"profile.{name}"] = profile[name] if profile else None
    if patch.preferences:
        keys = [item["key"] for item in patch.preferences]
        preferences = UserPreference.objects.filter(
            end_user=end_user, key__in=keys, is_current=True
        ).values_list("key", "value")
        current = dict(preferences)
        for key in keys:
            state[f"preferences.{key}"] = current.get(key)
    if patch.facts:
        facts = StableFact.objects.filter(
            end_user=end_user, key__in=[item["key"] for item in patch.facts], is_current=True
        ).values_list("key", "project__key", "value")
        by_name = {fact_field(key, project): value for key, project, value in facts}
        for item in patch.facts:
            name = fact_field(item["key"], item.get("project"))
            state[name] = by_name.get(name)
    if patch.roles:
        roles = UserProjectRole.objects.filter(end_user=end_user).values_list(
            "project__key", "role", "permission_scope"
        )
        held = {
            project: {"role": role, "permission_scope": scope} for project, role, scope in roles
        }
        for item in patch.roles:
            state[f"roles.{item['project']}"] = held.get(item["project"])
    return state


@dataclass(frozen=True)
class PatchResult:
    """A profile patch applied: its end user (none when nothing of it was written), the values
    held for review because they read as an instruction to the model, and the free-text
    values of an untrusted writer waiting for a reviewer."""

    end_user: EndUser | None
    quarantined: list[dict[str, str]]
    held_for_verification: list[dict[str, str]] = field(default_factory=list)


@transaction.atomic
def profile_patch_apply(
    *,
    tenant: Tenant,
    external_id: str,
    patch: ProfilePatch,
    actor: Any = None,
    trusted_writer: bool = False,
) -> PatchResult:
    """`profile_update` for a patch from outside: a free-text value (display name, answer
    style, extras, a preference's or fact's value) that reads as an instruction to the model
    is held for review and left out (screened by meaning too: a profile value is recalled as
    the user's own word); from a key that is no trusted writer, every other free-text value
    waits in the verification queue (`profiles.services.profile_trust`); the rest lands as one
    unit. A patch that is all held writes nothing of the profile."""
    redacted = redacted_patch(patch, redactor=redactor_for(tenant))
    screen = screen_for(tenant, by_meaning=True)
    quarantined: list[dict[str, str]] = []
    waiting: list[dict[str, str]] = []

    def quarantine(name: str, value: Any, part: dict[str, Any]) -> bool:
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

    def verify(name: str, stable: str, memory_type: str, value: Any, part: dict[str, Any]) -> bool:
        if trusted_writer or not reads_as_text(value):
            return False
        hold = ProfileHold(
            external_id=external_id, name=stable, memory_type=memory_type, value=value, part=part
        )
        answer = hold_for_verification(tenant=tenant, hold=hold, actor=actor)
        waiting.append({**answer, "field": name, "reason": hold.reason})
        return True

    def held(name: str, stable: str, memory_type: str, value: Any, part: dict[str, Any]) -> bool:
        return quarantine(name, value, part) or verify(name, stable, memory_type, value, part)

    profile = {
        name: value
        for name, value in redacted.profile.items()
        if name not in REDACTED_PROFILE_FIELDS
        or not held(
            f"profile.{name}", f"profile.{name}", "profile", value, {"profile": {name: value}}
        )
    }
    preferences = [
        item
        for index, item in enumerate(redacted.preferences)
        if not held(
            f"preferences.{index}.value",
            f"preferences.{item['key']}",
            "preference",
            item.get("value"),
            {"preferences": [item]},
        )
    ]
    facts = [
        item
        for index, item in enumerate(redacted.facts)
        if not held(
            f"facts.{index}.value",
            fact_field(item["key"], item.get("project")),
            "fact",
            item.get("value"),
            {"facts": [item]},
        )
    ]
    kept = ProfilePatch(profile=profile, preferences=preferences, roles=redacted.roles, facts=facts)
    nothing_kept = not any((kept.profile, kept.preferences, kept.roles, kept.facts))
    if (quarantined or waiting) and nothing_kept:
        return PatchResult(end_user=None, quarantined=quarantined, held_for_verification=waiting)
    end_user = profile_update(tenant=tenant, external_id=external_id, patch=kept, actor=actor)
    return PatchResult(end_user=end_user, quarantined=quarantined, held_for_verification=waiting)


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
    refuse_emptied(report)
    return redacted


def _audit_profile_change(
    tenant: Tenant,
    end_user: EndUser,
    patch: ProfilePatch,
    actor: Any,
    staff: Any,
    *,
    before: dict[str, Any],
    after: dict[str, Any],
) -> None:
    if actor is None:
        actor = Actor.staff(staff) if staff is not None else Actor.job("profile")
    audit_record(
        tenant=tenant,
        action=Action.UPDATE,
        actor=actor,
        object_type="profile",
        object_id=f"end_user:{end_user.pk}",  # not the tenant's id: audit outlives erasure
        before=before,
        after=asdict(patch),
        changes=changes_between(before, after),
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
