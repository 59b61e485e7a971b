"""Output shapes of long-term cards, shared by the API views and the user export."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memories.ltm.models import LtmCard
from memoryproject.fields import OutputSerializer


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
        "occurred_at": card.occurred_at,
    }


class CardOutputSerializer(OutputSerializer):
    """A long-term card (`card_view`)."""

    memory_id = serializers.CharField()
    external_id = serializers.CharField(allow_null=True, help_text="the id an import gave it")
    user_id = serializers.CharField(allow_null=True)
    project = serializers.CharField(allow_null=True)
    memory_type = serializers.CharField()
    title = serializers.CharField()
    summary = serializers.CharField()
    content = serializers.CharField()
    entities = serializers.ListField(child=serializers.CharField())
    tags = serializers.ListField(child=serializers.CharField())
    source_type = serializers.CharField()
    source_refs = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="ids of what the card came from, by kind",
    )
    importance = serializers.FloatField()
    confidence = serializers.FloatField()
    access_count = serializers.IntegerField()
    status = serializers.CharField()
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    occurred_at = serializers.DateTimeField(allow_null=True)


class CardHeldOutputSerializer(OutputSerializer):
    """A card held for review because it reads as an instruction to the model."""

    id = serializers.CharField(help_text="the quarantine id a reviewer finds it by")
    reason = serializers.CharField(
        help_text="instruction_override, prompt_disclosure, role_change or fake_marker"
    )
    field = serializers.CharField(help_text="where in the card it was found")


class CardImportedOutputSerializer(OutputSerializer):
    memory_id = serializers.CharField(allow_null=True, help_text="none when quarantined")
    version = serializers.IntegerField(allow_null=True)
    outcome = serializers.CharField(help_text="created, updated, unchanged or quarantined")
    quarantine = CardHeldOutputSerializer(allow_null=True)


class CardImportOutputSerializer(OutputSerializer):
    cards = CardImportedOutputSerializer(many=True)


class LtmSearchHitOutputSerializer(OutputSerializer):
    memory_id = serializers.CharField()
    score = serializers.FloatField()
    lexical_rank = serializers.IntegerField(allow_null=True)
    lexical_score = serializers.FloatField(allow_null=True)
    vector_rank = serializers.IntegerField(allow_null=True)
    vector_score = serializers.FloatField(allow_null=True)
    title = serializers.CharField()
    summary = serializers.CharField()
    memory_type = serializers.CharField()
    user_id = serializers.CharField(allow_null=True)


class LtmSearchOutputSerializer(OutputSerializer):
    mode = serializers.CharField()
    degraded = serializers.BooleanField(help_text="a branch failed or was too slow")
    failed_branches = serializers.ListField(child=serializers.CharField())
    hits = LtmSearchHitOutputSerializer(many=True)


class CardPageOutputSerializer(OutputSerializer):
    """A page of cards, newest first."""

    cards = CardOutputSerializer(many=True)
    next_cursor = serializers.CharField(
        allow_null=True, help_text="pass as `cursor` for the next page; null on the last one"
    )


class CardUpdateOutputSerializer(OutputSerializer):
    """What became of an edit of a card, and the card as it is now."""

    outcome = serializers.ChoiceField(
        choices=["updated", "unchanged", "quarantined"],
        help_text="updated (a new version, reindexed shortly), unchanged, or quarantined (held "
        "for review: it reads as an instruction to the model; nothing changed)",
    )
    card = CardOutputSerializer()
    redacted = serializers.ListField(
        child=serializers.CharField(), help_text="the fields whose sensitive data was replaced"
    )
    quarantine = CardHeldOutputSerializer(allow_null=True)
