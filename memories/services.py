"""Orchestration shared by the memory layers."""

from __future__ import annotations

from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memories.stm.store import stm_store
from profiles.throttling import load_scripts


def stores_ensure() -> list[str]:
    """Create what the stores need (ES template/index/alias, Milvus collection, Redis scripts).

    Idempotent: running it again changes nothing that exists.
    """
    done = [*card_search_index().ensure(), *vector_index().ensure()]
    done += [f"redis script {sha}" for sha in [*load_scripts(), *stm_store().load_scripts()]]
    return done
