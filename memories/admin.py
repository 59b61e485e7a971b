"""The memory layers' admin screens: each subpackage's `admin.py`, the audit trail's, and the
tenant list's.

Django's autodiscovery imports only this module, so it imports the subpackages' screens. The
audit trail's screen stays here: its table sits below Layer 1, its screen uses Layer 1's
tenant scoping and the reviewers' helpers. So does the tenant list (Layer 1's, registered
again): its action queues a job, and the jobs sit at this level (`memories/jobs.py`).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from memories.audit.models import AuditEvent
from memories.audit.services import audit_verify
from memories.history import admin as history_admin  # noqa: F401
from memories.jobs import promotion_scan_task
from memories.ltm import admin as ltm_admin  # noqa: F401
from memories.policies import admin as policies_admin  # noqa: F401
from memories.review import admin as review_admin  # noqa: F401
from memories.review.admin_common import pretty, short_time
from memoryproject.admin_redaction import RedactedDisplayMixin
from memoryproject.redaction import redact_json, redactor_for
from profiles.admin import TenantAdmin
from profiles.admin_scoping import TENANT_FILTER, ReadOnlyScopedAdmin, allowed_tenants
from profiles.models import Tenant, TenantMembership


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
        "changed_fields",
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
        "changes_table",
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

    @admin.display(description="changes")
    def changes_table(self, obj: AuditEvent) -> SafeString | str:
        """Each changed field's value before and after, as recorded (redacted again for the
        page); a field whose values went with an erased end user says so."""
        recorded = (obj.details or {}).get("changes") or []
        if not recorded:
            return "-"
        redactor = redactor_for(obj.tenant_id)
        kept = {change.position: change for change in obj.changes.all()}
        changes, erased = [], []
        for position, entry in enumerate(recorded):
            change = kept.get(position)
            if change is None:
                erased.append(entry.get("field", ""))
                continue
            before = redact_json(change.before, redactor, context=change.field)
            after = redact_json(change.after, redactor, context=change.field)
            changes.append(
                {
                    "field": change.field,
                    "before": before,
                    "after": after,
                    "before_text": pretty(before),
                    "after_text": pretty(after),
                }
            )
        return render_to_string(
            "admin/memories/auditevent/changes.html",
            {
                "changes": changes,
                "erased": erased,
                "omitted": (obj.details or {}).get("changes_omitted", 0),
            },
        )

    @admin.display(description="changed")
    def changed_fields(self, obj: AuditEvent) -> str:
        """The first field changed (all of them on hover), kept short for the list's width."""
        names = [entry.get("field", "") for entry in (obj.details or {}).get("changes") or []]
        if not names:
            return "-"
        more = f" +{len(names) - 1} more" if len(names) > 1 else ""
        return format_html('<span title="{}">{}{}</span>', ", ".join(names), names[0][:40], more)

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


class TenantMemoryAdmin(TenantAdmin):
    """Tenants, with an action that queues the promotion scan for the selected ones now."""

    actions: Any = (*TenantAdmin.actions, "queue_promotion_scan")

    # Queued as the beat queues it, for the selected tenants only (`PROMOTION_SCAN`).

    @admin.action(description="Run the promotion scan for selected tenants now (queued)")
    def queue_promotion_scan(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        slugs = []
        for tenant in queryset.filter(is_active=True):
            promotion_scan_task.delay(tenant_id=tenant.pk)
            slugs.append(tenant.slug)
        if slugs:
            self.message_user(
                request,
                f"Queued the promotion scan for {', '.join(slugs)}; new proposals appear in "
                "the promotion queue once it has run.",
                messages.SUCCESS,
            )
        else:
            self.message_user(request, "No active tenant selected.", messages.WARNING)


admin.site.unregister(Tenant)
admin.site.register(Tenant, TenantMemoryAdmin)
