"""Setting up the stores every memory layer writes to."""

from __future__ import annotations

from memoryproject.stores import registered


def stores_ensure() -> list[str]:
    """Create what each registered store needs (ES templates, indexes and aliases, Milvus
    collections, Redis scripts), in registry order; returns what was done.

    Idempotent: running it again changes nothing that exists.
    """
    return [line for store in registered() if store.ensure for line in store.ensure()]
