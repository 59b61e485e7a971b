"""The short-term store (Redis) as the registry knows it (`memoryproject.stores`): what an
erasure, a tenant purge, `ensure_stores` and `/readyz` do with it."""

from __future__ import annotations

from typing import Any

from memories.stm.store import stm_store
from memoryproject.redis_client import redis_connection
from memoryproject.redis_keys import Owner
from memoryproject.stores import (
    PROBE_SAMPLE,
    Counts,
    Erasure,
    Findings,
    ReadyCheck,
    Step,
    Store,
    TenantPurge,
)


def _owner(erasure: Erasure) -> Owner | None:
    pk = erasure.end_user_pk
    return Owner(erasure.tenant_id, pk) if pk else None


def _inventory(erasure: Erasure) -> dict[str, Any]:
    owner = _owner(erasure)
    if not erasure.of_user or owner is None:
        return {}
    return {
        "stm_item_ids": [item.id for item in stm_store().items_of(owner=owner, limit=PROBE_SAMPLE)]
    }


def _erase(erasure: Erasure) -> Counts:
    """The user's keys, or the erased fact's or preference's item."""
    owner = _owner(erasure)
    if owner is None:
        return {"keys": 0}
    store = stm_store()
    if erasure.of_user:
        return {"keys": store.erase_owner(owner=owner)}
    if erasure.of_fact:
        key = erasure.inventory["key"]
        found = store.lookup(owner=owner, fingerprint="", canonical_fact_key=key)
        item_id = found.get("canonical")
        deleted = store.delete(owner=owner, item_id=item_id) if item_id else False
        return {"items": int(deleted)}
    return {"keys": 0}


def _verify(erasure: Erasure, findings: Findings) -> None:
    owner = _owner(erasure)
    if owner is None:
        return
    store = stm_store()
    if erasure.of_user:
        findings.by_id["redis_keys"] = len(store.owner_keys(owner))
        item_ids = erasure.inventory.get("stm_item_ids", [])
        findings.by_id["redis_items"] = len(store.get_many(owner=owner, item_ids=item_ids))
    elif erasure.of_fact:
        key = erasure.inventory["key"]
        pointers = store.lookup(owner=owner, fingerprint="", canonical_fact_key=key)
        findings.by_id["redis_items"] = int("canonical" in pointers)


def _purge(purge: TenantPurge) -> Counts:
    """Short-term keys and reflection marks of every end user."""
    return {"keys": stm_store().erase_tenant(tenant_id=purge.tenant_id)}


def _leftovers(purge: TenantPurge) -> Counts:
    return {"redis_keys": len(stm_store().tenant_keys(tenant_id=purge.tenant_id))}


def _ensure() -> list[str]:
    return [f"redis script {sha}" for sha in stm_store().load_scripts()]


def _ping() -> None:
    redis_connection().ping()


SHORT_TERM = Store(
    name="short_term",
    inventory=_inventory,
    erase=[Step("redis", _erase)],
    verify=_verify,
    purge=[Step("redis", _purge)],
    leftovers=_leftovers,
    ensure=_ensure,
    ready={"redis": ReadyCheck(_ping)},
)
