"""Episodic history (its Elasticsearch index and Milvus collection) as the registry knows it
(`memoryproject.stores`): what an erasure, a tenant purge, `ensure_stores`, `/readyz` and the
drift check do with it."""

from __future__ import annotations

from typing import Any

from django.db import connections

from memories.history.rebuild import history_drift, history_erase_user, remove_tenant_entries
from memories.history.search import history_search_index
from memories.history.services import history_lag
from memories.history.vectors import history_vector_index
from memoryproject.stores import (
    Counts,
    Drift,
    Erasure,
    Findings,
    ReadyCheck,
    Step,
    Store,
    TenantPurge,
)


def _inventory(erasure: Erasure) -> dict[str, Any]:
    if not erasure.of_user:
        return {}
    ids = history_search_index().ids_where(
        tenant_id=str(erasure.tenant_id), user_id=erasure.user_id
    )
    return {"history_entry_ids": ids}


def _erase(erasure: Erasure) -> Counts:
    """The user's entries, from Elasticsearch and Milvus."""
    if not erasure.of_user:
        return {"documents": 0, "vectors": 0}
    ids = erasure.inventory.get("history_entry_ids", [])
    removed = history_erase_user(tenant_id=erasure.tenant_id, user_id=erasure.user_id)
    # By id too: an entry written under the user's id is gone whatever its fields say.
    history_search_index().remove_ids(ids=ids)
    history_vector_index().remove_ids(ids=ids)
    return {"documents": removed["history_documents"], "vectors": removed["history_vectors"]}


def _verify(erasure: Erasure, findings: Findings) -> None:
    if not erasure.of_user:
        return
    tenant_id, user_id = str(erasure.tenant_id), erasure.user_id
    history_ids = erasure.inventory.get("history_entry_ids", [])
    for name, index in (
        ("history_elasticsearch", history_search_index()),
        ("history_milvus", history_vector_index()),
    ):
        held = set(index.ids_where(tenant_id=tenant_id, user_id=user_id))
        if history_ids:
            held |= set(index.ids_where(tenant_id=tenant_id, ids=history_ids))
        findings.by_id[name] = len(held)


def _purge(purge: TenantPurge) -> Counts:
    return {"entries": remove_tenant_entries(tenant_id=purge.tenant_id)}


def _leftovers(purge: TenantPurge) -> Counts:
    tenant_id = str(purge.tenant_id)
    return {
        "history_elasticsearch": history_search_index().count_where(tenant_id=tenant_id),
        "history_milvus": len(history_vector_index().ids_where(tenant_id=tenant_id)),
    }


def _ensure() -> list[str]:
    return [*history_search_index().ensure(), *history_vector_index().ensure()]


def _collection_loaded() -> None:
    history_vector_index().ready()


def _lag() -> dict[str, Any]:
    """How far indexing lags (reported, not a failure: a slow worker must not take the web
    servers out of service); fails only when the lag cannot be read."""
    try:
        return history_lag()
    finally:
        connections.close_all()  # this runs in a worker thread: do not leak its connection


def _lag_needs_attention(lag: dict[str, Any]) -> bool:
    """Indexing behind its bound, or sessions with events no outbox row covers."""
    return bool(not lag.get("within_bound", True) or lag.get("unqueued_sessions", 0))


def _drift(repair: bool) -> Drift:
    return history_drift(repair=repair)


HISTORY = Store(
    name="history",
    inventory=_inventory,
    erase=[Step("history", _erase)],
    verify=_verify,
    purge=[Step("history", _purge)],
    leftovers=_leftovers,
    ensure=_ensure,
    ready={
        "milvus_history": ReadyCheck(_collection_loaded),
        "history_index": ReadyCheck(_lag, reused=True, warns=_lag_needs_attention),
    },
    drift=_drift,
)
