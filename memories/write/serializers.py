"""Output shapes of the write path: what became of each proposal."""

from __future__ import annotations

from rest_framework import serializers

from memories.stm.items import Trust
from memories.stm.serializers import StmItemOutputSerializer
from memoryproject.fields import OutputSerializer


class QuarantineOutputSerializer(OutputSerializer):
    """A write held for review because it reads as an instruction to the model."""

    id = serializers.CharField(
        help_text="the quarantine id a reviewer finds it by ('' in a dry run)"
    )
    reason = serializers.CharField(
        help_text="instruction_override, prompt_disclosure, role_change or fake_marker"
    )
    field = serializers.CharField(help_text="where in the write it was found")


class WriteProfileOutputSerializer(OutputSerializer):
    """What the write policy read in the proposal (`WriteProfile`)."""

    is_verified = serializers.BooleanField()
    is_stable_for_current_task = serializers.BooleanField()
    is_user_constraint = serializers.BooleanField()
    is_decision = serializers.BooleanField()
    is_preference = serializers.BooleanField()
    novelty = serializers.FloatField(help_text="1 − the highest word overlap with what is held")
    confidence = serializers.FloatField()
    estimated_ttl_minutes = serializers.IntegerField()
    duplicate = serializers.BooleanField()
    transient = serializers.BooleanField()
    raw_unstructured_blob = serializers.BooleanField()


class ProposalResultOutputSerializer(OutputSerializer):
    """One proposal's decision and the item it landed in (none when refused or a dry run)."""

    index = serializers.IntegerField(help_text="the proposal's position in the request")
    outcome = serializers.CharField(
        help_text="inserted, merged, superseded, unchanged, refused, held_for_verification; "
        "in a dry run would_write or would_hold"
    )
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
    held_for_verification = serializers.BooleanField(
        help_text="an untrusted constraint, preference or profile fact: stored for a reviewer, "
        "never injected as a rule until approved"
    )
    hold_reason = serializers.CharField(
        help_text="untrusted_constraint, untrusted_preference or untrusted_profile_fact; "
        "'' when not held"
    )
    verification_id = serializers.CharField(
        allow_null=True, help_text="the verification request holding it (none in a dry run)"
    )
    quarantine = QuarantineOutputSerializer(
        allow_null=True, help_text="set when the proposal was held for review (outcome quarantined)"
    )
    accepted = serializers.BooleanField(help_text="the write policy's verdict")
    score = serializers.FloatField()
    threshold_breakdown = serializers.DictField(child=serializers.FloatField())
    write_profile = WriteProfileOutputSerializer()
    ttl_minutes = serializers.IntegerField()
    refusal = serializers.CharField(help_text="machine-readable reason when refused, else ''")
    policy_version = serializers.IntegerField()
    repeat = serializers.BooleanField()


class ProposalsOutputSerializer(OutputSerializer):
    dry_run = serializers.BooleanField()
    results = ProposalResultOutputSerializer(many=True)


class ItemUpdateOutputSerializer(OutputSerializer):
    """What became of an edit of a short-term item, and the item as it is now."""

    outcome = serializers.ChoiceField(
        choices=["updated", "unchanged", "quarantined", "held_for_verification"],
        help_text="updated (a new version), unchanged (nothing to write), quarantined (held "
        "for review: it reads as an instruction to the model), held_for_verification (an "
        "untrusted writer's new words for a rule wait for a reviewer); only `updated` changed "
        "the item",
    )
    item = StmItemOutputSerializer(help_text="the item after the edit (as it was unless updated)")
    redacted = serializers.ListField(
        child=serializers.CharField(), help_text="kinds of sensitive data replaced"
    )
    quarantine = QuarantineOutputSerializer(allow_null=True)
    hold_reason = serializers.CharField(help_text="why it waits for verification; '' if not")
    verification_id = serializers.CharField(allow_null=True)
