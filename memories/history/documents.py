"""What a history entry is, and what a history search may see; shared by both store adapters."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# The fields every index stores with an entry and answers a search with.
STORED_FIELDS = (
    "entry_id",
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
)


@dataclass(frozen=True)
class HistoryDocument:
    """One indexed transcript event, as both indexes store it (the vector goes to Milvus)."""

    entry_id: str
    tenant_id: str
    user_id: str
    session_id: str
    session_pk: int
    seq: int
    event_id: str
    role: str
    occurred_at: datetime
    text: str
    context: str
    bm25_text: str = ""
    bm25_context: str = ""
    vector: list[float] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        """The stored fields shared by both indexes (without the vector and BM25 terms)."""
        return {
            "entry_id": self.entry_id,
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "session_id": self.session_id,
            "session_pk": self.session_pk,
            "seq": self.seq,
            "event_id": self.event_id,
            "role": self.role,
            "occurred_at": self.occurred_at,
            "text": self.text,
            "context": self.context,
        }


@dataclass(frozen=True)
class HistoryScope:
    """Filters applied inside both engines' searches (never after them): always one tenant
    and one of its end users, optionally a time range of the events, a session left out, and
    the only sessions searched (`only_sessions`: None searches all, an empty tuple none)."""

    tenant_id: str
    user_id: str
    since: datetime | None = None
    until: datetime | None = None
    exclude_session_id: str = ""
    only_sessions: tuple[str, ...] | None = None

    @property
    def empty(self) -> bool:
        """Whether the scope can hold no entry at all."""
        return self.only_sessions is not None and not self.only_sessions


@dataclass(frozen=True)
class HistoryMatch:
    """One index's answer with the entry's stored fields; `score` is higher when closer."""

    entry_id: str
    score: float
    fields: dict[str, Any]


def entry_id_for(*, session_pk: int, seq: int) -> str:
    """The id of the history entry of one transcript event: stable, so rebuilds overwrite."""
    return f"hist_{session_pk}_{seq}"
