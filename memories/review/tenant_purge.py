"""Removing a deleted tenant's data from the stores beside PostgreSQL.

`tenant_delete` removes every PostgreSQL row of a tenant in one transaction; in that same
transaction a `TenantPurge` row notes the tenant's id and end users (`memories/receivers.py`).
After commit a task runs the steps below, as user erasure does: each removes everything of the
tenant from one store by the tenant's id (never by a list that could miss something), each is
safe to repeat, and the row is deleted only when a check of every store finds nothing left. A
run stopped by a store outage keeps the row, with its attempts and error, and the task retries;
the `tenant-purges-resume` beat job re-queues rows a lost task left behind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db.models import F

from memories.history.search import history_search_index
from memories.history.services import remove_tenant_entries
from memories.history.vectors import history_vector_index
from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memories.recall.cache import context_cache
from memories.review.models import TenantPurge
from memories.stm.store import stm_store
from memoryproject.errors import StoreUnavailable
from transcripts.storage import segments_delete, segments_under

logger = logging.getLogger(__name__)

MILVUS_BATCH = 1000


def _user_ids(purge: TenantPurge) -> list[str]:
    return [str(user_id) for _, user_id in purge.end_users]


def _step_redis(purge: TenantPurge) -> dict[str, int]:
    """Short-term keys and reflection marks of every end user; cached Layer 1 documents."""
    removed = stm_store().erase_tenant(tenant_id=purge.tenant_id)
    cached = context_cache().forget_tenant(tenant_id=purge.tenant_id, user_ids=_user_ids(purge))
    return {"keys": removed, "cache_keys": cached}


def _step_elasticsearch(purge: TenantPurge) -> dict[str, int]:
    return {"documents": card_search_index().remove_tenant(tenant_id=str(purge.tenant_id))}


def _step_milvus(purge: TenantPurge) -> dict[str, int]:
    vectors, removed = vector_index(), 0
    # Counted by id (a delete by filter does not say how many it removed on every server).
    while held := vectors.ids_where(tenant_id=str(purge.tenant_id))[:MILVUS_BATCH]:
        vectors.remove(ids=held)
        vectors.flush()
        removed += len(held)
    return {"vectors": removed}


def _step_history(purge: TenantPurge) -> dict[str, int]:
    return {"entries": remove_tenant_entries(tenant_id=purge.tenant_id)}


def _step_transcripts(purge: TenantPurge) -> dict[str, int]:
    """The segment objects of every session, stored under `<tenant id>/`."""
    return {"segments": segments_delete(names=segments_under(prefix=f"{purge.tenant_id}/"))}


STEPS: tuple[tuple[str, Callable[[TenantPurge], dict[str, int]]], ...] = (
    ("redis", _step_redis),
    ("elasticsearch", _step_elasticsearch),
    ("milvus", _step_milvus),
    ("history", _step_history),
    ("transcripts", _step_transcripts),
)


def tenant_leftovers(*, tenant_id: int, user_ids: list[str]) -> dict[str, int]:
    """What each store still holds of a tenant (all zero once it is purged)."""
    tenant = str(tenant_id)
    return {
        "redis_keys": len(stm_store().tenant_keys(tenant_id=tenant_id)),
        "redis_cache": context_cache().tenant_keys_held(tenant_id=tenant_id, user_ids=user_ids),
        "elasticsearch_cards": len(card_search_index().ids_where(tenant_id=tenant)),
        "milvus_cards": len(vector_index().ids_where(tenant_id=tenant)),
        "history_elasticsearch": history_search_index().count_where(tenant_id=tenant),
        "history_milvus": len(history_vector_index().ids_where(tenant_id=tenant)),
        "transcript_segments": len(segments_under(prefix=f"{tenant_id}/")),
    }


def tenant_purge(*, purge_id: int) -> str:
    """Run every step for one deleted tenant, check, and drop its row: "purged", "left" (the
    check found something, e.g. a write racing the purge; run again) or "gone" (done before)."""
    purge = TenantPurge.objects.filter(pk=purge_id).first()
    if purge is None:
        return "gone"
    progress: dict[str, dict[str, int]] = {}
    try:
        for name, step in STEPS:
            progress[name] = step(purge)
        left = tenant_leftovers(tenant_id=purge.tenant_id, user_ids=_user_ids(purge))
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
