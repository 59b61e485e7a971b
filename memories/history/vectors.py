"""Milvus side of episodic history: one collection of entry vectors, separate from the cards.

Only this module imports `pymilvus` in the history package. Each row carries the entry's
filter fields and its (redacted) text, so a vector search answers whole hits on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeVar

from django.conf import settings
from pymilvus import DataType, MilvusClient, MilvusException
from pymilvus.client.types import LoadState

from memories.history.documents import HistoryDocument, HistoryMatch, HistoryScope
from memories.ltm.vectors import _in, _quoted, embedding_signature, milvus_client
from memoryproject.errors import StoreUnavailable

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Byte limits of the VARCHAR fields; longer values are cut at a character boundary.
TEXT_BYTES = 8192
CONTEXT_BYTES = 4096
ID_BYTES = 256
KEYWORDS = ("tenant_id", "user_id", "session_id", "event_id", "role")
OUTPUT_FIELDS = [
    "tenant_id",
    "user_id",
    "session_id",
    "session_pk",
    "seq",
    "event_id",
    "role",
    "occurred_at",
    "text",
    "context",
]


def _fit(value: str, limit: int) -> str:
    encoded = value.encode()
    if len(encoded) <= limit:
        return value
    return encoded[:limit].decode(errors="ignore")


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _unavailable(exc: Exception) -> StoreUnavailable:
    return StoreUnavailable(f"Milvus (history): {exc}")


def _not_loaded(exc: MilvusException) -> bool:
    message = str(getattr(exc, "message", "") or exc).lower()
    return getattr(exc, "code", None) == 101 or "not loaded" in message


class MilvusHistoryIndex:
    """Entry vectors with filter fields and text; the embedding model and size are recorded."""

    def __init__(self, client: MilvusClient, collection: str, *, dim: int, model: str) -> None:
        self._client = client
        self.collection = collection
        self.dim = dim
        self.model = model

    def _call(self, operation: Callable[[], T]) -> T:
        """Run one Milvus call; a released collection is loaded and the call tried once more."""
        try:
            try:
                return operation()
            except MilvusException as exc:
                if not _not_loaded(exc):
                    raise
                logger.warning("Milvus collection %s was not loaded; loading it", self.collection)
                self._client.load_collection(self.collection)
                return operation()
        except MilvusException as exc:
            raise _unavailable(exc) from exc

    def ensure(self) -> list[str]:
        """Create and load the collection; a different recorded model or size is an error."""
        try:
            done = []
            if not self._client.has_collection(self.collection):
                self._create()
                done.append(f"collection {self.collection} (dim {self.dim}, {self.model})")
            else:
                self._check_embedding()
            self._client.load_collection(self.collection)
            done.append(f"loaded {self.collection}")
            return done
        except MilvusException as exc:
            raise _unavailable(exc) from exc

    def _create(self) -> None:
        schema = self._client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dim)
        for name in KEYWORDS:
            schema.add_field(name, DataType.VARCHAR, max_length=ID_BYTES)
        schema.add_field("session_pk", DataType.INT64)
        schema.add_field("seq", DataType.INT64)
        schema.add_field("occurred_at", DataType.INT64)  # epoch milliseconds
        schema.add_field("text", DataType.VARCHAR, max_length=TEXT_BYTES)
        schema.add_field("context", DataType.VARCHAR, max_length=CONTEXT_BYTES)
        index_params = self._client.prepare_index_params()
        index_params.add_index(field_name="vector", index_type="FLAT", metric_type="COSINE")
        self._client.create_collection(
            self.collection,
            schema=schema,
            index_params=index_params,
            properties={"embedding.model": self.model, "embedding.dim": str(self.dim)},
        )

    def _check_embedding(self) -> None:
        props = self._client.describe_collection(self.collection).get("properties", {})
        recorded = (props.get("embedding.model"), props.get("embedding.dim"))
        if recorded != (self.model, str(self.dim)):
            raise StoreUnavailable(
                f"Milvus collection {self.collection} holds {recorded[0]} vectors of size "
                f"{recorded[1]}, but the embedder is {self.model} / {self.dim}; drop the "
                "collection and run `manage.py reindex_history`.",
                code="embedding_mismatch",
            )

    def ping(self) -> None:
        try:
            self._client.get_server_version()
        except MilvusException as exc:
            raise _unavailable(exc) from exc

    def ready(self) -> None:
        """The server answers and the collection is loaded (searchable)."""
        self.ping()
        try:
            state = self._client.get_load_state(self.collection).get("state")
        except MilvusException as exc:
            raise _unavailable(exc) from exc
        if state != LoadState.Loaded:
            raise StoreUnavailable(
                f"Milvus collection {self.collection} is not loaded ({state}); the next vector "
                "call loads it, or run `manage.py ensure_stores`."
            )

    def drop(self) -> None:
        try:
            if self._client.has_collection(self.collection):
                self._client.drop_collection(self.collection)
        except MilvusException as exc:
            raise _unavailable(exc) from exc

    # --- writes ------------------------------------------------------------------------------
    def upsert(self, *, documents: Sequence[HistoryDocument]) -> None:
        """Write entry vectors keyed by entry_id (replacing what a replay wrote before)."""
        if not documents:
            return
        rows = [
            {
                "id": doc.entry_id,
                "vector": list(doc.vector),
                **{name: _fit(str(getattr(doc, name)), ID_BYTES) for name in KEYWORDS},
                "session_pk": doc.session_pk,
                "seq": doc.seq,
                "occurred_at": epoch_ms(doc.occurred_at),
                "text": _fit(doc.text, TEXT_BYTES),
                "context": _fit(doc.context, CONTEXT_BYTES),
            }
            for doc in documents
        ]
        self._call(lambda: self._client.upsert(self.collection, rows))

    def remove_ids(self, *, ids: Sequence[str]) -> None:
        if ids:
            self._call(lambda: self._client.delete(self.collection, ids=list(ids)))

    def remove_user(self, *, tenant_id: str, user_id: str) -> int:
        """Delete every vector of one end user; returns how many were deleted."""
        expression = f"tenant_id == {_quoted(tenant_id)} and user_id == {_quoted(user_id)}"
        result = self._call(lambda: self._client.delete(self.collection, filter=expression))
        return int(result.get("delete_count", 0)) if isinstance(result, dict) else 0

    def flush(self) -> None:
        """Seal what was written (after a burst of writes)."""
        self._call(lambda: self._client.flush(self.collection))

    # --- reads ---------------------------------------------------------------------------------
    def nearest(
        self, *, vector: Sequence[float], scope: HistoryScope, limit: int
    ) -> list[HistoryMatch]:
        """The closest entries within the scope; the filter runs inside the search."""
        results = self._call(
            lambda: self._client.search(
                self.collection,
                data=[list(vector)],
                filter=filter_expression(scope),
                limit=limit,
                output_fields=OUTPUT_FIELDS,
                search_params={"metric_type": "COSINE"},
            )
        )
        matches = []
        for row in results[0]:
            entity = dict(row.get("entity") or {})
            entity["occurred_at"] = datetime.fromtimestamp(
                int(entity.get("occurred_at", 0)) / 1000, tz=UTC
            ).isoformat()
            entity["entry_id"] = str(row["id"])
            matches.append(HistoryMatch(str(row["id"]), float(row["distance"]), entity))
        return matches

    def ids_where(self, *, tenant_id: str, ids: Sequence[str] = (), user_id: str = "") -> list[str]:
        """Ids of the tenant's stored vectors among `ids`, or of one user."""
        parts = [f"tenant_id == {_quoted(tenant_id)}"]
        if ids:
            parts.append(_in("id", ids))
        if user_id:
            parts.append(f"user_id == {_quoted(user_id)}")
        rows = self._call(
            lambda: self._client.query(
                self.collection, filter=" and ".join(parts), output_fields=["id"], limit=16384
            )
        )
        return [str(row["id"]) for row in rows]

    def stored(self, *, tenant_id: str | None = None) -> Iterator[tuple[str, int]]:
        """(entry_id, session_pk) of every stored vector (of one tenant)."""
        expression = f"tenant_id == {_quoted(tenant_id)}" if tenant_id is not None else ""
        iterator: Any = self._call(
            lambda: self._client.query_iterator(
                self.collection, batch_size=1000, filter=expression, output_fields=["session_pk"]
            )
        )
        try:
            while batch := iterator.next():
                for row in batch:
                    yield str(row["id"]), int(row["session_pk"])
            iterator.close()
        except MilvusException as exc:
            raise _unavailable(exc) from exc


def filter_expression(scope: HistoryScope) -> str:
    """The Milvus boolean expression for a history scope (values quoted and escaped)."""
    parts = [
        f"tenant_id == {_quoted(scope.tenant_id)}",
        f"user_id == {_quoted(scope.user_id)}",
    ]
    if scope.since is not None:
        parts.append(f"occurred_at >= {epoch_ms(scope.since)}")
    if scope.until is not None:
        parts.append(f"occurred_at <= {epoch_ms(scope.until)}")
    if scope.exclude_session_id:
        parts.append(f"session_id != {_quoted(scope.exclude_session_id)}")
    return " and ".join(parts)


@cache
def history_vector_index() -> MilvusHistoryIndex:
    model, dim = embedding_signature()
    return MilvusHistoryIndex(
        milvus_client(), f"{settings.MILVUS_COLLECTION_PREFIX}_history", dim=dim, model=model
    )
