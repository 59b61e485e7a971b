"""Read-only view of transcript metadata; the history itself is append-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from profiles.admin_scoping import TENANT_FILTER, ScopedModelAdmin
from transcripts.models import Segment, Session


class ReadOnlyScopedAdmin(ScopedModelAdmin):
    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Session)
class SessionAdmin(ReadOnlyScopedAdmin):
    list_display = ("external_id", "tenant", "end_user", "task_id", "event_count", "last_event_at")
    list_filter = (TENANT_FILTER,)
    search_fields = ("external_id", "end_user__external_id", "task_id")
    list_select_related = ("tenant", "end_user")


@admin.register(Segment)
class SegmentAdmin(ReadOnlyScopedAdmin):
    list_display = ("session", "number", "first_seq", "last_seq", "size_bytes", "created_at")
    search_fields = ("session__external_id", "sha256")
    list_select_related = ("session", "session__tenant")
