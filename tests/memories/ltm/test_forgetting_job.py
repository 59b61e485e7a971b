"""The forgetting job is bounded like the other beat jobs: one run at a time, cards in batches
behind a cursor, retries on an outage, and at most one fade per tenant and day."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from celery.signals import task_prerun
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from memories.audit.models import AuditEvent
from memories.ltm import forgetting
from memories.ltm.forgetting import LOCK_NAME, ltm_forget
from memories.ltm.models import ForgettingCursor, LtmCard
from memories.tasks import ltm_forget_task
from memoryproject import redis_client
from memoryproject.errors import StoreUnavailable
from memoryproject.locks import redis_lock
from profiles.models import Tenant
from tests.outages import free_port


def _today_at_ten() -> datetime:
    return timezone.now().replace(hour=10, minute=0, second=0, microsecond=0)


def _cards(tenant: Tenant, count: int, *, trivia: tuple[int, ...] = ()) -> list[LtmCard]:
    """`count` cards unused for a year; those at the `trivia` positions are unimportant."""
    cards = [
        LtmCard.objects.create(
            tenant=tenant,
            memory_id=f"ltm_forget_{tenant.pk}_{i}",
            memory_type=LtmCard.Type.PROCEDURE,
            summary=f"Procedure number {i}",
            source_type=LtmCard.SourceType.IMPORT,
            importance=0.1 if i in trivia else 0.9,
        )
        for i in range(count)
    ]
    LtmCard.objects.filter(tenant=tenant).update(created_at=timezone.now() - timedelta(days=365))
    return cards


def _weights(tenant: Tenant) -> list[float]:
    return [
        round(w, 6)
        for w in LtmCard.objects.filter(tenant=tenant)
        .order_by("pk")
        .values_list("weight", flat=True)
    ]


def _statuses(tenant: Tenant) -> list[str]:
    return list(
        LtmCard.objects.filter(tenant=tenant).order_by("pk").values_list("status", flat=True)
    )


def _archive_events(tenant: Tenant) -> int:
    return AuditEvent.objects.filter(tenant=tenant, action="archive").count()


@pytest.fixture
def attempts() -> Iterator[list[str]]:
    """The names of the tasks started (each retry is a start of its own)."""
    started: list[str] = []

    def count(sender=None, **_) -> None:  # type: ignore[no-untyped-def]
        started.append(sender.name)

    task_prerun.connect(count, weak=False)
    yield started
    task_prerun.disconnect(count)


@pytest.fixture
def retrying(monkeypatch) -> None:
    """Eager tasks retry as a worker's do (a propagated Retry would end the first attempt)."""
    monkeypatch.setitem(ltm_forget_task.app.conf, "task_eager_propagates", False)


@pytest.mark.django_db
def test_two_runs_on_one_day_fade_once_and_the_next_day_fades_again(tenant, other_tenant):
    _cards(tenant, 3, trivia=(2,))
    _cards(other_tenant, 2)
    now = _today_at_ten()

    first = ltm_forget(now=now)
    second = ltm_forget(now=now + timedelta(hours=5))

    assert (first.archived, first.decayed, first.tenants, first.more) == (1, 4, 2, False)
    assert (second.archived, second.decayed, second.boosted, second.tenants) == (0, 0, 0, 0)
    assert _weights(tenant) == [0.8, 0.8, 1.0] and _weights(other_tenant) == [0.8, 0.8]
    assert _statuses(tenant) == ["active", "active", "archived"]
    assert _archive_events(tenant) == 1
    states = ForgettingCursor.objects.filter(tenant__in=[tenant, other_tenant])
    assert {(s.day, s.finished) for s in states} == {(timezone.localdate(now), True)}

    # A day later the unused cards fade once more.
    later = ltm_forget(now=now + timedelta(days=1))
    assert later.decayed == 4
    assert _weights(tenant) == [0.64, 0.64, 1.0] and _weights(other_tenant) == [0.64, 0.64]
    assert _archive_events(tenant) == 1


@pytest.mark.django_db
def test_a_run_stopped_midway_resumes_after_the_last_card_it_handled(tenant):
    cards = _cards(tenant, 5, trivia=(3,))
    now = _today_at_ten()

    # A budget spent after the first batch stops the run there...
    stopped = ltm_forget(now=now, cards_per_batch=2, budget_seconds=0)
    assert (stopped.decayed, stopped.archived, stopped.more) == (2, 0, True)
    assert _weights(tenant) == [0.8, 0.8, 1.0, 1.0, 1.0]
    state = ForgettingCursor.objects.get(tenant=tenant)
    assert (state.card_pk, state.finished) == (cards[1].pk, False)

    # ...and the next run starts after the cards it handled, not from the first one.
    resumed = ltm_forget(now=now, cards_per_batch=2)
    assert (resumed.decayed, resumed.archived, resumed.tenants, resumed.more) == (2, 1, 1, False)
    assert _weights(tenant) == [0.8, 0.8, 0.8, 1.0, 0.8]
    assert _statuses(tenant) == ["active", "active", "active", "archived", "active"]
    assert ltm_forget(now=now, cards_per_batch=2).decayed == 0


