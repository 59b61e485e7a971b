"""Output shapes of short-term items, shared by the API views and the user export."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memories.stm.items import StmItem


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat()


def item_document(item: StmItem) -> dict[str, Any]:
    """An item as the API shows it (timestamps in ISO 8601)."""
    return {
        "id": item.id,
        "user_id": item.user_id,
        "session_id": item.session_id,
        "task_id": item.task_id,
        "memory_type": item.memory_type,
        "subtype": item.subtype,
        "summary": item.summary,
        "detail": item.detail,
        "entities": item.entities,
        "tags": item.tags,
        "source": item.source,
        "confidence": item.confidence,
        "importance": item.importance,
        "created_at": _iso(item.created_at),
        "updated_at": _iso(item.updated_at),
        "last_access_at": _iso(item.last_access_at),
        "expires_at": _iso(item.expires_at),
        "fingerprint": item.fingerprint,
        "canonical_fact_key": item.canonical_fact_key,
        "fact_value": item.fact_value,
        "version": item.version,
        "status": item.status,
        "hit_count": item.hit_count,
        "sessions": item.sessions,
        "supersedes": item.supersedes,
        "superseded_by": item.superseded_by,
        "verified": item.verified,
        "remember": item.remember,
    }
