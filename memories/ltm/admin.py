"""The long-term card ledger's screen."""

from __future__ import annotations

from django.contrib import admin

from memories.ltm.models import LtmCard
from memoryproject.admin_redaction import RedactedDisplayMixin
from profiles.admin_scoping import TENANT_FILTER, ReadOnlyScopedAdmin


@admin.register(LtmCard)
class LtmCardAdmin(RedactedDisplayMixin, ReadOnlyScopedAdmin):
    """The long-term card ledger, read-only: cards change through imports and promotions."""

    redacted_fields = ("title", "summary", "content", "entities", "tags")
    list_display = (
        "memory_id",
        "tenant",
        "card_user",
        "memory_type",
        "title",
        "status",
        "version",
        "updated_at",
    )
    list_filter = ("status", "memory_type", "source_type", TENANT_FILTER)
    search_fields = ("memory_id", "external_id", "end_user__external_id", "title", "summary")
    list_select_related = ("tenant", "end_user", "project")
    readonly_fields = ("source_refs", "version", "created_at", "updated_at")

    @admin.display(description="end user", ordering="end_user__external_id")
    def card_user(self, obj: LtmCard) -> str:
        """The tenant's id of the card's user; a card shared by all users has none."""
        return obj.end_user.external_id if obj.end_user else "(all users)"
