"""Output shapes of the write path: what became of each proposal."""

from __future__ import annotations

from rest_framework import serializers

from memoryproject.fields import JsonObjectField, OutputSerializer


class QuarantineOutputSerializer(OutputSerializer):
    """A write held for review because it reads as an instruction to the model."""

    id = serializers.CharField(
        help_text="the quarantine id a reviewer finds it by ('' in a dry run)"
    )
    reason = serializers.CharField(
        help_text="instruction_override, prompt_disclosure, role_change or fake_marker"
    )
    field = serializers.CharField(help_text="where in the write it was found")


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
    quarantine = QuarantineOutputSerializer(
        allow_null=True, help_text="set when the proposal was held for review (outcome quarantined)"
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
