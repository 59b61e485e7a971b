"""Tenant admins' screens of a tenant's policies and vocabulary; every change is audited."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from memories.policies.models import (
    POLICY_FIELDS,
    ForgettingPolicy,
    PromotionPolicy,
    RecallPolicy,
    VocabularyEntry,
    WritePolicy,
)
from memories.policies.services import (
    tenant_policy_delete,
    tenant_policy_save,
    vocabulary_entry_delete,
    vocabulary_entry_save,
    write_policy_publish,
)
from profiles.admin_scoping import TENANT_FILTER, ScopedModelAdmin, VersionedScopedAdmin


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


class TenantPolicyAdmin(ScopedModelAdmin):
    """One policy row per tenant; every save is audited as a policy change."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.check_tenant(request, obj)
        tenant_policy_save(policy=obj, staff=request.user)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        tenant_policy_delete(policy=obj, staff=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for policy in queryset:
            tenant_policy_delete(policy=policy, staff=request.user)


@admin.register(RecallPolicy)
class RecallPolicyAdmin(TenantPolicyAdmin):
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
class ForgettingPolicyAdmin(TenantPolicyAdmin):
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


@admin.register(PromotionPolicy)
class PromotionPolicyAdmin(TenantPolicyAdmin):
    """When short-term items are proposed for promotion, per tenant."""

    list_display = (
        "tenant",
        "min_hits",
        "min_sessions",
        "min_age_hours",
        "min_confidence",
        "similar_cards",
        "updated_at",
    )
    list_filter = (TENANT_FILTER,)
    list_select_related = ("tenant",)


@admin.register(VocabularyEntry)
class VocabularyEntryAdmin(ScopedModelAdmin):
    """A tenant's word lists and patterns; every save and delete is audited."""

    list_display = ("kind", "value", "tenant", "created_at")
    list_filter = ("kind", TENANT_FILTER)
    search_fields = ("value",)
    list_select_related = ("tenant",)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.check_tenant(request, obj)
        vocabulary_entry_save(entry=obj, staff=request.user)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        vocabulary_entry_delete(entry=obj, staff=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for entry in queryset:
            vocabulary_entry_delete(entry=entry, staff=request.user)
