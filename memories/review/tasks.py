"""Celery entry points of the review workflows; each calls one service.

Each task keeps its name under `memories.tasks`, where the app registers them all. The
promotion scan's and reflection's tasks live with their Jobs in `memories/jobs.py`.
"""

from __future__ import annotations

from celery import shared_task

from memoryproject.errors import StoreUnavailable

# A job that must finish across store outages: retried with backoff for about an hour, then
# picked up again by its resume beat job.
UNTIL_STORES_CONFIRM = {
    "acks_late": True,
    "autoretry_for": (StoreUnavailable,),
    "retry_backoff": True,
    "retry_backoff_max": 600,
    "max_retries": 12,
    "soft_time_limit": 1800,
}


@shared_task(name="memories.tasks.erasure_run_task", **UNTIL_STORES_CONFIRM)
def erasure_run_task(*, request_id: str) -> str:
    """Run or resume one approved erasure until every store confirms and verification passes."""
    from memories.review.erasure import erasure_run
    from memoryproject.locks import redis_lock

    with redis_lock(f"erasure:{request_id}", ttl_seconds=1800) as acquired:
        if not acquired:
            return "busy"
        return erasure_run(request_id=request_id)


@shared_task(name="memories.tasks.erasures_resume_task", acks_late=True, soft_time_limit=60)
def erasures_resume_task() -> str:
    """Re-enqueue approved erasures that stopped (a store was down longer than the retries)."""
    from memories.review.deletion import deletions_to_resume

    stalled = deletions_to_resume()
    for request_id in stalled:
        erasure_run_task.delay(request_id=request_id)
    return f"resumed {len(stalled)}"


@shared_task(name="memories.tasks.tenant_purge_task", **UNTIL_STORES_CONFIRM)
def tenant_purge_task(*, purge_id: int) -> str:
    """Remove a deleted tenant's data from Redis, Elasticsearch, Milvus and transcript storage."""
    from memories.review.tenant_purge import tenant_purge
    from memoryproject.locks import redis_lock

    with redis_lock(f"tenant-purge:{purge_id}", ttl_seconds=1800) as acquired:
        if not acquired:
            return "busy"
        return tenant_purge(purge_id=purge_id)


@shared_task(name="memories.tasks.tenant_purges_resume_task", acks_late=True, soft_time_limit=60)
def tenant_purges_resume_task() -> str:
    """Re-enqueue purges of deleted tenants that a store outage or a lost task left behind."""
    from memories.review.tenant_purge import tenant_purges_pending

    pending = tenant_purges_pending()
    for purge_id in pending:
        tenant_purge_task.delay(purge_id=purge_id)
    return f"resumed {len(pending)}"
