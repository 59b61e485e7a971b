"""The beat jobs' table (`memories/jobs.py`): the schedule beat reads, the tasks it names, and the
one lock a job's task and a run by hand share."""

from __future__ import annotations

import pytest

from memories.jobs import BY_HAND, JOBS, PROMOTION_SCAN, REFLECTION, job_lock, job_run
from memories.review.models import PromotionRequest
from memories.stm.store import stm_store
from memories.tasks import promotion_scan_task, reflection_run_task, stm_expire_sweep_task
from memoryproject.celery import app as celery_app
from tests.factories import EndUserFactory
from tests.memories.review.test_promotion import HOUR, NOW, item


def test_beat_reads_one_entry_per_job_and_each_names_a_registered_task() -> None:
    schedule = celery_app.conf.beat_schedule

    assert set(schedule) == {job.beat for job in JOBS}
    assert all(entry["task"] in celery_app.tasks for entry in schedule.values())
    assert schedule["promotion-scan"] == {
        "task": "memories.tasks.promotion_scan_task",
        "schedule": 3600.0,
    }
    assert schedule["history-outbox-drain"]["kwargs"] == {"catch_up": True}
    assert BY_HAND == ("expiry", "forgetting", "promotion_scan", "reflection")


@pytest.mark.django_db
def test_a_tenants_scan_task_is_refused_while_that_tenants_run_holds_the_lock(
    tenant, other_tenant
) -> None:
    for owner_tenant in (tenant, other_tenant):
        end_user = EndUserFactory(tenant=owner_tenant)
        stm_store().upsert(items=[item(end_user, sessions=["s_1", "s_2"])], now=NOW)

    with job_lock(PROMOTION_SCAN, tenant=tenant) as held:
        assert held is not None
        assert promotion_scan_task.apply(kwargs={"tenant_id": tenant.pk}).get() == "busy"
        assert job_run(name="promotion_scan", tenant=tenant) == "busy"
        # another tenant's scan takes a lock of its own
        done = promotion_scan_task.apply(kwargs={"tenant_id": other_tenant.pk}).get()
        assert done == "examined 1 items, proposed 1"

    assert [p.tenant for p in PromotionRequest.objects.all()] == [other_tenant]
    assert promotion_scan_task.apply(kwargs={"tenant_id": tenant.pk}).get().endswith("proposed 1")


@pytest.mark.django_db
def test_the_reflection_task_and_expiry_answer_busy_under_their_locks(tenant) -> None:
    end_user = EndUserFactory(tenant=tenant)
    stm_store().upsert(items=[item(end_user, expires_at=NOW - HOUR)], now=NOW)

    with job_lock(REFLECTION) as held:
        assert held is not None
        assert reflection_run_task.apply().get() == "busy"
    assert reflection_run_task.apply(kwargs={"tenant_id": tenant.pk}).get().startswith("weighed")
    assert reflection_run_task.apply(kwargs={"tenant_id": 0}).get() == "gone"

    expiry = next(job for job in JOBS if job.name == "expiry")
    with job_lock(expiry) as held:
        assert held is not None
        assert stm_expire_sweep_task.apply().get() == "busy"
        assert job_run(name="expiry") == "busy"
        assert len(stm_store().items_of(owner=item(end_user).owner)) == 1  # nothing swept
    assert stm_expire_sweep_task.apply().get().startswith("removed ")
    assert stm_store().items_of(owner=item(end_user).owner) == []


def test_an_unknown_job_is_refused() -> None:
    with pytest.raises(ValueError, match="Unknown job 'ltm-outbox-drain'"):
        job_run(name="ltm-outbox-drain")
