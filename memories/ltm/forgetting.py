"""Forgetting: long-term cards unused for long fade, cards recalled often gain weight, and old,
unused, unimportant cards are archived (out of default retrieval, still readable and erasable).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Greatest, Least
from django.utils import timezone

from memories.ltm.services import outbox_drain_enqueue
from memories.models import ForgettingPolicy, LtmCard, LtmOutbox
from memories.review.audit import Action, Actor, audit_record
from profiles.models import Tenant


@dataclass(frozen=True)
class ForgetResult:
    archived: int
    decayed: int
    boosted: int


def ltm_forget(*, now: datetime | None = None, tenant: Tenant | None = None) -> ForgetResult:
    """Apply every tenant's forgetting policy once, or one tenant's (the beat job runs it
    daily)."""
    now = now or timezone.now()
    archived = decayed = boosted = 0
    policies = {p.tenant_id: p for p in ForgettingPolicy.objects.all()}
    active = LtmCard.objects.filter(status=LtmCard.Status.ACTIVE)
    if tenant is not None:
        active = active.filter(tenant=tenant)
    tenant_ids = active.values_list("tenant_id", flat=True)
    for tenant in Tenant.objects.filter(pk__in=tenant_ids):
        policy = policies.get(tenant.pk) or ForgettingPolicy(tenant=tenant)
        result = _forget_tenant(tenant=tenant, policy=policy, now=now)
        archived += result.archived
        decayed += result.decayed
        boosted += result.boosted
    return ForgetResult(archived=archived, decayed=decayed, boosted=boosted)


@transaction.atomic
def _forget_tenant(*, tenant: Tenant, policy: ForgettingPolicy, now: datetime) -> ForgetResult:
    stale = _active(tenant).filter(
        _unused_since(now - timedelta(days=policy.archive_after_days)),
        importance__lt=policy.archive_below_importance,
        access_count__lte=policy.archive_max_access_count,
    )
    to_archive = list(stale.select_for_update().values_list("pk", flat=True))
    if to_archive:
        LtmCard.objects.filter(pk__in=to_archive).update(
            status=LtmCard.Status.ARCHIVED, version=F("version") + 1, updated_at=now
        )
        LtmOutbox.objects.bulk_create(
            LtmOutbox(card_id=pk, version=version)
            for pk, version in LtmCard.objects.filter(pk__in=to_archive).values_list(
                "pk", "version"
            )
        )
        archived = list(
            LtmCard.objects.filter(pk__in=to_archive).values_list("memory_id", flat=True)
        )
        audit_record(
            tenant=tenant,
            action=Action.ARCHIVE,
            actor=Actor.job("forgetting"),
            object_type="ltm_card",
            object_id=",".join(archived)[:200],
            details={"cards": archived},
        )
        transaction.on_commit(outbox_drain_enqueue)

    unused_since = now - timedelta(days=policy.decay_after_days)
    decayed = (
        _active(tenant)
        .filter(_unused_since(unused_since), weight__gt=policy.min_weight)
        .update(weight=Greatest(F("weight") * policy.decay_factor, policy.min_weight))
    )
    boosted = (
        _active(tenant)
        .filter(
            last_access_at__gte=unused_since,
            access_count__gte=policy.boost_min_accesses,
            weight__lt=policy.max_weight,
        )
        .update(weight=Least(F("weight") * policy.boost_factor, policy.max_weight))
    )
    return ForgetResult(archived=len(to_archive), decayed=decayed, boosted=boosted)


def _active(tenant: Tenant) -> QuerySet[LtmCard]:
    return LtmCard.objects.filter(tenant=tenant, status=LtmCard.Status.ACTIVE)


def _unused_since(cutoff: datetime) -> Q:
    """Not recalled since `cutoff` (or, never recalled, created before it)."""
    return Q(last_access_at__lt=cutoff) | Q(last_access_at__isnull=True, created_at__lt=cutoff)
