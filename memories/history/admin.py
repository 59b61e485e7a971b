"""Admin view of history indexing: the outbox rows still to index, and the lag they add up to."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse

from memories.history.models import HistoryOutbox
from memories.history.services import history_drain_enqueue, history_lag
from profiles.admin_scoping import ReadOnlyScopedAdmin


@admin.register(HistoryOutbox)
class HistoryOutboxAdmin(ReadOnlyScopedAdmin):
    """Transcript ranges waiting to become history entries; the page says the current lag."""

    list_display = ("session", "first_seq", "last_seq", "created_at", "attempts", "last_error")
    list_filter = ("session__tenant",)
    list_select_related = ("session__tenant",)
    search_fields = ("session__external_id",)
    actions = ("drain_now",)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        lag = history_lag()
        level = messages.INFO if lag["within_bound"] else messages.WARNING
        self.message_user(
            request,
            f"History index lag: {lag['pending_events']} events in {lag['pending_rows']} rows, "
            f"oldest {lag['lag_seconds']:.0f}s (bound {lag['bound_seconds']}s), "
            f"{lag['failing_rows']} rows failing.",
            level,
        )
        return super().changelist_view(request, extra_context)

    @admin.action(description="Drain the history outbox now")
    def drain_now(self, request: HttpRequest, queryset: Any) -> None:
        history_drain_enqueue()
        self.message_user(request, "A drain of the history outbox was queued.")
