"""Tenant admins' screens (policies, vocabularies, the card ledger, the audit trail).

The reviewers' queues live in `memories/review/admin_*.py`, imported at the end.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from memories.audit.services import audit_verify
from memories.models import (
    POLICY_FIELDS,
    AuditEvent,
    ForgettingPolicy,
    LtmCard,
    PromotionPolicy,
    RecallPolicy,
    VocabularyEntry,
    WritePolicy,
)
from memories.review.admin_common import short_time
from memories.services import (
    tenant_policy_delete,
    tenant_policy_save,
    vocabulary_entry_delete,
    vocabulary_entry_save,
)
from memories.write.services import write_policy_publish
from memoryproject.admin_redaction import RedactedDisplayMixin
from profiles.admin_scoping import (
    TENANT_FILTER,
    ReadOnlyScopedAdmin,
    ScopedModelAdmin,
    VersionedScopedAdmin,
    allowed_tenants,
)
from profiles.models import Tenant, TenantMembership


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


@admin.register(LtmCard)
class LtmCardAdmin(RedactedDisplayMixin, ReadOnlyScopedAdmin):
    """The long-term card ledger, read-only: cards change through imports and promotions."""

    redacted_fields = ("title", "summary", "content", "entities", "tags")
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


@admin.register(AuditEvent)
class AuditEventAdmin(RedactedDisplayMixin, ReadOnlyScopedAdmin):
    """The audit trail, read-only for everyone (a database trigger refuses changes anyway)."""

    redacted_fields = ("reason", "details")
    # Time and actor first: an event listing many items has a long object id, shown shortened.
    list_display = (
        "seq",
        "created",
        "actor",
        "action",
        "object_type",
        "object_short",
        "tenant",
        "short_hash",
    )
    list_display_links = ("seq", "action")
    list_filter = ("action", "object_type", "actor_type", TENANT_FILTER)
    search_fields = ("object_id", "actor", "reason", "sha256")
    list_select_related = ("tenant",)
    readonly_fields = (
        "tenant",
        "seq",
        "action",
        "actor_type",
        "actor",
        "object_type",
        "object_id",
        "end_user_pk",
        "before_sha256",
        "after_sha256",
        "reason",
        "details",
        "created_at",
        "prev_sha256",
        "sha256",
    )
    actions = ("verify_chain",)
    change_list_template = "admin/memories/auditevent/change_list.html"

    def _tenants(self, request: HttpRequest) -> QuerySet[Tenant]:
        # Reviewers and tenant admins both read the trail of their tenants.
        reviewer = allowed_tenants(request, TenantMembership.Role.REVIEWER)
        return reviewer | allowed_tenants(request, TenantMembership.Role.TENANT_ADMIN)

    @admin.display(description="sha256")
    def short_hash(self, obj: AuditEvent) -> str:
        return obj.sha256[:12]

    @admin.display(description="time", ordering="created_at")
    def created(self, obj: AuditEvent) -> str:
        return short_time(obj.created_at)

    @admin.display(description="object", ordering="object_id")
    def object_short(self, obj: AuditEvent) -> str:
        ids = [part for part in obj.object_id.split(",") if part]
        if len(ids) <= 1 and len(obj.object_id) <= 40:
            return obj.object_id
        first = ids[0] if ids else obj.object_id
        more = f" +{len(ids) - 1} more" if len(ids) > 1 else ""
        return format_html('<span title="{}">{}{}</span>', obj.object_id, first[:40], more)

    @admin.action(description="Verify the audit chain of the selected events' tenants")
    def verify_chain(self, request: HttpRequest, queryset: QuerySet[AuditEvent]) -> None:
        tenant_ids = set(queryset.values_list("tenant_id", flat=True))
        self._verify(request, self._tenants(request).filter(pk__in=tenant_ids))

    def verify_view(self, request: HttpRequest) -> HttpResponse:
        """Verify the chain of every tenant the user may read (POST only: it reads a lot)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_view_permission(request):
            raise PermissionDenied
        self._verify(request, self._tenants(request))
        return HttpResponseRedirect(reverse("admin:memories_auditevent_changelist"))

    def _verify(self, request: HttpRequest, tenants: QuerySet[Tenant]) -> None:
        checked = 0
        for tenant in tenants.order_by("slug"):
            report = audit_verify(tenant=tenant)
            checked += 1
            if report.ok:
                self.message_user(
                    request,
                    f"Audit chain of {tenant.slug} verifies: {report.events} events.",
                    messages.SUCCESS,
                )
            else:
                self.message_user(
                    request,
                    f"Audit chain of {tenant.slug} is broken at event #{report.broken_at}: "
                    f"{report.problem} ({report.events} events read).",
                    messages.ERROR,
                )
        if not checked:
            self.message_user(request, "No tenant to verify.", messages.WARNING)

    def get_urls(self) -> list[URLPattern]:
        verify = path(
            "verify/",
            self.admin_site.admin_view(self.verify_view),
            name="memories_auditevent_verify",
        )
        return [verify, *super().get_urls()]


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


# The reviewers' queues, the end-user memory page, and episodic history indexing.
from memories.history import admin as history_admin  # noqa: E402, F401
from memories.review import admin_deletion, admin_promotion, admin_users  # noqa: E402, F401
