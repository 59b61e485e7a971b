"""Run a beat job now, in the calling process: `manage.py run_job` and the admin use these.

Each job works through all of its pages before it returns, under the same lock as its beat
entry, so running one while the beat job runs does no harm: one of the two answers "busy".
"""

from __future__ import annotations

from collections.abc import Callable

from profiles.models import Tenant

JOBS = ("promotion_scan", "reflection", "expiry", "forgetting")


def _paged(
    run: Callable[..., object], lock: str, tenant: Tenant | None, progress: Callable[[str], None]
) -> tuple[int, int] | None:
    """Run a cursor-paged job to the end; (examined, proposed), or None when busy."""
    from memoryproject.locks import redis_lock

    name = lock if tenant is None else f"{lock}:{tenant.pk}"
    examined = proposed = 0
    with redis_lock(name, ttl_seconds=1800) as lease:
        if lease is None:
            return None
        cursor = 0
        while True:
            lease.ensure()  # a run that lost its lease stops before the next page
            result = run(cursor=cursor, tenant=tenant)
            examined += result.examined  # type: ignore[attr-defined]
            proposed += result.proposed  # type: ignore[attr-defined]
            progress(f"{examined} examined, {proposed} proposed")
            cursor = result.next_cursor  # type: ignore[attr-defined]
            if not cursor:
                return examined, proposed


def job_run(
    *, name: str, tenant: Tenant | None = None, progress: Callable[[str], None] = lambda _: None
) -> str:
    """Run the job `name` (one of `JOBS`) for every tenant or one; returns what it did."""
    if name == "promotion_scan":
        from memories.review.promotion import promotion_scan

        done = _paged(promotion_scan, "promotion-scan", tenant, progress)
        return "busy" if done is None else f"examined {done[0]} items, proposed {done[1]}"
    if name == "reflection":
        from memories.review.reflection import reflection_run

        done = _paged(reflection_run, "reflection", tenant, progress)
        return "busy" if done is None else f"weighed {done[0]} new episodes, proposed {done[1]}"
    if name == "expiry":
        from memories.stm.services import stm_expire_sweep, stm_expire_sweep_tenant

        if tenant is not None:
            swept = stm_expire_sweep_tenant(tenant=tenant)
            return f"removed {swept.removed} expired items of {swept.owners} users"
        removed = owners = 0
        while True:
            result = stm_expire_sweep()
            if not result.ran:
                return "busy"
            removed, owners = removed + result.removed, owners + result.owners
            progress(f"{removed} removed")
            if not result.more:
                return f"removed {removed} expired items of {owners} users"
    if name == "forgetting":
        from memories.ltm.forgetting import ltm_forget

        forgot = ltm_forget(tenant=tenant)
        return f"archived {forgot.archived}, decayed {forgot.decayed}, boosted {forgot.boosted}"
    raise ValueError(f"Unknown job {name!r}; use one of {', '.join(JOBS)}.")
