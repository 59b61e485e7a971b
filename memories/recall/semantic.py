"""Closeness in meaning: is a memory about what the query asks, though it shares no word?

A multilingual embedding puts every short text fairly close to every other (cosines of 0.75 to
0.9 for unrelated pairs), and short or Chinese queries sit closer to everything than long English
ones. So a memory's cosine is judged against a background: the query's mean cosine to plain
statements about no user in particular (`data/recall_reference.txt`). The memory is close in
meaning when its cosine exceeds that background by `SEMANTIC_MARGIN`.

The margin and the background were chosen on the tuning part of the agent-question set
(`benchmarks/semantic_margin.py`: the mean beat the nearest three and the user's own median) and
reported on its held-out part, end to end by `benchmarks/agent_questions.py` (docs/recall.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

from memories.ltm.embedder import embedder

REFERENCE_FILE = Path(__file__).resolve().parents[1] / "data" / "recall_reference.txt"
SEMANTIC_MARGIN = 0.12  # close in meaning, whatever the words
# Close enough in meaning to confirm a memory that holds only one of the query's content terms
# (or its only one): a single shared word is weak evidence on its own.
CONFIRMING_MARGIN = 0.06
# ... and only when few memories hold that word: one a user's memory says again and again
# ("light", "name", "learn" in a long conversation) says little about any one of them. Chosen on
# the agent questions' tuning part (every partial hold there is shared by at most 3 statements)
# and the LoCoMo development split's unrelated queries (most of those it let through were
# shared by 4 or more turns).
MAX_SHARED_BY = 3


@cache
def _reference() -> np.ndarray:
    lines = REFERENCE_FILE.read_text(encoding="utf-8").splitlines()
    texts = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    return np.asarray(embedder().embed_passages(texts), dtype=np.float32)


def warm_up() -> None:
    """Embed the background statements now rather than in the first recall."""
    _reference()


def background(query: Sequence[float] | np.ndarray) -> float:
    """The query's mean cosine to the background statements."""
    return float((_reference() @ np.asarray(query, dtype=np.float32)).mean())


def cosines(query: Sequence[float] | np.ndarray, vectors: np.ndarray) -> list[float]:
    """Cosines of normalised vectors (one per row) to the normalised query."""
    if not len(vectors):
        return []
    return [float(c) for c in vectors @ np.asarray(query, dtype=np.float32)]
