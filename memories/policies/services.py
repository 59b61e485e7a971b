"""Changes to a tenant's policies and vocabulary made by staff, each with its audit event."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from memories.audit.services import Action, Actor, audit_record
from memories.policies.models import (
    POLICY_FIELDS,
    ForgettingPolicy,
    PromotionPolicy,
    RecallPolicy,
    VocabularyEntry,
    WritePolicy,
)
from profiles.models import Tenant


@transaction.atomic
def write_policy_publish(
    *, tenant: Tenant, values: dict[str, Any], created_by: User | None = None
) -> WritePolicy:
    """Make `values` the tenant's current write policy as a new version; older ones stay."""
    Tenant.objects.select_for_update().filter(pk=tenant.pk).get()
    current = WritePolicy.objects.filter(tenant=tenant, is_current=True).first()
    policy = WritePolicy(
        tenant=tenant,
        version=(current.version + 1) if current else 1,
        created_by=created_by,
        **{name: values[name] for name in POLICY_FIELDS if name in values},
    )
    policy.full_clean(validate_constraints=False)
    if current is not None:
        current.is_current = False
        current.save(update_fields=["is_current"])
    policy.save()
    audit_record(
        tenant=tenant,
        action=Action.POLICY_CHANGE,
        actor=Actor.staff(created_by) if created_by else Actor.job("write_policy"),
        object_type="write_policy",
        object_id=str(policy.version),
        before={name: getattr(current, name) for name in POLICY_FIELDS} if current else None,
        after={name: getattr(policy, name) for name in POLICY_FIELDS},
    )
    return policy


@transaction.atomic
def tenant_policy_save(
    *, policy: RecallPolicy | ForgettingPolicy | PromotionPolicy, staff: Any
) -> None:
    """Save a tenant's recall, forgetting or promotion policy, with a policy-change audit event."""
    fields = [f.name for f in policy._meta.concrete_fields if f.name not in ("id", "updated_at")]
    before = (
        type(policy).objects.filter(pk=policy.pk).values(*fields).first() if policy.pk else None
    )
    policy.save()
    audit_record(
        tenant=policy.tenant_id,
        action=Action.POLICY_CHANGE,
        actor=Actor.staff(staff),
        object_type=policy._meta.model_name or "policy",
        object_id=str(policy.pk),
        before=before,
        after={name: getattr(policy, name if name != "tenant" else "tenant_id") for name in fields},
    )


def _policy_state(policy: RecallPolicy | ForgettingPolicy | PromotionPolicy) -> dict[str, Any]:
    fields = [f.attname for f in policy._meta.concrete_fields if f.name not in ("id", "updated_at")]
    return {name: getattr(policy, name) for name in fields}


@transaction.atomic
def tenant_policy_delete(
    *, policy: RecallPolicy | ForgettingPolicy | PromotionPolicy, staff: Any
) -> None:
    """Remove a tenant's policy row (its defaults apply again), with a policy-change event."""
    audit_record(
        tenant=policy.tenant_id,
        action=Action.POLICY_CHANGE,
        actor=Actor.staff(staff),
        object_type=policy._meta.model_name or "policy",
        object_id=str(policy.pk),
        before=_policy_state(policy),
        details={"removed": True},
    )
    policy.delete()


def _entry_state(entry: VocabularyEntry) -> dict[str, Any]:
    return {"kind": entry.kind, "value": entry.value}


@transaction.atomic
def vocabulary_entry_save(*, entry: VocabularyEntry, staff: Any) -> VocabularyEntry:
    """Save a tenant's vocabulary entry edited by an admin, with its audit event."""
    before = (
        VocabularyEntry.objects.filter(pk=entry.pk).values("kind", "value").first()
        if entry.pk
        else None
    )
    entry.save()
    audit_record(
        tenant=entry.tenant_id,
        action=Action.UPDATE if before else Action.CREATE,
        actor=Actor.staff(staff),
        object_type="vocabulary_entry",
        object_id=f"vocabulary:{entry.pk}",
        before=before,
        after=_entry_state(entry),
        details={"kind": entry.kind},
    )
    return entry


@transaction.atomic
def vocabulary_entry_delete(*, entry: VocabularyEntry, staff: Any) -> None:
    """Delete a tenant's vocabulary entry, with its audit event."""
    audit_record(
        tenant=entry.tenant_id,
        action=Action.DELETE,
        actor=Actor.staff(staff),
        object_type="vocabulary_entry",
        object_id=f"vocabulary:{entry.pk}",
        before=_entry_state(entry),
        details={"kind": entry.kind},
    )
    entry.delete()