@pytest.mark.django_db
def test_the_task_requeues_itself_until_every_batch_is_done(tenant, attempts):
    _cards(tenant, 5)

    status = ltm_forget_task.apply(kwargs={"cards_per_batch": 2, "budget_seconds": 0}).get()

    # One task per batch: the first two requeued the next one.
    assert attempts == ["memories.tasks.ltm_forget_task"] * 3
    assert status.startswith("archived 0, decayed 2")  # the first batch's own figures
    assert _weights(tenant) == [0.8] * 5
    assert ltm_forget_task.apply().get().startswith("archived 0, decayed 0, boosted 0 in 0")


@pytest.mark.django_db
def test_a_concurrent_run_is_refused_by_the_lock(tenant):
    _cards(tenant, 2)

    with redis_lock(LOCK_NAME, ttl_seconds=60) as held:
        assert held
        refused = ltm_forget()
        assert ltm_forget_task.apply().get() == "busy"

    assert not refused.ran and refused.decayed == 0
    assert _weights(tenant) == [1.0, 1.0]
    assert not ForgettingCursor.objects.filter(tenant=tenant).exists()
    assert ltm_forget().decayed == 2  # once the other run is done, the lock is free


@pytest.mark.django_db
def test_a_redis_outage_is_retried_and_changes_nothing(tenant, settings, attempts, retrying):
    _cards(tenant, 3, trivia=(0,))
    audit_before = AuditEvent.objects.count()
    saved = settings.CACHES
    down = {**saved["default"], "LOCATION": f"redis://127.0.0.1:{free_port()}/0"}
    settings.CACHES = {**saved, "default": down}
    try:
        outcome = ltm_forget_task.apply()
    finally:
        settings.CACHES = saved
        redis_client._failed_until.clear()

    assert outcome.failed() and isinstance(outcome.result, StoreUnavailable)
    assert len(attempts) == 1 + ltm_forget_task.max_retries  # the first run and every retry
    assert _weights(tenant) == [1.0, 1.0, 1.0]
    assert _statuses(tenant) == ["active"] * 3
    assert AuditEvent.objects.count() == audit_before
    assert not ForgettingCursor.objects.exists()

    # Redis is back: the next run does the day's work, once.
    assert ltm_forget_task.apply().get().startswith("archived 1, decayed 2")
    assert _weights(tenant) == [1.0, 0.8, 0.8]


@pytest.mark.django_db(transaction=True)
def test_a_database_failure_midway_undoes_its_batch_and_the_retry_finishes_the_day(
    tenant, monkeypatch, attempts, retrying
):
    # Given five cards handled two at a time, the fourth unimportant (archived in batch two),
    # and another transaction holding the third one locked,
    cards = _cards(tenant, 5, trivia=(3,))
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                list(LtmCard.objects.select_for_update(of=("self",)).filter(pk=cards[2].pk))
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10)
        # when a run meets it, the run fails in batch two and keeps batch one only:
        with pytest.raises(OperationalError):
            ltm_forget(cards_per_batch=2, row_lock_timeout_ms=200)
        assert _weights(tenant) == [0.8, 0.8, 1.0, 1.0, 1.0]
        assert _statuses(tenant) == ["active"] * 5  # batch two's archive was rolled back
        assert _archive_events(tenant) == 0
        state = ForgettingCursor.objects.get(tenant=tenant)
        assert (state.card_pk, state.finished) == (cards[1].pk, False)

        # The task retries the failure until the card is free, then finishes the day.
        monkeypatch.setattr(forgetting, "ROW_LOCK_TIMEOUT_MS", 300)
        threading.Timer(0.4, release.set).start()
        status = ltm_forget_task.apply(kwargs={"cards_per_batch": 2}).get()
    finally:
        release.set()
        holder.join(30)

    assert len(attempts) >= 2, attempts
    assert status.startswith("archived 1, decayed 2")
    assert _weights(tenant) == [0.8, 0.8, 0.8, 1.0, 0.8]
    assert _statuses(tenant) == ["active", "active", "active", "archived", "active"]
    assert _archive_events(tenant) == 1
