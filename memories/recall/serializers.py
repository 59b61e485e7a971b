"""Output shapes of recall: the Layer 1 blocks, the chosen memories and the injection."""

from __future__ import annotations

from rest_framework import serializers

from memories.stm.items import Trust
from memoryproject.fields import JsonObjectField, OutputSerializer


class RecallItemOutputSerializer(OutputSerializer):
    """A memory recall chose, from any layer, with its score's terms and provenance."""

    memory_id = serializers.CharField()
    # A declared field, not `Field.source`: the serializer metaclass takes it off the class.
    source = serializers.CharField(help_text="redis, ltm or history")  # type: ignore[assignment]
    source_priority = serializers.IntegerField()
    memory_type = serializers.CharField()
    domain = serializers.CharField()
    text = serializers.CharField(help_text="as injected (the summary when `shortened`)")
    shortened = serializers.BooleanField()
    score = serializers.FloatField()
    score_parts = serializers.DictField(child=serializers.FloatField())
    weight = serializers.FloatField()
    relevance = serializers.FloatField()
    canonical_fact_key = serializers.CharField()
    provenance = JsonObjectField()
    source_kind = serializers.CharField(
        help_text="whose word: user, assistant, tool, proposal (an agent's), llm, reviewer "
        "(approved or promoted by one) or import"
    )
    trust = serializers.ChoiceField(
        choices=Trust.ALL,
        help_text="untrusted memories are evidence, injected as quoted, attributed data",
    )


class RecallOutputSerializer(OutputSerializer):
    """Everything an agent should know before its next turn, within the token budget."""

    recall_id = serializers.CharField()
    profile_block = JsonObjectField()
    constraints_block = JsonObjectField()
    runtime_metadata_block = JsonObjectField()
    items = RecallItemOutputSerializer(many=True)
    injection_text = serializers.CharField()
    token_estimate = serializers.IntegerField()
    budget_tokens = serializers.IntegerField()
    language = serializers.CharField()
    degraded = serializers.ListField(
        child=serializers.CharField(), help_text="layers or stores skipped (down or too slow)"
    )
    explain = JsonObjectField(required=False, help_text="only with `explain: true`")
