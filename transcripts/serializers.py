"""Output shapes of transcript events and verification, shared by the transcript endpoints,
a short-term item's provenance and the user export."""

from __future__ import annotations

from rest_framework import serializers


class EventOutputSerializer(serializers.Serializer):
    """One recorded event, as stored in its segment."""

    seq = serializers.IntegerField()
    id = serializers.CharField()
    role = serializers.CharField()
    content = serializers.CharField()
    tool_call_id = serializers.CharField()
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()
    received_at = serializers.DateTimeField()


class SessionEventOutputSerializer(EventOutputSerializer):
    """A recorded event with the session it belongs to (`events_by_ids`)."""

    session_id = serializers.CharField()


class VerifyProblemOutputSerializer(serializers.Serializer):
    """A segment that failed verification, and why."""

    segment = serializers.IntegerField()
    path = serializers.CharField()
    reason = serializers.CharField()
