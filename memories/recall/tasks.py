"""Celery entry points of recall; each calls one service.

Each task keeps its name under `memories.tasks`, where the app registers them all.
"""

from __future__ import annotations

from celery import shared_task

from memoryproject.errors import StoreUnavailable


@shared_task(
    name="memories.tasks.recall_effects_apply_task",
    acks_late=True,
    autoretry_for=(StoreUnavailable,),
    retry_backoff=True,
    max_retries=8,
    soft_time_limit=120,
)
def recall_effects_apply_task(*, records: list[dict] | None = None) -> str:
    """Apply queued recall side effects (or these records, when the queue was unreachable)."""
    from memories.recall.effects import recall_effects_apply

    result = recall_effects_apply(records=records)
    if result.more:
        recall_effects_apply_task.delay()
    elif result.busy:
        # Another run holds the queue (or died holding it until the lock expires): come back,
        # so records queued meanwhile are not left for the beat schedule alone.
        recall_effects_apply_task.apply_async(countdown=10)
        return "busy"
    return f"applied {result.applied} recalls"
