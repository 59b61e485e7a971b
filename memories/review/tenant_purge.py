"""Removing a deleted tenant's data from the stores beside PostgreSQL.

`tenant_delete` removes every PostgreSQL row of a tenant in one transaction; in that same
transaction a `TenantPurge` row notes the tenant's id and end users (`memories/receivers.py`).
After commit a task runs the purge steps of every registered store (`memoryproject.stores`, in
registry order), as user erasure does: each removes everything of the tenant from one store by
the tenant's id (never by a list that could miss something), each is
safe to repeat, and the row is deleted only when a check of every store finds nothing left. A
run stopped by a store outage keeps the row, with its attempts and error, and the task retries;
the `tenant-purges-resume` beat job re-queues rows a lost task left behind.
"""

from __future__ import annotations

import logging

from django.db.models import F

from memories.review.models import TenantPurge
from memoryproject import stores
from memoryproject.errors import StoreUnavailable

logger = logging.getLogger(__name__)


def _scope(purge: TenantPurge) -> stores.TenantPurge:
    return stores.TenantPurge(
        tenant_id=purge.tenant_id, user_ids=[str(user_id) for _, user_id in purge.end_users]
    )


def tenant_leftovers(*, tenant_id: int, user_ids: list[str]) -> dict[str, int]:
    """What each registered store still holds of a tenant (all zero once it is purged)."""
    scope = stores.TenantPurge(tenant_id=tenant_id, user_ids=user_ids)
    left: dict[str, int] = {}
    for store in stores.registered():
        if store.leftovers is not None:
            left |= store.leftovers(scope)
    return left


def tenant_purge(*, purge_id: int) -> str:
    """Run every step for one deleted tenant, check, and drop its row: "purged", "left" (the
    check found something, e.g. a write racing the purge; run again) or "gone" (done before)."""
    purge = TenantPurge.objects.filter(pk=purge_id).first()
    if purge is None:
        return "gone"
    progress: dict[str, dict[str, int]] = {}
    scope = _scope(purge)
    try:
        # Every registered store's steps, in registry order (redis, elasticsearch, milvus,
        # history, transcripts today).
        for step in stores.steps_of("purge"):
            progress[step.key] = step.run(scope)
        left = tenant_leftovers(tenant_id=scope.tenant_id, user_ids=scope.user_ids)
    except StoreUnavailable as exc:
        _failed(purge, progress, str(exc))
        raise
    if any(left.values()):
        _failed(purge, progress, f"left after the purge: {left}")
        return "left"
    purge.delete()
    logger.info("tenant %s (%s) purged: %s", purge.tenant_slug, purge.tenant_id, progress)
    return "purged"


def _failed(purge: TenantPurge, progress: dict[str, dict[str, int]], error: str) -> None:
    TenantPurge.objects.filter(pk=purge.pk).update(
        attempts=F("attempts") + 1, last_error=error[:2000], progress=progress
    )


def tenant_purges_pending(*, limit: int = 100) -> list[int]:
    """Rows of deleted tenants still to purge, oldest first."""
    return list(TenantPurge.objects.order_by("id").values_list("pk", flat=True)[:limit])
