"""Recall's cache of Layer 1 documents (Redis) as the registry knows it
(`memoryproject.stores`): its keys go with the short-term store's, under `redis`."""

from __future__ import annotations

from memories.recall.cache import context_cache
from memoryproject.stores import Counts, Erasure, Step, Store, TenantPurge


def _erase(erasure: Erasure) -> Counts:
    if not erasure.of_user:
        return {}
    return {
        "cache_keys": context_cache().forget_user(
            tenant_id=erasure.tenant_id, user_id=erasure.user_id
        )
    }


def _purge(purge: TenantPurge) -> Counts:
    cached = context_cache().forget_tenant(tenant_id=purge.tenant_id, user_ids=purge.user_ids)
    return {"cache_keys": cached}


def _leftovers(purge: TenantPurge) -> Counts:
    held = context_cache().tenant_keys_held(tenant_id=purge.tenant_id, user_ids=purge.user_ids)
    return {"redis_cache": held}


RECALL_CACHE = Store(
    name="recall_cache",
    erase=[Step("redis", _erase)],
    purge=[Step("redis", _purge)],
    leftovers=_leftovers,
)
