"""Celery entry points of long-term memory; each calls one service.

Each task keeps its name under `memories.tasks`, where the app registers them all. The
forgetting job's task lives with its Job in `memories/jobs.py`.
"""

from __future__ import annotations

from celery import shared_task

from memoryproject.errors import StoreUnavailable


@shared_task(
    name="memories.tasks.ltm_outbox_drain_task",
    acks_late=True,
    autoretry_for=(StoreUnavailable,),
    retry_backoff=True,
    max_retries=8,
    soft_time_limit=300,
)
def ltm_outbox_drain_task() -> str:
    """Write pending long-term card versions to Elasticsearch and Milvus."""
    from memories.ltm.services import outbox_drain

    result = outbox_drain()
    if result.more:
        ltm_outbox_drain_task.delay()
    return f"indexed {result.indexed}"
