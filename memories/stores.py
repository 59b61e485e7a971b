"""Every store the service keeps data in, registered in one place (`memoryproject.stores`).

The order is the order in which an erasure and a tenant purge visit them, and so the order of
the receipt's `stores`: Redis first (short-term items, then recall's cache, whose counts go
beside them under `redis`), then the cards' Elasticsearch index and Milvus collection, history,
and the transcript segments; erasure removes the PostgreSQL rows of record last, after every
store derived from them. `ensure_stores` and `/readyz` follow the same order.
"""

from __future__ import annotations

from memories.history.store_entry import HISTORY
from memories.ltm.store_entry import CARDS
from memories.recall.store_entry import RECALL_CACHE
from memories.stm.store_entry import SHORT_TERM
from memoryproject.stores import Store, register, registered
from profiles.store_entry import RATE_LIMITS
from transcripts.store_entry import TRANSCRIPTS

STORES: tuple[Store, ...] = (
    RATE_LIMITS,  # profiles: the rate limits' Redis script (set-up only)
    SHORT_TERM,  # memories.stm: Redis
    RECALL_CACHE,  # memories.recall: Redis, beside the short-term items
    CARDS,  # memories.ltm: Elasticsearch and Milvus
    HISTORY,  # memories.history: Elasticsearch and Milvus
    TRANSCRIPTS,  # transcripts: the segment objects
)


def stores_register() -> None:
    """Register every store, in order (once: Django may call an app's ready() again)."""
    known = {store.name for store in registered()}
    for store in STORES:
        if store.name not in known:
            register(store)
