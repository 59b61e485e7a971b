"""Every beat job in one table: what it runs, how often, under which lock, in batches of what size.

Each `Job` below is the whole definition of a job. The beat schedule is built from the table
(`beat_schedule`, installed by `memories.apps` when Django starts), `manage.py run_job` runs a job
from it by hand (`job_run`), and the tasks of the jobs that work in locked batches live here
too, each a line that hands its Job to the shared runner:

- the lock is taken here only, by `job_lock` (a renewed lease, `memoryproject.locks`), with the
  Job's name and lifetime, per tenant when the run is for one tenant: a task holds it for one
  batch and requeues itself while work remains; a run by hand holds it across every batch
  (`BY_HAND_LOCK_SECONDS` at most) and checks the lease before each, so a run by hand and the
  beat job never overlap: one of the two answers "busy";
- forgetting is the exception: `ltm_forget` takes its lock (`ltm-forget`) itself, because every
  caller of that service (the task, a run by hand, the export's tests) must be refused while a
  run is under way.

A job whose task its own layer queues too (the outbox drains, recall's effects) or whose task
only queues its layer's tasks (the catch-up and resume jobs) keeps that task in the layer's
`tasks.py`; its Job here names the task and gives its schedule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from celery import shared_task

from memories.ltm.forgetting import ltm_forget
from memories.review.promotion_scan import promotion_scan
from memories.review.reflection import reflection_run
from memories.stm.services import stm_expire_sweep, stm_expire_sweep_tenant
from memoryproject.errors import DATABASE_OUTAGES, StoreUnavailable
from memoryproject.locks import Lease, redis_lock
from profiles.models import Tenant

Progress = Callable[[str], None]
# A run by hand works through every batch under one lock, held at most this long.
BY_HAND_LOCK_SECONDS = 1800


class Page(Protocol):
    """One batch of a paged job (`ScanResult` of the promotion scan and reflection)."""

    @property
    def examined(self) -> int: ...
    @property
    def proposed(self) -> int: ...
    @property
    def next_cursor(self) -> int: ...  # 0 once every user was paged


@dataclass(frozen=True)
class Job:
    """One beat job. Only `beat`, `task`, `every` and `about` are needed for the schedule; the
    other fields belong to the jobs whose task lives in this module."""

    beat: str  # the beat entry's name
    task: str  # the Celery task the beat queues
    every: float  # seconds between two beat runs
    about: str  # what it does
    kwargs: Mapping[str, Any] = field(default_factory=dict)  # the beat's arguments to the task
    name: str = ""  # its name for `manage.py run_job`; "" when it does not run by hand
    run: Callable[..., Any] | None = None  # the service one batch calls
    by_hand: Callable[[Job, Tenant | None, Progress], str] | None = None  # run_job's runner
    lock: str = ""  # the lock `job_lock` takes for it ("<lock>:<tenant pk>" for one tenant)
    lock_seconds: int = 0  # the longest one batch holds the lock
    batch: int = 0  # users (paged jobs) or cards (forgetting) per batch
    says: str = ""  # a paged job's report: `{examined}`, `{proposed}`

    def service(self) -> Callable[..., Any]:
        """The service one batch calls."""
        if self.run is None:
            raise ValueError(f"the job {self.beat!r} calls no service of this module")
        return self.run


@contextmanager
def job_lock(
    job: Job, *, tenant: Tenant | None = None, ttl_seconds: int | None = None
) -> Iterator[Lease | None]:
    """The job's lock (for one tenant, when given): a Lease, or None while another run holds it."""
    name = job.lock if tenant is None else f"{job.lock}:{tenant.pk}"
    with redis_lock(name, ttl_seconds=ttl_seconds or job.lock_seconds) as lease:
        yield lease


# --- runners: one batch (the tasks), every batch (run_job) ------------------------------------
class Requeue(Protocol):
    """The task of a paged job, queued again for its next page."""

    def delay(self, *, cursor: int, tenant_id: int | None) -> Any: ...


def page_run(job: Job, *, cursor: int, tenant_id: int | None, requeue: Requeue) -> str:
    """One page of a paged job under its lock; queues `requeue` for the next page while users
    remain (not once done, busy or gone). Returns the report."""
    tenant = None
    if tenant_id is not None:
        tenant = Tenant.objects.filter(pk=tenant_id, is_active=True).first()
        if tenant is None:
            return "gone"
    with job_lock(job, tenant=tenant) as lease:
        if lease is None:
            return "busy"
        page: Page = job.service()(cursor=cursor, tenant=tenant, owners=job.batch)
    if page.next_cursor:
        requeue.delay(cursor=page.next_cursor, tenant_id=tenant_id)
    return job.says.format(examined=page.examined, proposed=page.proposed)


