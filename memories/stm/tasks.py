"""Celery entry points of short-term memory; each calls one service.

Each task keeps its name under `memories.tasks`, where the app registers them all.
"""

from __future__ import annotations

from celery import shared_task

from memoryproject.errors import StoreUnavailable


@shared_task(
    name="memories.tasks.stm_expire_sweep_task",
    acks_late=True,
    autoretry_for=(StoreUnavailable,),
    retry_backoff=True,
    max_retries=3,
)
def stm_expire_sweep_task() -> str:
    """Delete expired short-term items; requeues itself while work remains."""
    from memories.stm.services import stm_expire_sweep

    result = stm_expire_sweep()
    if result.more:
        stm_expire_sweep_task.delay()
    if not result.ran:
        return "busy"
    return f"removed {result.removed} from {result.owners} users"
