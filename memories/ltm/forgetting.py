"""Forgetting: long-term cards unused for long fade, cards recalled often gain weight, and old,
unused, unimportant cards are archived (out of default retrieval, still readable and erasable).

The daily job is bounded like the other beat jobs: one run at a time (a Redis lock), tenants
and their cards in batches of bounded size, each batch one transaction that also moves the
tenant's cursor, and a time budget after which the task requeues itself. A run that stopped
(a crash, an outage, the budget) resumes after the last card it committed, and a tenant
finished for a day is left alone until the next day, so running twice never fades twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Greatest, Least
from django.utils import timezone

from memories.audit.services import Action, Actor, audit_record
from memories.ltm.models import ForgettingCursor, LtmCard, LtmOutbox
from memories.ltm.services import outbox_drain_enqueue
from memories.policies.models import ForgettingPolicy
from memoryproject.locks import redis_lock
from profiles.models import Tenant

LOCK_NAME = "ltm-forget"
# How long a batch waits for a card another transaction holds locked before it fails (and the
# task retries): a card a reviewer edits must not stall the whole job.
ROW_LOCK_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class ForgetResult:
    archived: int
    decayed: int
    boosted: int
    tenants: int = 0  # tenants finished for the day by this run
    more: bool = False  # work was left when the time budget ran out
    ran: bool = True  # False when another run held the lock


def ltm_forget(
    *,
    now: datetime | None = None,
    tenants_per_batch: int = 100,
    cards_per_batch: int = 500,
    budget_seconds: float = 240.0,
    row_lock_timeout_ms: int | None = None,
    tenant: Tenant | None = None,
) -> ForgetResult:
    """Apply every tenant's forgetting policy (or one tenant's) once for the day of `now` (the
    beat job runs it daily), in batches, until done or the budget is spent (then `more` is
    set)."""
    now = now or timezone.now()
    day = timezone.localdate(now)
    row_lock_timeout_ms = row_lock_timeout_ms or ROW_LOCK_TIMEOUT_MS
    with redis_lock(LOCK_NAME, ttl_seconds=int(budget_seconds) + 120) as acquired:
        if not acquired:
            return ForgetResult(archived=0, decayed=0, boosted=0, ran=False)
        deadline = time.monotonic() + budget_seconds
        total = _Totals()
        while True:
            tenants = _tenants_due(day=day, limit=tenants_per_batch, only=tenant)
            if not tenants:
                return total.result(more=False)
            for due in tenants:
                while True:
                    acquired.ensure()  # a run that lost its lease stops before the next batch
                    finished = _forget_batch(
                        tenant=due,
                        now=now,
                        day=day,
                        limit=cards_per_batch,
                        row_lock_timeout_ms=row_lock_timeout_ms,
                        total=total,
                    )
                    if finished:
                        total.tenants += 1
                        break
                    if time.monotonic() >= deadline:
                        return total.result(more=True)
                if time.monotonic() >= deadline:
                    return total.result(more=bool(_tenants_due(day=day, limit=1, only=tenant)))


@dataclass
class _Totals:
    archived: int = 0
    decayed: int = 0
    boosted: int = 0
    tenants: int = 0

    def result(self, *, more: bool) -> ForgetResult:
        return ForgetResult(
            archived=self.archived,
            decayed=self.decayed,
            boosted=self.boosted,
            tenants=self.tenants,
            more=more,
        )


def _tenants_due(*, day: date, limit: int, only: Tenant | None = None) -> list[Tenant]:
    """Tenants holding active cards (of `only`, when given) that today's run has not finished
    yet, by pk."""
    done = Q(forgetting_cursor__day__gt=day) | Q(
        forgetting_cursor__day=day, forgetting_cursor__finished=True
    )
    active = LtmCard.objects.filter(status=LtmCard.Status.ACTIVE)
    if only is not None:
        active = active.filter(tenant=only)
    holding = active.values("tenant_id")
    return list(Tenant.objects.filter(pk__in=holding).exclude(done).order_by("pk")[:limit])


def _forget_batch(
    *,
    tenant: Tenant,
    now: datetime,
    day: date,
    limit: int,
    row_lock_timeout_ms: int,
    total: _Totals,
) -> bool:
    """Fade, boost and archive the tenant's next `limit` cards after its cursor, moving the
    cursor in the same transaction; returns whether the tenant is done for the day."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('lock_timeout', %s, true)", [f"{row_lock_timeout_ms}ms"]
            )
        state, _ = ForgettingCursor.objects.select_for_update().get_or_create(
            tenant=tenant, defaults={"day": day}
        )
        if state.day > day or (state.day == day and state.finished):
            return True
        if state.day < day:
            state.day, state.card_pk, state.finished = day, 0, False
        batch = list(
            _active(tenant)
            .filter(pk__gt=state.card_pk)
            .order_by("pk")
            .values_list("pk", flat=True)[:limit]
        )
        policy = ForgettingPolicy.objects.filter(tenant=tenant).first() or ForgettingPolicy(
            tenant=tenant
        )
        if batch:
            archived, decayed, boosted = _forget_cards(
                tenant=tenant, policy=policy, now=now, card_pks=batch
            )
            total.archived += archived
            total.decayed += decayed
            total.boosted += boosted
            state.card_pk = batch[-1]
        state.finished = len(batch) < limit
        state.save()
        return state.finished


def _forget_cards(
    *, tenant: Tenant, policy: ForgettingPolicy, now: datetime, card_pks: list[int]
) -> tuple[int, int, int]:
    cards = _active(tenant).filter(pk__in=card_pks)
    stale = cards.filter(
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
    decayed = cards.filter(_unused_since(unused_since), weight__gt=policy.min_weight).update(
        weight=Greatest(F("weight") * policy.decay_factor, policy.min_weight)
    )
    boosted = cards.filter(
        last_access_at__gte=unused_since,
        access_count__gte=policy.boost_min_accesses,
        weight__lt=policy.max_weight,
    ).update(weight=Least(F("weight") * policy.boost_factor, policy.max_weight))
    return len(to_archive), decayed, boosted


def _active(tenant: Tenant) -> QuerySet[LtmCard]:
    return LtmCard.objects.filter(tenant=tenant, status=LtmCard.Status.ACTIVE)


def _unused_since(cutoff: datetime) -> Q:
    """Not recalled since `cutoff` (or, never recalled, created before it)."""
    return Q(last_access_at__lt=cutoff) | Q(last_access_at__isnull=True, created_at__lt=cutoff)
