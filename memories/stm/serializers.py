"""Output shapes of short-term items, shared by the API views and the user export."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rest_framework import serializers

from memories.stm.items import StmItem, Trust
from memoryproject.fields import JsonObjectField, OutputSerializer
from transcripts.serializers import SessionEventOutputSerializer


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
        "source_kind": item.source_kind,
        "trust": item.trust,
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


class StmSourceOutputSerializer(OutputSerializer):
    """Where an item came from."""

    kind = serializers.CharField(
        required=False,
        help_text="the source kinds, `+`-joined for a merged item (`source_kind` is the strongest)",
    )
    message_ids = serializers.ListField(
        child=serializers.CharField(), help_text="the transcript events it came from"
    )
    tool_call_ids = serializers.ListField(child=serializers.CharField())


class StmItemOutputSerializer(OutputSerializer):
    """A short-term item (`item_document`)."""

    id = serializers.CharField()
    user_id = serializers.CharField()
    session_id = serializers.CharField()
    task_id = serializers.CharField()
    memory_type = serializers.CharField()
    subtype = serializers.CharField()
    summary = serializers.CharField()
    detail = JsonObjectField()
    entities = serializers.ListField(child=serializers.CharField())
    tags = serializers.ListField(child=serializers.CharField())
    # A declared field, not `Field.source`: the serializer metaclass takes it off the class.
    source = StmSourceOutputSerializer()  # type: ignore[assignment]
    source_kind = serializers.CharField(
        help_text="whose word it is: user, assistant, tool, proposal (an agent's), llm, "
        "reviewer or import; the strongest of a merged item's sources"
    )
    trust = serializers.ChoiceField(
        choices=Trust.ALL, help_text="only a trusted item is injected as a rule"
    )
    confidence = serializers.FloatField()
    importance = serializers.FloatField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    last_access_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    fingerprint = serializers.CharField()
    canonical_fact_key = serializers.CharField()
    fact_value = serializers.CharField()
    version = serializers.IntegerField()
    status = serializers.CharField()
    hit_count = serializers.IntegerField()
    sessions = serializers.ListField(child=serializers.CharField())
    supersedes = serializers.CharField()
    superseded_by = serializers.CharField()
    verified = serializers.BooleanField()
    remember = serializers.BooleanField()


class StmPageOutputSerializer(OutputSerializer):
    """A page of a user's live short-term items, newest first."""

    items = StmItemOutputSerializer(many=True)
    next_before = serializers.CharField(
        allow_null=True, help_text="pass as `before` for the next page; null on the last one"
    )


class StmItemDetailOutputSerializer(StmItemOutputSerializer):
    """A short-term item with the transcript events it came from."""

    provenance = SessionEventOutputSerializer(
        many=True, help_text="the transcript events it came from, redacted like the item"
    )
