"""Output shapes of session compression: the context, and what became of every event."""

from __future__ import annotations

from rest_framework import serializers

from memoryproject.fields import OutputSerializer


class CompressedMessageOutputSerializer(OutputSerializer):
    """An event in the context: verbatim, or a tool result stubbed."""

    seq = serializers.IntegerField()
    id = serializers.CharField()
    role = serializers.CharField()
    tool_call_id = serializers.CharField()
    tool = serializers.CharField()
    state = serializers.CharField()
    near_field = serializers.BooleanField()
    content = serializers.CharField(allow_null=True)
    tokens = serializers.IntegerField()


class SummaryLineOutputSerializer(OutputSerializer):
    text = serializers.CharField()
    refs = serializers.ListField(child=serializers.CharField(), help_text="event ids it cites")


class SummaryCoversOutputSerializer(OutputSerializer):
    events = serializers.IntegerField()
    first_seq = serializers.IntegerField()
    last_seq = serializers.IntegerField()


class SummaryOutputSerializer(OutputSerializer):
    """The summary the older events were folded into."""

    sections = serializers.DictField(child=SummaryLineOutputSerializer(many=True))
    covers = SummaryCoversOutputSerializer()
    dropped_lines = serializers.IntegerField()
    summariser = serializers.CharField()


class CompressionTokensOutputSerializer(OutputSerializer):
    budget = serializers.IntegerField()
    before = serializers.IntegerField()
    after = serializers.IntegerField()
    near_field = serializers.IntegerField()


class StubbedOutputSerializer(OutputSerializer):
    id = serializers.CharField()
    seq = serializers.IntegerField()
    tool = serializers.CharField()
    tool_call_id = serializers.CharField()
    reason = serializers.CharField()
    dependency = serializers.CharField(allow_null=True)


class FoldedOutputSerializer(OutputSerializer):
    id = serializers.CharField()
    seq = serializers.IntegerField()
    role = serializers.CharField()
    reason = serializers.CharField()
    dependency = serializers.CharField(allow_null=True)


class OmittedOutputSerializer(OutputSerializer):
    id = serializers.CharField()
    seq = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField()


class ToolResultOutputSerializer(OutputSerializer):
    """A tool result's dependency, with the reasons and the evidence behind it."""

    id = serializers.CharField()
    seq = serializers.IntegerField()
    dependency = serializers.CharField()
    current = serializers.BooleanField()
    reasons = serializers.ListField(child=serializers.CharField())
    consumers = serializers.ListField(child=serializers.CharField())
    digested_by = serializers.ListField(child=serializers.CharField())


class SkippedOutputSerializer(OutputSerializer):
    first_seq = serializers.IntegerField()
    last_seq = serializers.IntegerField()
    reason = serializers.CharField()


class CompressionOutputSerializer(OutputSerializer):
    """A session's context for the next model turn, within the budget, and its account."""

    session_id = serializers.CharField()
    user_id = serializers.CharField()
    task_id = serializers.CharField()
    messages = CompressedMessageOutputSerializer(many=True)
    summary = SummaryOutputSerializer(allow_null=True)
    tokens = CompressionTokensOutputSerializer()
    within_budget = serializers.BooleanField()
    near_field = serializers.ListField(child=serializers.CharField())
    stubbed = StubbedOutputSerializer(many=True)
    folded = FoldedOutputSerializer(many=True)
    omitted = OmittedOutputSerializer(many=True)
    tool_results = ToolResultOutputSerializer(many=True)
    skipped = SkippedOutputSerializer(allow_null=True)
    language = serializers.CharField()
    notes = serializers.ListField(child=serializers.CharField())
    degraded = serializers.ListField(child=serializers.CharField())

    def get_fields(self) -> dict[str, serializers.Field]:
        # `context` names the serializer's own context, so this field is added here.
        fields = super().get_fields()
        fields["context"] = serializers.CharField(help_text="the text for the next model turn")
        return fields
