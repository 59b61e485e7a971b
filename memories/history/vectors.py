"""Milvus side of episodic history: one collection of entry vectors, separate from the cards.

Built on `memoryproject.milvus.MilvusCollection`. Each row carries the entry's filter fields and
its (redacted) text, so a vector search answers whole hits on its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Protocol

from django.conf import settings
from pymilvus import DataType, MilvusClient

from memories.history.documents import STORED_FIELDS, HistoryDocument, HistoryMatch, HistoryScope
from memories.ltm.vectors import embedding_signature
from memoryproject.milvus import (
    MilvusCollection,
    MilvusOptions,
    ScalarField,
    is_in,
    milvus_client,
    quoted,
)

# Byte limits of the VARCHAR fields; longer values are cut at a character boundary.
TEXT_BYTES = 8192
CONTEXT_BYTES = 4096
ID_BYTES = 256
KEYWORDS = ("tenant_id", "user_id", "session_id", "event_id", "role")
OUTPUT_FIELDS = list(STORED_FIELDS[1:])  # the entry id is the primary key
SCALARS = (
    *(ScalarField(name, DataType.VARCHAR, max_length=ID_BYTES) for name in KEYWORDS),
    ScalarField("session_pk", DataType.INT64, filtered=False),
    ScalarField("seq", DataType.INT64, filtered=False),
    ScalarField("occurred_at", DataType.INT64),  # epoch milliseconds
    ScalarField("text", DataType.VARCHAR, max_length=TEXT_BYTES, filtered=False),
    ScalarField("context", DataType.VARCHAR, max_length=CONTEXT_BYTES, filtered=False),
)


def _fit(value: str, limit: int) -> str:
    encoded = value.encode()
    if len(encoded) <= limit:
        return value
    return encoded[:limit].decode(errors="ignore")


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class HistoryVectorIndex(Protocol):
    def ensure(self) -> list[str]: ...
    def ping(self) -> None: ...
    def ready(self) -> None: ...
    def drop(self) -> None: ...
    def flush(self) -> None: ...
    def upsert(self, *, documents: Sequence[HistoryDocument]) -> None: ...
    def remove_ids(self, *, ids: Sequence[str]) -> None: ...
    def remove_user(self, *, tenant_id: str, user_id: str) -> int: ...
    def nearest(
        self, *, vector: Sequence[float], scope: HistoryScope, limit: int
    ) -> list[HistoryMatch]: ...
    def ids_where(
        self, *, tenant_id: str, ids: Sequence[str] | None = None, user_id: str = ""
    ) -> list[str]: ...
    def session_ids(self, *, tenant_id: str, session_pk: int) -> list[str]: ...
    def stored(self, *, tenant_id: str | None = None) -> Iterator[tuple[str, int]]: ...


class MilvusHistoryIndex(MilvusCollection):
    """Entry vectors with filter fields and text; the embedding model and size are recorded."""

    label = "Milvus (history)"
    reindex_command = "reindex_history"

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
    def upsert(self, *, documents: Sequence[HistoryDocument]) -> None:
        """Write entry vectors keyed by entry_id (replacing what a replay wrote before)."""
        self.upsert_rows(
            [
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
        )

    def remove_ids(self, *, ids: Sequence[str]) -> None:
        self.delete_ids(ids)

    def remove_user(self, *, tenant_id: str, user_id: str) -> int:
        """Delete every vector of one end user; returns how many were deleted."""
        return self.delete_where(
            f"tenant_id == {quoted(tenant_id)} and user_id == {quoted(user_id)}"
        )

    # --- reads ---------------------------------------------------------------------------------
    def nearest(
        self, *, vector: Sequence[float], scope: HistoryScope, limit: int
    ) -> list[HistoryMatch]:
        """The closest entries within the scope; the filter runs inside the search."""
        if scope.empty:
            return []
        matches = []
        for match in self.search(
            vector=vector,
            expression=filter_expression(scope),
            limit=limit,
            output_fields=OUTPUT_FIELDS,
        ):
            entity = dict(match.fields)
            entity["occurred_at"] = datetime.fromtimestamp(
                int(entity.get("occurred_at", 0)) / 1000, tz=UTC
            ).isoformat()
            entity["entry_id"] = match.id
            matches.append(HistoryMatch(match.id, match.score, entity))
        return matches

    def ids_where(
        self, *, tenant_id: str, ids: Sequence[str] | None = None, user_id: str = ""
    ) -> list[str]:
        """Ids of the tenant's stored vectors among `ids`, or of one user.

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

    def session_ids(self, *, tenant_id: str, session_pk: int) -> list[str]:
        """Ids of every stored vector of one session."""
        expression = f"tenant_id == {quoted(tenant_id)} and session_pk == {int(session_pk)}"
        return [str(row["id"]) for row in self.rows(expression=expression, output_fields=[])]

    def stored(self, *, tenant_id: str | None = None) -> Iterator[tuple[str, int]]:
        """(entry_id, session_pk) of every stored vector (of one tenant)."""
        expression = f"tenant_id == {quoted(tenant_id)}" if tenant_id is not None else ""
        for row in self.rows(expression=expression, output_fields=["session_pk"]):
            yield str(row["id"]), int(row["session_pk"])


def filter_expression(scope: HistoryScope) -> str:
    """The Milvus boolean expression for a history scope (values quoted and escaped)."""
    parts = [
        f"tenant_id == {quoted(scope.tenant_id)}",
        f"user_id == {quoted(scope.user_id)}",
    ]
    if scope.since is not None:
        parts.append(f"occurred_at >= {epoch_ms(scope.since)}")
    if scope.until is not None:
        parts.append(f"occurred_at <= {epoch_ms(scope.until)}")
    if scope.exclude_session_id:
        parts.append(f"session_id != {quoted(scope.exclude_session_id)}")
    if scope.only_sessions:
        listed = ", ".join(quoted(session) for session in scope.only_sessions)
        parts.append(f"session_id in [{listed}]")
    return " and ".join(parts)


@cache
def history_vector_index() -> MilvusHistoryIndex:
    model, dim = embedding_signature()
    return MilvusHistoryIndex(
        milvus_client(),
        f"{settings.MILVUS_COLLECTION_PREFIX}_history",
        dim=dim,
        model=model,
        options=MilvusOptions.from_settings(),
    )
