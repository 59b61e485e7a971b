"""What a long-term search may see, and what it finds; shared by both index adapters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Scope:
    """Filters applied inside both engines' searches (never after them)."""

    tenant_id: str
    # None: any user; otherwise these users' cards and the shared ones (user_id "").
    user_ids: tuple[str, ...] | None = None
    project_id: str | None = None
    memory_types: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ("active",)


@dataclass(frozen=True)
class Hit:
    """One index's answer: `score` always means higher is closer."""

    memory_id: str
    score: float


@dataclass(frozen=True)
class CardDocument:
    """A card as both indexes store it (the vector goes to Milvus only)."""

    memory_id: str
    version: int
    fields: dict[str, Any]
    vector: list[float] = field(default_factory=list)