def _pages_by_hand(job: Job, tenant: Tenant | None, progress: Progress) -> str:
    """Every page of a paged job, under one lock."""
    examined = proposed = 0
    with job_lock(job, tenant=tenant, ttl_seconds=BY_HAND_LOCK_SECONDS) as lease:
        if lease is None:
            return "busy"
        cursor = 0
        while True:
            lease.ensure()  # a run that lost its lease stops before the next page
            page: Page = job.service()(cursor=cursor, tenant=tenant, owners=job.batch)
            examined, proposed = examined + page.examined, proposed + page.proposed
            progress(f"{examined} examined, {proposed} proposed")
            cursor = page.next_cursor
            if not cursor:
                return job.says.format(examined=examined, proposed=proposed)


def _expiry_by_hand(job: Job, tenant: Tenant | None, progress: Progress) -> str:
    """Every expired item (of one tenant, when given) swept."""
    if tenant is not None:
        # Sweeping one owner is one atomic step of the store, so this needs no lock.
        swept = stm_expire_sweep_tenant(tenant=tenant)
        return f"removed {swept.removed} expired items of {swept.owners} users"
    removed = owners = 0
    with job_lock(job, ttl_seconds=BY_HAND_LOCK_SECONDS) as lease:
        if lease is None:
            return "busy"
        while True:
            lease.ensure()
            result = stm_expire_sweep()
            removed, owners = removed + result.removed, owners + result.owners
            progress(f"{removed} removed")
            if not result.more:
                return f"removed {removed} expired items of {owners} users"


def _forgetting_by_hand(job: Job, tenant: Tenant | None, progress: Progress) -> str:
    """Every due tenant (or this one) forgotten for the day; the service takes the lock."""
    archived = decayed = boosted = 0
    while True:
        result = ltm_forget(tenant=tenant, cards_per_batch=job.batch)
        if not result.ran:
            return "busy"
        archived += result.archived
        decayed += result.decayed
        boosted += result.boosted
        progress(f"{archived} archived, {decayed} decayed")
        if not result.more:
            return f"archived {archived}, decayed {decayed}, boosted {boosted}"


# --- the table ------------------------------------------------------------------------------
EXPIRY = Job(
    beat="stm-expire-sweep",
    task="memories.tasks.stm_expire_sweep_task",
    every=60.0,
    about="Delete expired short-term memory items (and their index entries) every minute.",
    name="expiry",
    run=stm_expire_sweep,
    by_hand=_expiry_by_hand,
    lock="stm-expire-sweep",
    lock_seconds=110,  # the sweep's own time budget (50 s) and a minute to spare
    batch=200,  # users whose items one call sweeps
)
FORGETTING = Job(
    beat="ltm-forget",
    task="memories.tasks.ltm_forget_task",
    every=24 * 3600.0,
    about="Forgetting: fade unused long-term cards, archive old unimportant ones (daily).",
    name="forgetting",
    run=ltm_forget,
    by_hand=_forgetting_by_hand,
    # No `lock`: `ltm_forget` takes `ltm-forget` itself, for its time budget and two minutes.
    batch=500,  # cards per transaction
)
PROMOTION_SCAN = Job(
    beat="promotion-scan",
    task="memories.tasks.promotion_scan_task",
    every=3600.0,
    about="Propose short-term items meeting the promotion triggers for review (hourly).",
    name="promotion_scan",
    run=promotion_scan,
    by_hand=_pages_by_hand,
    lock="promotion-scan",
    lock_seconds=600,
    batch=200,
    says="examined {examined} items, proposed {proposed}",
)
REFLECTION = Job(
    beat="reflection-run",
    task="memories.tasks.reflection_run_task",
    every=6 * 3600.0,
    about="Reflection: propose semantic cards from groups of related episodes (every 6 hours).",
    name="reflection",
    run=reflection_run,
    by_hand=_pages_by_hand,
    lock="reflection",
    lock_seconds=900,
    batch=200,
    says="weighed {examined} new episodes, proposed {proposed}",
)
JOBS: tuple[Job, ...] = (
    EXPIRY,
    Job(
        beat="stm-extract-catch-up",
        task="memories.tasks.stm_extract_catch_up_task",
        every=120.0,
        about="Re-run extraction for sessions whose cursor lags (e.g. after a worker outage).",
    ),
    Job(
        beat="ltm-outbox-drain",
        task="memories.tasks.ltm_outbox_drain_task",
        every=60.0,
        about="Drain the long-term index outbox (normally drained right after each change).",
    ),
    Job(
        beat="history-outbox-drain",
        task="memories.tasks.history_outbox_drain_task",
        every=30.0,
        about="Index transcript turns still in the history outbox; also queues sessions whose "
        "events no outbox row covers (normally drained a moment after each append).",
        kwargs={"catch_up": True},
    ),
    Job(
        beat="recall-effects-apply",
        task="memories.tasks.recall_effects_apply_task",
        every=30.0,
        about="Apply queued recall side effects (normally applied a moment after each recall).",
    ),
    FORGETTING,
    PROMOTION_SCAN,
    REFLECTION,
    Job(
        beat="erasures-resume",
        task="memories.tasks.erasures_resume_task",
        every=300.0,
        about="Resume approved erasures that stopped while a store was down.",
    ),
    Job(
        beat="tenant-purges-resume",
        task="memories.tasks.tenant_purges_resume_task",
        every=300.0,
        about="Finish purging deleted tenants' data from Redis, ES, Milvus and transcript storage.",
    ),
)
BY_HAND = tuple(job.name for job in JOBS if job.by_hand is not None)


