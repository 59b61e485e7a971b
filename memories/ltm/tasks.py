"""Celery entry points of long-term memory; each calls one service.

Each task keeps its name under `memories.tasks`, where the app registers them all.
"""

from __future__ import annotations

from celery import shared_task

from memoryproject.errors import DATABASE_OUTAGES, StoreUnavailable


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


@shared_task(
    name="memories.tasks.ltm_forget_task",
    acks_late=True,
    autoretry_for=(StoreUnavailable, *DATABASE_OUTAGES),
    retry_backoff=True,
    retry_backoff_max=600,
    max_retries=8,
    soft_time_limit=300,
)
def ltm_forget_task(*, cards_per_batch: int = 500, budget_seconds: float = 240.0) -> str:
    """Fade unused long-term cards, boost often recalled ones, archive old unimportant ones,
    once a day per tenant; requeues itself while tenants remain."""
    from memories.ltm.forgetting import ltm_forget

    result = ltm_forget(cards_per_batch=cards_per_batch, budget_seconds=budget_seconds)
    if result.more:
        ltm_forget_task.delay(cards_per_batch=cards_per_batch, budget_seconds=budget_seconds)
    if not result.ran:
        return "busy"
    return (
        f"archived {result.archived}, decayed {result.decayed}, boosted {result.boosted} "
        f"in {result.tenants} tenants"
    )
