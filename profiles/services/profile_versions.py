"""Versioned preferences and stable facts: each change a new version, its value redacted first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from memories.audit.services import Change
from memoryproject.errors import Invalid
from memoryproject.redaction import Redactor, Report, redactor_for
from profiles.models import EndUser, Project, Source, StableFact, Tenant, UserPreference
from profiles.services.audit import staff_audit

SENSITIVE_ONLY = "Holds nothing but sensitive data (redacted), so not stored."


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


def fact_field(key: str, project: str | None = None) -> str:
    """How the audit trail names a stable fact's value: `facts.<key>`, `facts.<key>@<project>`."""
    return f"facts.{key}@{project}" if project else f"facts.{key}"


def refuse_emptied(report: Report) -> None:
    """`Invalid` naming every value the redaction emptied, when there is one."""
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
    refuse_emptied(report)
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
        owner = {
            "tenant": tenant,
            "scope": scope,
            "project": project,
            "end_user": end_user,
            "key": key,
        }
        before = StableFact.objects.filter(**owner, is_current=True).values("value").first()
        row = _write_version(
            StableFact,
            owner=owner,
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
                changes=[
                    Change(
                        fact_field(key, project.key if project else None),
                        before["value"] if before else None,
                        row.value,
                    )
                ],
            )
    assert isinstance(row, StableFact)
    return row
