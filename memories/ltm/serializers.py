"""Output shapes of long-term cards, shared by the API views and the user export."""

from __future__ import annotations

from typing import Any

from memories.models import LtmCard


def card_view(card: LtmCard) -> dict[str, Any]:
    return {
        "memory_id": card.memory_id,
        "external_id": card.external_id or None,
        "user_id": card.end_user.external_id if card.end_user else None,
        "project": card.project.key if card.project else None,
        "memory_type": card.memory_type,
        "title": card.title,
        "summary": card.summary,
        "content": card.content,
        "entities": card.entities,
        "tags": card.tags,
        "source_type": card.source_type,
        "source_refs": card.source_refs,
        "importance": card.importance,
        "confidence": card.confidence,
        "access_count": card.access_count,
        "status": card.status,
        "version": card.version,
        "created_at": card.created_at,
        "updated_at": card.updated_at,
    }
