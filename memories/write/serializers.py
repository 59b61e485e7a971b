"""Output shapes of the write path: what became of each proposal."""

from __future__ import annotations

from rest_framework import serializers

from memories.stm.items import Trust
from memoryproject.fields import JsonObjectField, OutputSerializer


class ProposalResultOutputSerializer(OutputSerializer):
    """One proposal's decision and the item it landed in (none when refused or a dry run)."""

    index = serializers.IntegerField(help_text="the proposal's position in the request")
    outcome = serializers.CharField()
    item_id = serializers.CharField(allow_null=True)
    version = serializers.IntegerField(allow_null=True)
    superseded_id = serializers.CharField(allow_null=True)
    redacted = serializers.ListField(
        child=serializers.CharField(), help_text="kinds of sensitive data replaced"
    )
    source_kind = serializers.CharField(
        help_text="proposal (an agent's), or user, assistant, tool, llm, reviewer, import"
    )
    trust = serializers.ChoiceField(
        choices=Trust.ALL,
        help_text="trusted: the user's word (a user event, a reviewer, a trusted-writer key)",
    )
    accepted = serializers.BooleanField()
    score = serializers.FloatField()
    threshold_breakdown = serializers.DictField(child=serializers.FloatField())
    write_profile = JsonObjectField()
    ttl_minutes = serializers.IntegerField()
    refusal = serializers.CharField(help_text="machine-readable reason when refused, else ''")
    policy_version = serializers.IntegerField()
    repeat = serializers.BooleanField()


class ProposalsOutputSerializer(OutputSerializer):
    dry_run = serializers.BooleanField()
    results = ProposalResultOutputSerializer(many=True)