def beat_schedule() -> dict[str, dict[str, Any]]:
    """Celery's `beat_schedule`: one entry per job."""
    schedule: dict[str, dict[str, Any]] = {}
    for job in JOBS:
        entry: dict[str, Any] = {"task": job.task, "schedule": job.every}
        if job.kwargs:
            entry["kwargs"] = dict(job.kwargs)
        schedule[job.beat] = entry
    return schedule


def job_run(*, name: str, tenant: Tenant | None = None, progress: Progress = lambda _: None) -> str:
    """Run the job `name` (one of `BY_HAND`) now, to the end, for every tenant or one; returns
    what it did, or "busy" while another run holds its lock."""
    for job in JOBS:
        if job.name == name and job.by_hand is not None:
            return job.by_hand(job, tenant, progress)
    raise ValueError(f"Unknown job {name!r}; use one of {', '.join(BY_HAND)}.")


# --- the tasks of the jobs above --------------------------------------------------------------
# Retried on a store outage (the next beat run would catch up as well); the lock keeps a retry
# and the next beat run apart.
_RETRIED = {
    "acks_late": True,
    "autoretry_for": (StoreUnavailable,),
    "retry_backoff": True,
    "max_retries": 3,
}


@shared_task(name=PROMOTION_SCAN.task, **_RETRIED)
def promotion_scan_task(*, cursor: int = 0, tenant_id: int | None = None) -> str:
    """Propose short-term items that meet the promotion triggers (of one tenant, when given);
    requeues while users remain."""
    return page_run(PROMOTION_SCAN, cursor=cursor, tenant_id=tenant_id, requeue=promotion_scan_task)


@shared_task(name=REFLECTION.task, **_RETRIED)
def reflection_run_task(*, cursor: int = 0, tenant_id: int | None = None) -> str:
    """Propose semantic cards from groups of related episodes (of one tenant, when given);
    requeues while users remain."""
    return page_run(REFLECTION, cursor=cursor, tenant_id=tenant_id, requeue=reflection_run_task)


@shared_task(name=EXPIRY.task, **_RETRIED)
def stm_expire_sweep_task() -> str:
    """Delete expired short-term items; requeues itself while work remains."""
    with job_lock(EXPIRY) as lease:
        if lease is None:
            return "busy"
        result = stm_expire_sweep(owners_per_batch=EXPIRY.batch)
    if result.more:
        stm_expire_sweep_task.delay()
    return f"removed {result.removed} from {result.owners} users"


@shared_task(
    name=FORGETTING.task,
    acks_late=True,
    autoretry_for=(StoreUnavailable, *DATABASE_OUTAGES),
    retry_backoff=True,
    retry_backoff_max=600,
    max_retries=8,
    soft_time_limit=300,
)
def ltm_forget_task(
    *, cards_per_batch: int = FORGETTING.batch, budget_seconds: float = 240.0
) -> str:
    """Fade unused long-term cards, boost often recalled ones, archive old unimportant ones,
    once a day per tenant; requeues itself while tenants remain."""
    result = ltm_forget(cards_per_batch=cards_per_batch, budget_seconds=budget_seconds)
    if result.more:
        ltm_forget_task.delay(cards_per_batch=cards_per_batch, budget_seconds=budget_seconds)
    if not result.ran:
        return "busy"
    return (
        f"archived {result.archived}, decayed {result.decayed}, boosted {result.boosted} "
        f"in {result.tenants} tenants"
    )
