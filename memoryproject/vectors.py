"""Small helpers for embedding vectors held in process."""

from __future__ import annotations

import numpy as np


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """The rows of `vectors` (float32) scaled to length 1; a zero row stays zero."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)
