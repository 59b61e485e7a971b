"""Output shapes of the review workflows: deletion requests, promotions, a user's export.

The export declares its short-term items and cards with the same serializers as their own
endpoints, so one shape has one declaration.
"""

from __future__ import annotations

from rest_framework import serializers

from memories.ltm.serializers import CardOutputSerializer
from memories.stm.serializers import StmItemOutputSerializer
from memoryproject.fields import JsonObjectField, OutputSerializer


class DeletionOutputSerializer(OutputSerializer):
    """A deletion request: its status and, once erased and verified, its receipt."""

    request_id = serializers.CharField()
    kind = serializers.CharField()
    target = serializers.CharField()
    status = serializers.CharField()
    reason = serializers.CharField()
    decision_reason = serializers.CharField()
    decided_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    attempts = serializers.IntegerField()
    last_error = serializers.CharField()
    receipt = JsonObjectField(allow_null=True)
    receipt_sha256 = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()


class PromotionOutputSerializer(OutputSerializer):
    request_id = serializers.CharField()
    path = serializers.CharField()
    origin = serializers.CharField()
    user_id = serializers.CharField(allow_null=True)
    memory_type = serializers.CharField()
    proposal = JsonObjectField()
    confidence = serializers.FloatField()
    triggers = JsonObjectField()
    status = serializers.CharField()
    decision_reason = serializers.CharField()
    result_ref = serializers.CharField(allow_null=True, help_text="what approval produced")
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)


class PromotionListOutputSerializer(OutputSerializer):
    promotions = PromotionOutputSerializer(many=True)


class ExportVersionOutputSerializer(OutputSerializer):
    key = serializers.CharField()
    value = serializers.JSONField()
    version = serializers.IntegerField()
    is_current = serializers.BooleanField()
    # A declared field, not `Field.source`: the serializer metaclass takes it off the class.
    source = serializers.CharField()  # type: ignore[assignment]
    source_ids = serializers.JSONField()
    created_at = serializers.DateTimeField()


class ExportLayer1OutputSerializer(OutputSerializer):
    user_id = serializers.CharField()
    profile = JsonObjectField()
    preferences = serializers.ListField(child=JsonObjectField())
    roles = serializers.ListField(child=JsonObjectField())
    facts = serializers.ListField(child=JsonObjectField())
    preference_history = ExportVersionOutputSerializer(many=True)
    fact_history = ExportVersionOutputSerializer(many=True)


class ExportTranscriptOutputSerializer(OutputSerializer):
    session_id = serializers.CharField()
    task_id = serializers.CharField()
    event_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    events = serializers.ListField(child=JsonObjectField())


class ExportHistoryOutputSerializer(OutputSerializer):
    count = serializers.IntegerField()
    entries = serializers.ListField(child=JsonObjectField())


class ExportPromotionOutputSerializer(OutputSerializer):
    request_id = serializers.CharField()
    path = serializers.CharField()
    status = serializers.CharField()
    proposal = JsonObjectField()
    created_at = serializers.DateTimeField()


class ExportAuditEventOutputSerializer(OutputSerializer):
    seq = serializers.IntegerField()
    action = serializers.CharField()
    actor = serializers.CharField()
    object_type = serializers.CharField()
    object_id = serializers.CharField()
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    sha256 = serializers.CharField()


class UserExportOutputSerializer(OutputSerializer):
    """Everything held about one end user, in every layer (`user_export`)."""

    format = serializers.IntegerField()
    user_id = serializers.CharField()
    created_at = serializers.DateTimeField()
    layer1 = ExportLayer1OutputSerializer()
    short_term = StmItemOutputSerializer(many=True)
    long_term = CardOutputSerializer(many=True)
    transcripts = ExportTranscriptOutputSerializer(many=True)
    history = ExportHistoryOutputSerializer()
    promotions = ExportPromotionOutputSerializer(many=True)
    audit = ExportAuditEventOutputSerializer(many=True)
