"""The deletion queue: approving starts the erasure job; its progress and receipt show here,
the receipt as a table per store with every check, and as a JSON download."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import Http404, HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from memories.review.admin_common import (
    AgeFilter,
    DecisionPageAdmin,
    StatusFilter,
    fieldset_fields,
    pretty,
    reason_field,
    refusal,
    reviewer_of,
    short_time,
)
from memories.review.deletion import deletion_approve, deletion_reject
from memories.review.erasure import erasure_inventory
from memories.review.models import DeletionRequest
from memoryproject.errors import DomainError, StoreUnavailable
from profiles.admin_scoping import TENANT_FILTER

STORES = ("redis", "elasticsearch", "milvus", "history", "transcripts", "postgres")
# Which store each verification check looks into.
CHECK_STORE = {
    "postgres_cards": "postgres",
    "postgres_user": "postgres",
    "postgres_rows": "postgres",
    "postgres_values": "postgres",
    "elasticsearch": "elasticsearch",
    "elasticsearch_user": "elasticsearch",
    "milvus": "milvus",
    "milvus_user": "milvus",
    "history_elasticsearch": "history",
    "history_milvus": "history",
    "redis_keys": "redis",
    "redis_items": "redis",
    "event_refs": "transcripts",
    "transcript_events": "transcripts",
}


def receipt_rows(receipt: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per store: what its step removed, how long it took, and each check of it
    (`found` is what verification still found: 0 passes)."""
    steps, checks = receipt.get("stores") or {}, receipt.get("checks") or {}
    rows: dict[str, dict[str, Any]] = {}
    for store in [*STORES, *(s for s in steps if s not in STORES)]:
        step = steps.get(store)
        if step is None:
            continue
        removed = {k: v for k, v in step.items() if k != "ms"}
        rows[store] = {
            "store": store,
            "removed": ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in removed.items())
            or "nothing",
            "ms": step.get("ms"),
            "checks": [],
        }

    def add(store: str, name: str, found: int) -> None:
        row = rows.setdefault(
            store, {"store": store, "removed": "(no step)", "ms": None, "checks": []}
        )
        row["checks"].append({"name": name, "found": found, "ok": not found})

    for kind in ("by_id", "by_hash"):
        for name, found in (checks.get(kind) or {}).items():
            label = f"{'id' if kind == 'by_id' else 'content hash'}: {name.replace('_', ' ')}"
            add(CHECK_STORE.get(name, "postgres"), label, int(found))
    vector = checks.get("by_vector") or {}
    if vector:
        probes = vector.get("probes", vector.get("probed", ""))
        add(
            "milvus",
            f"nearest neighbours of {probes} erased vectors",
            vector.get("hits_of_erased", 0),
        )
    transcripts = checks.get("transcripts") or {}
    if transcripts:
        add("transcripts", "chains verify with tombstones", 0 if transcripts.get("ok") else 1)
    for row in rows.values():
        row["ok"] = all(check["ok"] for check in row["checks"])
    return list(rows.values())


class DeletionDecisionForm(forms.Form):
    reason = reason_field(rows=3)


