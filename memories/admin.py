"""Tenant admins' screens: write and recall policies, vocabularies, the card ledger."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from memories.models import (
    POLICY_FIELDS,
    ForgettingPolicy,
    LtmCard,
    RecallPolicy,
    VocabularyEntry,
    WritePolicy,
)
from memories.write.services import write_policy_publish
from profiles.admin_scoping import (
    TENANT_FILTER,
    ReadOnlyScopedAdmin,
    ScopedModelAdmin,
    VersionedScopedAdmin,
)


@admin.register(WritePolicy)
class WritePolicyAdmin(VersionedScopedAdmin):
    """Saving publishes a new version and keeps the previous ones, read-only."""

    list_display = (
        "tenant",
        "version",
        "is_current",
        "write_threshold",
        "created_by",
        "created_at",
    )
    list_filter = ("is_current", TENANT_FILTER)
    list_select_related = ("tenant", "created_by")
    fields = ("tenant", *POLICY_FIELDS, "version", "is_current", "created_by", "created_at")
    readonly_fields = ("version", "is_current", "created_by", "created_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None:
            return (*self.readonly_fields, "tenant")
        return self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.check_tenant(request, obj)
        published = write_policy_publish(
            tenant=obj.tenant,
            values={name: getattr(obj, name) for name in POLICY_FIELDS},
            created_by=request.user if request.user.is_authenticated else None,
        )
        obj.pk, obj.version, obj.is_current = published.pk, published.version, True


@admin.register(RecallPolicy)
class RecallPolicyAdmin(ScopedModelAdmin):
    """Score weights, recency decay and defaults of recall; saving refreshes cached context."""

    list_display = (
        "tenant",
        "recency_weight",
        "relevance_weight",
        "importance_weight",
        "confidence_weight",
        "default_k",
        "default_budget_tokens",
        "updated_at",
    )
    list_filter = (TENANT_FILTER,)
    list_select_related = ("tenant",)


@admin.register(ForgettingPolicy)
class ForgettingPolicyAdmin(ScopedModelAdmin):
    """When long-term cards fade and when they are archived."""

    list_display = (
        "tenant",
        "decay_after_days",
        "decay_factor",
        "archive_after_days",
        "archive_below_importance",
        "updated_at",
    )
    list_filter = (TENANT_FILTER,)
    list_select_related = ("tenant",)


@admin.register(VocabularyEntry)
class VocabularyEntryAdmin(ScopedModelAdmin):
    list_display = ("kind", "value", "tenant", "created_at")
    list_filter = ("kind", TENANT_FILTER)
    search_fields = ("value",)
    list_select_related = ("tenant",)


@admin.register(LtmCard)
class LtmCardAdmin(ReadOnlyScopedAdmin):
    """The long-term card ledger, read-only: cards change through imports and promotions."""

    list_display = (
        "memory_id",
        "tenant",
        "memory_type",
        "title",
        "status",
        "version",
        "updated_at",
    )
    list_filter = ("status", "memory_type", "source_type", TENANT_FILTER)
    search_fields = ("memory_id", "external_id", "title", "summary")
    list_select_related = ("tenant", "end_user", "project")
    readonly_fields = ("source_refs", "version", "created_at", "updated_at")
