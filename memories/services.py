"""Orchestration shared by the memory layers."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from memories.audit.services import Action, Actor, audit_record
from memories.history.search import history_search_index
from memories.history.vectors import history_vector_index
from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memories.models import ForgettingPolicy, PromotionPolicy, RecallPolicy, VocabularyEntry
from memories.stm.store import stm_store
from profiles.throttling import load_scripts


def stores_ensure() -> list[str]:
    """Create what the stores need (ES template/index/alias, Milvus collection, Redis scripts).

    Idempotent: running it again changes nothing that exists.
    """
    done = [*card_search_index().ensure(), *vector_index().ensure()]
    done += [*history_search_index().ensure(), *history_vector_index().ensure()]
    done += [f"redis script {sha}" for sha in [*load_scripts(), *stm_store().load_scripts()]]
    return done


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