@admin.register(DeletionRequest)
class DeletionRequestAdmin(DecisionPageAdmin):
    """Deletion requests: approving starts the erasure job; its progress and receipt show here."""

    list_display = (
        "request_id",
        "kind",
        "target",
        "subject_user",
        "tenant",
        "status",
        "requested_by",
        "created",
        "decided_by",
        "completed",
    )
    list_filter = (StatusFilter, "kind", AgeFilter, TENANT_FILTER)
    search_fields = ("request_id", "target", "subject_user", "requested_by", "reason")
    list_select_related = ("tenant", "decided_by")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "request_id",
                    "tenant",
                    "kind",
                    "target",
                    "subject_user",
                    "reason",
                    "requested_by",
                    "created_at",
                )
            },
        ),
        ("What will be erased", {"fields": ("inventory_table",)}),
        ("Decision", {"fields": ("status", "decided_by", "decided_at", "decision_reason")}),
        (
            "Erasure",
            {
                "fields": (
                    "progress_pretty",
                    "attempts",
                    "last_error",
                    "completed_at",
                    "receipt_table",
                    "receipt_sha256",
                )
            },
        ),
    )
    readonly_fields = fieldset_fields(fieldsets)
    change_form_template = "admin/memories/deletionrequest/change_form.html"
    decision_form_class = DeletionDecisionForm
    decision_name = "deletion"
    redisplay_refused = False

    @admin.display(description="progress")
    def progress_pretty(self, obj: DeletionRequest) -> str:
        return format_html("<pre>{}</pre>", pretty(obj.progress)) if obj.progress else "-"

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: DeletionRequest) -> str:
        return short_time(obj.created_at)

    @admin.display(description="completed", ordering="completed_at")
    def completed(self, obj: DeletionRequest) -> str:
        return short_time(obj.completed_at)

    @admin.display(description="inventory")
    def inventory_table(self, obj: DeletionRequest) -> SafeString | str:
        """What the erasure removes from each store, read now while it waits (what it noted
        once it started); a done request's receipt says what was removed."""
        if obj.status == DeletionRequest.Status.REJECTED:
            return "-"
        if obj.status == DeletionRequest.Status.DONE:
            return "Erased: the receipt below lists what each store removed."
        context: dict[str, Any] = {"noted": bool((obj.progress or {}).get("inventory"))}
        try:
            context["lines"] = erasure_inventory(obj)
        except (StoreUnavailable, DomainError) as exc:
            context["unavailable"] = str(exc)
        return render_to_string("admin/memories/deletionrequest/inventory.html", context)

    @admin.display(description="receipt")
    def receipt_table(self, obj: DeletionRequest) -> SafeString | str:
        if not obj.receipt:
            return "-"
        checks = obj.receipt.get("checks") or {}
        elsewhere = checks.get("same_content_elsewhere") or {}
        return render_to_string(
            "admin/memories/deletionrequest/receipt.html",
            {
                "receipt": obj.receipt,
                "rows": receipt_rows(obj.receipt),
                "verified": bool(checks.get("ok")),
                "elsewhere": {k: v for k, v in elsewhere.items() if v},
                "download_url": reverse("admin:memories_deletionrequest_receipt", args=[obj.pk]),
            },
        )

    def receipt_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The receipt as a JSON file; its SHA-256 is the one the page shows."""
        deletion = self.reviewable(request, object_id)
        if not deletion.receipt:
            raise Http404("No receipt yet.")
        body = json.dumps(deletion.receipt, indent=2, ensure_ascii=False, sort_keys=True)
        response = HttpResponse(body, content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="erasure-receipt-{deletion.request_id}.json"'
        )
        response["X-Receipt-SHA256"] = deletion.receipt_sha256
        return response

    def get_urls(self) -> list[URLPattern]:
        receipt = path(
            "<path:object_id>/receipt.json",
            self.admin_site.admin_view(self.receipt_view),
            name="memories_deletionrequest_receipt",
        )
        return [receipt, *super().get_urls()]

    def decide(
        self, request: HttpRequest, obj: DeletionRequest, form: DeletionDecisionForm
    ) -> bool:
        reason = form.cleaned_data["reason"] if form.is_valid() else ""
        reviewer = reviewer_of(request)
        try:
            if "_approve" in request.POST:
                done = deletion_approve(request=obj, reviewer=reviewer, reason=reason)
                verb = "Approved"
            elif "_reject" in request.POST:
                done = deletion_reject(request=obj, reviewer=reviewer, reason=reason)
                verb = "Rejected"
            else:
                self.message_user(request, "Choose approve or reject.", messages.ERROR)
                return False
        except DomainError as exc:
            self.message_user(request, f"Nothing was decided: {refusal(exc)}", messages.ERROR)
            return False
        done.refresh_from_db()  # an eager erasure may have finished already
        self.log_change(request, done, f"{verb}. {done.decision_reason}".strip())
        self.message_user(
            request,
            f"{verb} {done.request_id} (erase {done.kind} {done.target}): "
            f"{done.get_status_display().lower()}.",
            messages.SUCCESS,
        )
        return True
