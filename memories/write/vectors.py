"""Embeddings of short-term items, written by the worker after the items land.

Recall compares a query with the user's newest items in meaning as well as in words
(`memories/recall/semantic.py`); the vectors are kept beside the items in Redis as float16 bytes
and go with them. An item's vector is kept only while its summary is the one embedded.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

import numpy as np
from django.db import transaction

from memories.ltm.embedder import embedder
from memories.stm.items import Status
from memories.stm.store import stm_store
from memoryproject.redis_keys import Owner

logger = logging.getLogger(__name__)
VECTOR_DTYPE = np.float16


def summary_digest(summary: str) -> str:
    """The SHA1 Redis computes of the same text (redis.sha1hex in vectors.lua)."""
    return hashlib.sha1(summary.encode(), usedforsecurity=False).hexdigest()


def stm_vectors_write(*, tenant_id: int, items: Sequence[tuple[int, str]]) -> str:
    """Embed the summaries of these (end user id, item id) items and keep the vectors."""
    by_owner: dict[Owner, list[str]] = {}
    for end_user_id, item_id in items:
        by_owner.setdefault(Owner(tenant_id, int(end_user_id)), []).append(str(item_id))
    store = stm_store()
    kept = 0
    for owner, item_ids in by_owner.items():
        found = [
            item
            for item in store.get_many(owner=owner, item_ids=list(dict.fromkeys(item_ids)))
            if item.status == Status.ACTIVE and item.summary
        ]
        if not found:
            continue
        vectors = embedder().embed_passages([item.summary for item in found])
        rows = [
            (item.id, summary_digest(item.summary), vector.astype(VECTOR_DTYPE).tobytes())
            for item, vector in zip(found, vectors, strict=True)
        ]
        kept += store.set_vectors(owner=owner, vectors=rows)
    return f"embedded {kept}"


def stm_vectors_schedule(*, tenant_id: int, items: Sequence[tuple[int, str]]) -> None:
    """Embed these items in the worker once the caller's transaction commits. Losing this
    loses no memory: an item without a vector is still matched by its words."""
    if not items:
        return
    from memories.write.tasks import stm_vectors_task

    payload = [[int(end_user_id), str(item_id)] for end_user_id, item_id in items]

    def send() -> None:
        try:
            stm_vectors_task.delay(tenant_id=tenant_id, items=payload)
        except Exception:  # noqa: BLE001 - the broker is down: the items keep their words
            logger.warning("short-term item vectors not scheduled", exc_info=True)

    transaction.on_commit(send)
