"""Long-term cards (their Elasticsearch index and Milvus collection) as the registry knows
them (`memoryproject.stores`): what an erasure, a tenant purge, `ensure_stores`, `/readyz`
and the drift check do with them. The cards' rows are PostgreSQL's, erased with the user."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from memories.ltm.models import LtmCard
from memories.ltm.rebuild import ltm_drift
from memories.ltm.scope import Scope
from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memoryproject.stores import (
    PROBE_SAMPLE,
    Counts,
    Drift,
    Erasure,
    Findings,
    ReadyCheck,
    Step,
    Store,
    TenantPurge,
)

# A deleted vector's nearest neighbour at least this close counts as the same memory.
VECTOR_PROBE_THRESHOLD = 0.97
STATUSES = ("active", "archived")
MILVUS_BATCH = 1000


def content_sha256(*, title: str, summary: str, content: str) -> str:
    """The content hash of a card, as PostgreSQL computes it (erasure's `_cards_with_hashes`)."""
    return hashlib.sha256("\n".join((title, summary, content)).encode()).hexdigest()


def _encode_vector(vector: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode()


def _decode_vector(text: str) -> list[float]:
    return np.frombuffer(base64.b64decode(text), dtype=np.float32).tolist()


# --- erasure ---------------------------------------------------------------------------------
def _inventory(erasure: Erasure) -> dict[str, Any]:
    """The erased cards' ids and content hashes; a sample of their texts and vectors."""
    cards = LtmCard.objects.filter(tenant_id=erasure.tenant_id)
    if erasure.of_user:
        held = list(cards.filter(end_user_id=erasure.end_user_pk))
    elif erasure.of_card:
        held = list(cards.filter(memory_id=erasure.target)[:1])
    else:
        return {}
    sample = held[:PROBE_SAMPLE]
    vectors = vector_index().vectors_of(ids=[c.memory_id for c in sample])
    return {
        "card_ids": [c.memory_id for c in held],
        "card_hashes": [
            content_sha256(title=c.title, summary=c.summary, content=c.content) for c in held
        ],
        "probe_texts": [c.text for c in sample],
        "probe_vectors": {memory_id: _encode_vector(v) for memory_id, v in vectors.items()},
    }


def _erase_documents(erasure: Erasure) -> Counts:
    index = card_search_index()
    deleted = index.remove_ids(ids=erasure.inventory.get("card_ids", []))
    if erasure.of_user:
        deleted += index.remove_user(tenant_id=str(erasure.tenant_id), user_id=erasure.user_id)
    return {"documents": deleted}


def _erase_vectors(erasure: Erasure) -> Counts:
    vectors, tenant_id = vector_index(), str(erasure.tenant_id)
    held = vectors.ids_where(tenant_id=tenant_id, ids=erasure.inventory.get("card_ids", []))
    vectors.remove(ids=held)
    deleted = len(held)
    if erasure.of_user:
        deleted += vectors.remove_user(tenant_id=tenant_id, user_id=erasure.user_id)
    vectors.flush()
    return {"vectors": deleted}


def _verify(erasure: Erasure, findings: Findings) -> None:
    """The erased cards by id and by content in both indexes, the user's documents and
    vectors, and a nearest-neighbour probe of the erased vectors."""
    tenant_id = str(erasure.tenant_id)
    search, vectors = card_search_index(), vector_index()
    card_ids = erasure.inventory.get("card_ids", [])
    if card_ids or erasure.of_user or erasure.of_card:
        findings.by_id["elasticsearch"] = len(search.ids_where(tenant_id=tenant_id, ids=card_ids))
        findings.by_id["milvus"] = len(vectors.ids_where(tenant_id=tenant_id, ids=card_ids))
        _lexical_probe(erasure, findings)
    if erasure.of_user:
        user_id = erasure.user_id
        findings.by_id["elasticsearch_user"] = len(
            search.ids_where(tenant_id=tenant_id, user_id=user_id)
        )
        findings.by_id["milvus_user"] = len(vectors.ids_where(tenant_id=tenant_id, user_id=user_id))
    probe = _vector_probe(erasure)
    findings.add_section("by_vector", probe, ok=probe["hits_of_erased"] == 0)


def _lexical_probe(erasure: Erasure, findings: Findings) -> None:
    """Documents matching an erased card's text with the same content hash: the erased
    card's or user's (a failure), or someone else's (reported)."""
    card_ids = erasure.inventory.get("card_ids", [])
    hashes = set(erasure.inventory.get("card_hashes", []))
    erased_user = erasure.inventory.get("user_id", "\x00")
    lexical = lexical_elsewhere = 0
    for text in erasure.inventory.get("probe_texts", []):
        found = card_search_index().matching_texts(
            tenant_id=str(erasure.tenant_id), text=text[:2000]
        )
        for memory_id, doc in found.items():
            content = content_sha256(
                title=doc.get("title", ""),
                summary=doc.get("summary", ""),
                content=doc.get("content", ""),
            )
            if content not in hashes:
                continue
            if memory_id in card_ids or doc.get("user_id") == erased_user:
                lexical += 1
            else:
                lexical_elsewhere += 1
    findings.by_hash["elasticsearch"] = lexical
    findings.elsewhere["elasticsearch"] = lexical_elsewhere


def _vector_probe(erasure: Erasure) -> dict[str, Any]:
    erased = set(erasure.inventory.get("card_ids", []))
    scope = Scope(tenant_id=str(erasure.tenant_id), statuses=STATUSES)
    hits_of_erased = similar_elsewhere = 0
    probes = erasure.inventory.get("probe_vectors", {})
    for encoded in probes.values():
        for hit in vector_index().nearest(vector=_decode_vector(encoded), scope=scope, limit=3):
            if hit.score < VECTOR_PROBE_THRESHOLD:
                continue
            if hit.memory_id in erased:
                hits_of_erased += 1
            else:
                similar_elsewhere += 1
    return {
        "probes": len(probes),
        "threshold": VECTOR_PROBE_THRESHOLD,
        "hits_of_erased": hits_of_erased,
        "similar_cards_of_others": similar_elsewhere,
    }


# --- tenant purge ----------------------------------------------------------------------------
def _purge_documents(purge: TenantPurge) -> Counts:
    return {"documents": card_search_index().remove_tenant(tenant_id=str(purge.tenant_id))}


def _purge_vectors(purge: TenantPurge) -> Counts:
    vectors, removed = vector_index(), 0
    # Counted by id (a delete by filter does not say how many it removed on every server).
    while held := vectors.ids_where(tenant_id=str(purge.tenant_id))[:MILVUS_BATCH]:
        vectors.remove(ids=held)
        vectors.flush()
        removed += len(held)
    return {"vectors": removed}


def _leftovers(purge: TenantPurge) -> Counts:
    tenant_id = str(purge.tenant_id)
    return {
        "elasticsearch_cards": len(card_search_index().ids_where(tenant_id=tenant_id)),
        "milvus_cards": len(vector_index().ids_where(tenant_id=tenant_id)),
    }


# --- set-up, readiness, drift ----------------------------------------------------------------
def _ensure() -> list[str]:
    return [*card_search_index().ensure(), *vector_index().ensure()]


def _ping() -> None:
    card_search_index().ping()


def _collection_loaded() -> None:
    vector_index().ready()  # answering, and the card collection loaded


def _drift(repair: bool) -> Drift:
    return ltm_drift(repair=repair)


CARDS = Store(
    name="cards",
    inventory=_inventory,
    erase=[Step("elasticsearch", _erase_documents), Step("milvus", _erase_vectors)],
    verify=_verify,
    purge=[Step("elasticsearch", _purge_documents), Step("milvus", _purge_vectors)],
    leftovers=_leftovers,
    ensure=_ensure,
    ready={"elasticsearch": ReadyCheck(_ping), "milvus": ReadyCheck(_collection_loaded)},
    drift=_drift,
)
