"""Orchestration shared by the memory layers."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from memories.history.search import history_search_index
from memories.history.vectors import history_vector_index
from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memories.models import ForgettingPolicy, PromotionPolicy, RecallPolicy
from memories.review.audit import Action, Actor, audit_record
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
