"""Output shape of an episodic history entry, as the user export shows it."""

from __future__ import annotations

from rest_framework import serializers

from memoryproject.fields import OutputSerializer


class HistoryEntryOutputSerializer(OutputSerializer):
    """One indexed transcript event (`history_entries_for`)."""

    entry_id = serializers.CharField()
    event_id = serializers.CharField()
    session_id = serializers.CharField()
    role = serializers.CharField()
    occurred_at = serializers.CharField(help_text="ISO 8601")
    text = serializers.CharField(help_text="as indexed, redacted")
