"""A pool candidate for unit tests, with plain values for every field a test leaves out."""

from __future__ import annotations

import time

from memories.recall.pool import MemoryCandidate

NOW = time.time()


def candidate(memory_id: str, source: str = "history", **fields) -> MemoryCandidate:
    values = {
        "memory_id": memory_id,
        "source": source,
        "memory_type": "history" if source == "history" else "semantic_fact",
        "domain": source,
        "text": memory_id,
        "summary": memory_id,
        "core": memory_id,
        "canonical_fact_key": "",
        "fact_value": "",
        "fingerprint": memory_id,
        "entities": [],
        "importance": 0.5,
        "confidence": 0.8,
        "updated_at": NOW,
        "raw_relevance": 1.0,
    }
    values.update(fields)
    return MemoryCandidate(**values)
