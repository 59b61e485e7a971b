"""Read-only view of transcript metadata; the history itself is append-only."""

from __future__ import annotations

from django.contrib import admin

from memoryproject.admin_redaction import RedactedDisplayMixin
from profiles.admin_scoping import TENANT_FILTER, ReadOnlyScopedAdmin
from transcripts.models import Segment, Session


@admin.register(Session)
class SessionAdmin(RedactedDisplayMixin, ReadOnlyScopedAdmin):
    redacted_fields = ("task_id",)  # what was said stays in the transcript, shown redacted
    list_display = ("external_id", "tenant", "end_user", "task_id", "event_count", "last_event_at")
    list_filter = (TENANT_FILTER,)
    search_fields = ("external_id", "end_user__external_id", "task_id")
    list_select_related = ("tenant", "end_user")


@admin.register(Segment)
class SegmentAdmin(ReadOnlyScopedAdmin):
    list_display = ("session", "number", "first_seq", "last_seq", "size_bytes", "created_at")
    search_fields = ("session__external_id", "sha256")
    list_select_related = ("session", "session__tenant")
