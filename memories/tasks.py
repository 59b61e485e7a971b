"""Celery entry points of the memory layers; each calls one service."""

from __future__ import annotations

from celery import shared_task

from memoryproject.errors import DATABASE_OUTAGES, StoreUnavailable


@shared_task(
    bind=True,
    acks_late=True,
    autoretry_for=(StoreUnavailable,),
    retry_backoff=True,
    max_retries=6,
    soft_time_limit=240,
)
def stm_extract_task(self, *, session_pk: int) -> str:  # type: ignore[no-untyped-def]
    """Extract short-term memory candidates from a session's new transcript events."""
    from memories.write.extraction import ExtractionBusy, session_extract

    try:
        return session_extract(session_pk=session_pk)
    except ExtractionBusy as busy:
        # Another run holds the session; come back after it so no event is left behind.
        raise self.retry(countdown=5, max_retries=20) from busy


@shared_task(acks_late=True, soft_time_limit=60)
def stm_extract_catch_up_task() -> str:
    """Enqueue extraction for every session whose cursor lags its transcript."""
    from memories.write.extraction import sessions_lagging

    lagging = sessions_lagging()
    for session_pk in lagging:
        stm_extract_task.delay(session_pk=session_pk)
    return f"enqueued {len(lagging)}"


@shared_task(acks_late=True, autoretry_for=(StoreUnavailable,), retry_backoff=True, max_retries=3)
def stm_expire_sweep_task() -> str:
    """Delete expired short-term items; requeues itself while work remains."""
    from memories.stm.services import stm_expire_sweep

    result = stm_expire_sweep()
    if result.more:
        stm_expire_sweep_task.delay()
    if not result.ran:
        return "busy"
    return f"removed {result.removed} from {result.owners} users"


@shared_task(
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
    acks_late=True,
    autoretry_for=(StoreUnavailable,),
    retry_backoff=True,
    max_retries=8,
    soft_time_limit=300,
)
def history_outbox_drain_task(*, catch_up: bool = False) -> str:
    """Index transcript events waiting in the history outbox; requeues itself while rows remain.

    With `catch_up` (the beat job) sessions an append signal missed are queued first.
    """
    from memories.history.services import (
        history_catch_up,
        history_drain_started,
        history_outbox_drain,
    )

    history_drain_started()
    queued = history_catch_up() if catch_up else 0
    result = history_outbox_drain()
    if result.more:
        history_outbox_drain_task.delay()
    return f"indexed {result.indexed} entries of {result.events} events; caught up {queued}"


@shared_task(
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


@shared_task(
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


@shared_task(acks_late=True, autoretry_for=(StoreUnavailable,), retry_backoff=True, max_retries=3)
def promotion_scan_task(*, cursor: int = 0, tenant_id: int | None = None) -> str:
    """Propose short-term items that meet the promotion triggers (of one tenant, when given);
    requeues while users remain."""
    from memories.review.promotion import promotion_scan
    from memories.stm.locks import redis_lock
    from profiles.models import Tenant

    tenant = None
    if tenant_id is not None:
        tenant = Tenant.objects.filter(pk=tenant_id, is_active=True).first()
        if tenant is None:
            return "gone"
    lock = "promotion-scan" if tenant is None else f"promotion-scan:{tenant_id}"
    with redis_lock(lock, ttl_seconds=600) as acquired:
        if not acquired:
            return "busy"
        result = promotion_scan(cursor=cursor, tenant=tenant)
    if result.next_cursor:
        promotion_scan_task.delay(cursor=result.next_cursor, tenant_id=tenant_id)
    return f"examined {result.examined}, proposed {result.proposed}"


@shared_task(
    acks_late=True,
    autoretry_for=(StoreUnavailable,),
    retry_backoff=True,
    retry_backoff_max=600,
    max_retries=12,
    soft_time_limit=1800,
)
def erasure_run_task(*, request_id: str) -> str:
    """Run or resume one approved erasure until every store confirms and verification passes."""
    from memories.review.erasure import erasure_run
    from memories.stm.locks import redis_lock

    with redis_lock(f"erasure:{request_id}", ttl_seconds=1800) as acquired:
        if not acquired:
            return "busy"
        return erasure_run(request_id=request_id)


@shared_task(acks_late=True, soft_time_limit=60)
def erasures_resume_task() -> str:
    """Re-enqueue approved erasures that stopped (a store was down longer than the retries)."""
    from memories.review.deletion import deletions_to_resume

    stalled = deletions_to_resume()
    for request_id in stalled:
        erasure_run_task.delay(request_id=request_id)
    return f"resumed {len(stalled)}"


@shared_task(
    acks_late=True,
    autoretry_for=(StoreUnavailable,),
    retry_backoff=True,
    retry_backoff_max=600,
    max_retries=12,
    soft_time_limit=1800,
)
def tenant_purge_task(*, purge_id: int) -> str:
    """Remove a deleted tenant's data from Redis, Elasticsearch, Milvus and transcript storage."""
    from memories.review.tenant_purge import tenant_purge
    from memories.stm.locks import redis_lock

    with redis_lock(f"tenant-purge:{purge_id}", ttl_seconds=1800) as acquired:
        if not acquired:
            return "busy"
        return tenant_purge(purge_id=purge_id)


@shared_task(acks_late=True, soft_time_limit=60)
def tenant_purges_resume_task() -> str:
    """Re-enqueue purges of deleted tenants that a store outage or a lost task left behind."""
    from memories.review.tenant_purge import tenant_purges_pending

    pending = tenant_purges_pending()
    for purge_id in pending:
        tenant_purge_task.delay(purge_id=purge_id)
    return f"resumed {len(pending)}"


@shared_task(acks_late=True, autoretry_for=(StoreUnavailable,), retry_backoff=True, max_retries=3)
def reflection_run_task(*, cursor: int = 0) -> str:
    """Propose semantic cards from groups of related episodes; requeues while users remain."""
    from memories.review.reflection import reflection_run
    from memories.stm.locks import redis_lock

    with redis_lock("reflection", ttl_seconds=900) as acquired:
        if not acquired:
            return "busy"
        result = reflection_run(cursor=cursor)
    if result.next_cursor:
        reflection_run_task.delay(cursor=result.next_cursor)
    return f"weighed {result.examined} new episodes, proposed {result.proposed}"
