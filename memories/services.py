"""Setting up the stores every memory layer writes to."""

from __future__ import annotations

from memories.history.search import history_search_index
from memories.history.vectors import history_vector_index
from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memories.stm.store import stm_store
from profiles.throttling import load_scripts


def stores_ensure() -> list[str]:
    """Create what the stores need (ES template/index/alias, Milvus collection, Redis scripts).

    Idempotent: running it again changes nothing that exists.
    """
    done = [*card_search_index().ensure(), *vector_index().ensure()]
    done += [*history_search_index().ensure(), *history_vector_index().ensure()]
    done += [f"redis script {sha}" for sha in [*load_scripts(), *stm_store().load_scripts()]]
    return done
