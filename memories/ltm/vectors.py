"""Milvus side of long-term memory: one collection of card vectors keyed by memory_id.

Only this module imports `pymilvus`. Every process talks to one Milvus server by MILVUS_URI.
"""

from __future__ import annotations

from functools import cache
from typing import Protocol

from django.conf import settings
from pymilvus import DataType, MilvusClient, MilvusException

from memoryproject.errors import StoreUnavailable

FILTER_FIELDS = ("tenant_id", "user_id", "project_id", "memory_type", "status")


class VectorIndex(Protocol):
    def ensure(self) -> list[str]: ...
    def ping(self) -> None: ...
    def drop(self) -> None: ...


class MilvusVectorIndex:
    """Card vectors with their filter fields; the embedding model and size are recorded on it."""

    def __init__(self, client: MilvusClient, collection: str, *, dim: int, model: str) -> None:
        self._client = client
        self.collection = collection
        self.dim = dim
        self.model = model

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
        index_params = self._client.prepare_index_params()
        index_params.add_index(field_name="vector", index_type="FLAT", metric_type="COSINE")
        self._client.create_collection(
            self.collection,
            schema=schema,
            index_params=index_params,
            properties={"embedding.model": self.model, "embedding.dim": str(self.dim)},
        )

    def _check_embedding(self) -> None:
        described = self._client.describe_collection(self.collection)
        props = described.get("properties", {})
        recorded = (props.get("embedding.model"), props.get("embedding.dim"))
        if recorded != (self.model, str(self.dim)):
            raise StoreUnavailable(
                f"Milvus collection {self.collection} holds {recorded[0]} vectors of size "
                f"{recorded[1]}, but EMBEDDING_MODEL={self.model} / EMBEDDING_DIM={self.dim}; "
                "fix the settings, or drop the collection and rebuild the index.",
                code="embedding_mismatch",
            )

    def ping(self) -> None:
        try:
            self._client.get_server_version()
        except MilvusException as exc:
            raise StoreUnavailable(f"Milvus: {exc}") from exc

    def drop(self) -> None:
        try:
            if self._client.has_collection(self.collection):
                self._client.drop_collection(self.collection)
        except MilvusException as exc:
            raise StoreUnavailable(f"Milvus: {exc}") from exc


@cache
def vector_index() -> MilvusVectorIndex:
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
    return MilvusVectorIndex(
        client,
        f"{settings.MILVUS_COLLECTION_PREFIX}_cards",
        dim=settings.EMBEDDING_DIM,
        model=settings.EMBEDDING_MODEL,
    )
