"""One Milvus collection as the service uses it: shared by the card and the history indexes.

Only this module and the two adapters built on it (`memories/ltm/vectors.py`,
`memories/history/vectors.py`) import `pymilvus`. It speaks the part of the API that both the
local server (milvus-lite 2.5, Milvus's own engine) and Milvus 2.5+ implement: readiness through
`list_collections` / `get_load_state`, the embedding model and size in the schema description,
scalar INVERTED indexes, writes in bounded batches. Every call waits at most MILVUS_TIMEOUT_MS
(the client's own default is no deadline, and 75 retries of a refused call). What production
tunes (index type and params, partition key, consistency) comes from settings; docs/layer3.md
gives the measurements.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from django.conf import settings
from pymilvus import DataType, MilvusClient, MilvusException
from pymilvus.client.types import LoadState

from memoryproject.errors import ErrorCode, StoreUnavailable
from memoryproject.store_timing import timed

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Milvus' "collection not loaded" (a restarted server leaves its collections released).
NOT_LOADED_CODE = 101
# Reads that must see the service's own writes (verification, drift, erasure).
STRONG = "Strong"
# What a call may raise: pymilvus' own errors, and gRPC's when a call's deadline passed.
MILVUS_ERRORS = (MilvusException, grpc.RpcError)


@dataclass(frozen=True)
class MilvusOptions:
    """How collections are built and searched (settings MILVUS_*)."""

    index_type: str = "FLAT"
    index_params: dict[str, Any] = field(default_factory=dict)
    search_params: dict[str, Any] = field(default_factory=dict)
    partition_key: bool = False
    consistency_level: str = "Bounded"
    write_batch: int = 1000

    @classmethod
    def from_settings(cls) -> MilvusOptions:
        return cls(
            index_type=settings.MILVUS_INDEX_TYPE,
            index_params=dict(settings.MILVUS_INDEX_PARAMS),
            search_params=dict(settings.MILVUS_SEARCH_PARAMS),
            partition_key=settings.MILVUS_PARTITION_KEY,
            consistency_level=settings.MILVUS_CONSISTENCY_LEVEL,
            write_batch=settings.MILVUS_WRITE_BATCH,
        )


@dataclass(frozen=True)
class ScalarField:
    name: str
    kind: DataType
    max_length: int = 0  # VARCHAR only
    filtered: bool = True  # gets an INVERTED index


@dataclass(frozen=True)
class Match:
    """One search answer: id, similarity (higher is closer) and the fields asked for."""

    id: str
    score: float
    fields: dict[str, Any]


def quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def is_in(name: str, values: Sequence[str]) -> str:
    return f"{name} in [{', '.join(quoted(v) for v in values)}]"


def milvus_client() -> MilvusClient:
    """A client of the configured server; it connects as it is built."""
    try:
        return MilvusClient(
            uri=settings.MILVUS_URI,
            token=settings.MILVUS_TOKEN,
            timeout=settings.MILVUS_TIMEOUT_SECONDS,  # the connect only; each call passes its own
            # Idle keepalive pings every 10s (the client default) make servers answer
            # GOAWAY "too_many_pings"; ping only while calls are in flight.
            grpc_options={
                "grpc.keepalive_time_ms": 60000,
                "grpc.keepalive_permit_without_calls": 0,
            },
        )
    except MILVUS_ERRORS as exc:  # the client connects as it is built; nothing is cached then
        raise StoreUnavailable(f"Milvus: {_described(exc)}") from exc


class MilvusCollection:
    """A collection of `id` + `vector` + scalar fields, with the embedding recorded on it."""

    label = "Milvus"
    reindex_command = "ensure_stores"

    def __init__(
        self,
        client: MilvusClient,
        collection: str,
        *,
        dim: int,
        model: str,
        scalars: Sequence[ScalarField],
        options: MilvusOptions | None = None,
    ) -> None:
        self._client = client
        self.collection = collection
        self.dim = dim
        self.model = model
        self.scalars = tuple(scalars)
        self.options = options or MilvusOptions()

    # --- lifecycle -----------------------------------------------------------------------------
    def ensure(self) -> list[str]:
        """Create and load the collection; other fields or another embedding is an error."""
        try:
            done = []
            if not self._client.has_collection(self.collection, timeout=_bound()):
                self._create()
                done.append(f"collection {self.collection} (dim {self.dim}, {self.model})")
            else:
                self._check()
            # No bound: loading a large collection after a restart may rightly take minutes.
            self._client.load_collection(self.collection)
            done.append(f"loaded {self.collection}")
            return done
        except MILVUS_ERRORS as exc:
            raise self._unavailable(exc) from exc

    def _create(self) -> None:
        schema = self._client.create_schema(
            auto_id=False,
            enable_dynamic_field=False,
            description=json.dumps({"embedding_model": self.model, "embedding_dim": self.dim}),
        )
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dim)
        for scalar in self.scalars:
            extra: dict[str, Any] = {}
            if scalar.kind == DataType.VARCHAR:
                extra["max_length"] = scalar.max_length
            if self.options.partition_key and scalar.name == "tenant_id":
                extra["is_partition_key"] = True
            schema.add_field(scalar.name, scalar.kind, **extra)
        index_params = self._client.prepare_index_params()
        index_params.add_index(
            field_name="vector",
            index_type=self.options.index_type,
            metric_type="COSINE",
            params=self.options.index_params,
        )
        for scalar in self.scalars:
            if scalar.filtered:
                index_params.add_index(field_name=scalar.name, index_type="INVERTED")
        self._client.create_collection(
            self.collection,
            schema=schema,
            index_params=index_params,
            consistency_level=self.options.consistency_level,
            timeout=_bound(),
        )

    def _check(self) -> None:
        described = self._client.describe_collection(self.collection, timeout=_bound())
        names = {f["name"] for f in described.get("fields", [])}
        expected = {"id", "vector", *(s.name for s in self.scalars)}
        if names != expected:
            raise StoreUnavailable(
                f"Milvus collection {self.collection} has fields {sorted(names)}, expected "
                f"{sorted(expected)}; drop it and run `manage.py {self.reindex_command}`.",
                code=ErrorCode.SCHEMA_MISMATCH,
            )
        recorded = recorded_embedding(described)
        if recorded != (self.model, self.dim):
            raise StoreUnavailable(
                f"Milvus collection {self.collection} holds {recorded[0]} vectors of size "
                f"{recorded[1]}, but the embedder is {self.model} / {self.dim}; fix the "
                f"settings, or drop the collection and run `manage.py {self.reindex_command}`.",
                code=ErrorCode.EMBEDDING_MISMATCH,
            )

    def ping(self) -> None:
        try:
            self._client.list_collections(timeout=_bound())
        except MILVUS_ERRORS as exc:
            raise self._unavailable(exc) from exc

    def ready(self) -> None:
        """The server answers and the collection is loaded (searchable)."""
        try:
            state = self._client.get_load_state(self.collection, timeout=_bound()).get("state")
        except MILVUS_ERRORS as exc:
            raise self._unavailable(exc) from exc
        if state != LoadState.Loaded:
            raise StoreUnavailable(
                f"Milvus collection {self.collection} is not loaded ({state}); the next vector "
                "call loads it, or run `manage.py ensure_stores`."
            )

    def drop(self) -> None:
        try:
            if self._client.has_collection(self.collection, timeout=_bound()):
                self._client.drop_collection(self.collection, timeout=_bound())
        except MILVUS_ERRORS as exc:
            raise self._unavailable(exc) from exc

    def flush(self) -> None:
        """Seal what was written (after a burst of writes)."""
        self._call(lambda: self._client.flush(self.collection, timeout=_bound()))

    # --- calls ---------------------------------------------------------------------------------
    def _unavailable(self, exc: Exception) -> StoreUnavailable:
        return StoreUnavailable(f"{self.label}: {_described(exc)}")

    def _call(self, operation: Callable[[], T]) -> T:
        """Run one Milvus call; a released collection is loaded and the call tried once more."""
        try:
            with timed("milvus"):
                try:
                    return operation()
                except MilvusException as exc:
                    if not _not_loaded(exc):
                        raise
                    logger.warning(
                        "Milvus collection %s was not loaded; loading it", self.collection
                    )
                    self._client.load_collection(self.collection, timeout=_bound())
                    return operation()
        except MILVUS_ERRORS as exc:
            raise self._unavailable(exc) from exc

    def upsert_rows(self, rows: Sequence[dict[str, Any]]) -> None:
        """Upsert in batches of MILVUS_WRITE_BATCH (large single calls are pathologically slow)."""
        size = max(1, self.options.write_batch)
        for start in range(0, len(rows), size):
            self._upsert_batch(list(rows[start : start + size]))

    def _upsert_batch(self, batch: list[dict[str, Any]]) -> None:
        self._call(lambda: self._client.upsert(self.collection, batch, timeout=_bound()))

    def delete_ids(self, ids: Sequence[str]) -> None:
        if ids:
            self._call(
                lambda: self._client.delete(self.collection, ids=list(ids), timeout=_bound())
            )

    def delete_where(self, expression: str) -> int:
        """Delete every row matching `expression`; returns how many were deleted."""
        result: Any = self._call(
            lambda: self._client.delete(self.collection, filter=expression, timeout=_bound())
        )
        # Milvus answers a count; milvus-lite 2.5 the deleted primary keys.
        if isinstance(result, list):
            return len(result)
        return int(result.get("delete_count", 0)) if isinstance(result, dict) else 0

    def ids_matching(self, expression: str, *, limit: int = 16384) -> list[str]:
        """Ids of rows matching `expression`, read with strong consistency."""
        rows = self._call(
            lambda: self._client.query(
                self.collection,
                filter=expression,
                output_fields=["id"],
                limit=limit,
                consistency_level=STRONG,
                timeout=_bound(),
            )
        )
        return [str(row["id"]) for row in rows]

    def vectors_of(self, *, ids: Sequence[str]) -> dict[str, list[float]]:
        """Stored vectors by id (missing ids are left out)."""
        if not ids:
            return {}
        rows = self._call(
            lambda: self._client.get(
                self.collection,
                ids=list(ids),
                output_fields=["vector"],
                consistency_level=STRONG,
                timeout=_bound(),
            )
        )
        return {str(row["id"]): [float(v) for v in row["vector"]] for row in rows}

    def search(
        self,
        *,
        vector: Sequence[float],
        expression: str,
        limit: int,
        output_fields: Sequence[str] = (),
    ) -> list[Match]:
        """The closest rows matching `expression`; the filter runs inside the search."""
        results = self._call(
            lambda: self._client.search(
                self.collection,
                data=[list(vector)],
                filter=expression,
                limit=limit,
                output_fields=list(output_fields),
                search_params={"metric_type": "COSINE", "params": self.options.search_params},
                consistency_level=self.options.consistency_level,
                timeout=_bound(),
            )
        )
        return [
            Match(str(row["id"]), float(row["distance"]), dict(row.get("entity") or {}))
            for row in results[0]
        ]

    def rows(self, *, expression: str, output_fields: Sequence[str]) -> Iterator[dict[str, Any]]:
        """Every row matching `expression` (paged, strong consistency)."""
        iterator: Any = self._call(
            lambda: self._client.query_iterator(
                self.collection,
                batch_size=1000,
                filter=expression,
                output_fields=list(output_fields),
                consistency_level=STRONG,
                timeout=_bound(),
            )
        )
        try:
            while batch := iterator.next():
                yield from batch
            iterator.close()
        except MILVUS_ERRORS as exc:
            raise self._unavailable(exc) from exc


def _described(exc: Exception) -> str:
    """An error in one line: gRPC's own text spans several."""
    code, details = getattr(exc, "code", None), getattr(exc, "details", None)
    if isinstance(exc, grpc.RpcError) and callable(code) and callable(details):
        return f"{code().name}: {details()}"
    return str(exc)


def _bound() -> float:
    """How long one Milvus call may wait (MILVUS_TIMEOUT_MS), retries included."""
    return float(settings.MILVUS_TIMEOUT_SECONDS)


def recorded_embedding(described: dict[str, Any]) -> tuple[str | None, int | None]:
    """(model, dim) recorded on a described collection: the schema description, or the
    collection properties that collections made before the description carried it."""
    try:
        recorded = json.loads(described.get("description") or "")
        return str(recorded["embedding_model"]), int(recorded["embedding_dim"])
    except (ValueError, TypeError, KeyError):
        pass
    props = described.get("properties") or {}
    dim = props.get("embedding.dim")
    return props.get("embedding.model"), int(str(dim)) if str(dim).isdigit() else None


def _not_loaded(exc: MilvusException) -> bool:
    message = str(getattr(exc, "message", "") or exc).lower()
    return getattr(exc, "code", None) == NOT_LOADED_CODE or any(
        words in message for words in ("not loaded", "call load()")
    )
