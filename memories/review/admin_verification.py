"""The verification queue: constraints, preferences and profile facts an untrusted source
proposed, held until a reviewer approves (as shown or edited) or rejects them."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.html import format_html

from memories.review.admin_common import (
    AgeFilter,
    ReviewQueueAdmin,
    StatusFilter,
    pretty,
    refusal,
    reviewer_of,
    short_time,
)
from memories.write.models import VerificationRequest
from memories.write.verification import verification_approve, verification_reject
from memoryproject.admin_redaction import RedactedDisplayMixin
from memoryproject.errors import DomainError
from profiles.admin_scoping import TENANT_FILTER


class VerificationDecisionForm(forms.Form):
    summary = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="Approve writes this text as the user's rule; edit it first if need be.",
    )
    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
        help_text="Required to reject; kept with the decision in any case.",
    )


class BulkRejectForm(forms.Form):
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="Kept with every rejected request.",
    )


@admin.register(VerificationRequest)
class VerificationRequestAdmin(RedactedDisplayMixin, ReviewQueueAdmin):
    """Held rules: approve (as shown or edited) or reject, through the verification services."""

    redacted_fields = ("summary", "candidate", "decision_reason")
    list_display = (
        "request_id",
        "headline",
        "memory_type",
        "source_kind",
        "hold_reason",
        "end_user",
        "status",
        "created",
        "decided_by",
    )
    list_display_links = ("request_id", "headline")
    list_filter = (
        StatusFilter,
        "memory_type",
        "source_kind",
        "hold_reason",
        AgeFilter,
        TENANT_FILTER,
    )
    search_fields = ("request_id", "end_user__external_id", "summary", "requested_by")
    list_select_related = ("tenant", "end_user", "decided_by")
    list_per_page = 50
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "request_id",
                    "tenant",
                    "end_user",
                    "session_id",
                    "task_id",
                    "memory_type",
                    "summary",
                    "source_kind",
                    "hold_reason",
                    "requested_by",
                    "confidence",
                    "created_at",
                )
            },
        ),
        ("Candidate as judged", {"fields": ("candidate_pretty",)}),
        ("Decision", {"fields": ("status", "decided_by", "decided_at", "decision_reason")}),
        ("Result", {"fields": ("result_ref",)}),
    )
    readonly_fields = (
        "request_id",
        "tenant",
        "end_user",
        "session_id",
        "task_id",
        "memory_type",
        "summary",
        "source_kind",
        "hold_reason",
        "requested_by",
        "confidence",
        "created_at",
        "candidate_pretty",
        "status",
        "decided_by",
        "decided_at",
        "decision_reason",
        "result_ref",
    )
    actions = ("approve_selected", "reject_selected")
    change_form_template = "admin/memories/verificationrequest/change_form.html"
    reject_template = "admin/memories/verificationrequest/reject_selected.html"

    @admin.display(description="held", ordering="summary")
    def headline(self, obj: VerificationRequest) -> str:
        return obj.headline[:100]

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: VerificationRequest) -> str:
        return short_time(obj.created_at)

    @admin.display(description="candidate")
    def candidate_pretty(self, obj: VerificationRequest) -> str:
        return format_html("<pre>{}</pre>", pretty(obj.candidate)) if obj.candidate else "-"

    # --- one request ---------------------------------------------------------------------
    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        held = self.reviewable(request, object_id)
        form = VerificationDecisionForm(initial={"summary": held.summary})
        if request.method == "POST":
            if not self.has_review_permission(request, held):
                raise PermissionDenied
            form = VerificationDecisionForm(request.POST)
            if self._decide(request, held, form):
                return HttpResponseRedirect(self.changelist_url(request))
            request.method = "GET"  # show the page again with the form as sent
        extra = {
            "can_decide": held.status == VerificationRequest.Status.PENDING
            and self.has_review_permission(request, held),
            "decision_form": form,
        }
        return super().change_view(request, object_id, form_url, {**extra, **(extra_context or {})})

    def _decide(
        self, request: HttpRequest, held: VerificationRequest, form: VerificationDecisionForm
    ) -> bool:
        if not form.is_valid():
            self.message_user(
                request, "Nothing was decided: correct the errors below.", messages.ERROR
            )
            return False
        reviewer, reason = reviewer_of(request), form.cleaned_data["reason"]
        summary = form.cleaned_data["summary"].strip()
        try:
            if "_approve" in request.POST:
                edits = {"summary": summary} if summary != held.summary else None
                done = verification_approve(
                    request=held, reviewer=reviewer, edits=edits, reason=reason
                )
                verb = "Approved with edits" if edits else "Approved"
            elif "_reject" in request.POST:
                done = verification_reject(request=held, reviewer=reviewer, reason=reason)
                verb = "Rejected"
            else:
                self.message_user(request, "Choose approve or reject.", messages.ERROR)
                return False
        except DomainError as exc:
            for name, problems in (exc.fields or {}).items():
                if name in form.fields:
                    form.add_error(name, problems)
            self.message_user(request, f"Nothing was decided: {refusal(exc)}", messages.ERROR)
            return False
        outcome = f" → {done.result_ref}" if done.result_ref else ""
        self.log_change(request, done, f"{verb}{outcome}. {done.decision_reason}".strip())
        self.message_user(request, f"{verb} {done.request_id}{outcome}.", messages.SUCCESS)
        return True

    # --- bulk actions --------------------------------------------------------------------
    @admin.action(description="Approve selected held memories as shown", permissions=["review"])
    def approve_selected(
        self, request: HttpRequest, queryset: QuerySet[VerificationRequest]
    ) -> None:
        reviewer = reviewer_of(request)
        approved, refused = [], []
        for held in queryset.select_related("tenant", "end_user"):
            try:
                done = verification_approve(request=held, reviewer=reviewer)
            except DomainError as exc:
                refused.append(f"{held.request_id} ({refusal(exc)})")
            else:
                self.log_change(request, done, f"Approved → {done.result_ref} (bulk action).")
                approved.append(done.request_id)
        self._report(request, "Approved", approved, refused)

    @admin.action(description="Reject selected held memories…", permissions=["review"])
    def reject_selected(
        self, request: HttpRequest, queryset: QuerySet[VerificationRequest]
    ) -> HttpResponse | None:
        form = BulkRejectForm(request.POST if "post" in request.POST else None)
        if form.is_bound and form.is_valid():
            reviewer, reason = reviewer_of(request), form.cleaned_data["reason"]
            rejected, refused = [], []
            for held in queryset:
                try:
                    done = verification_reject(request=held, reviewer=reviewer, reason=reason)
                except DomainError as exc:
                    refused.append(f"{held.request_id} ({refusal(exc)})")
                else:
                    self.log_change(request, done, f"Rejected (bulk action). {reason}")
                    rejected.append(done.request_id)
            self._report(request, "Rejected", rejected, refused)
            return None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "title": "Reject held memories",
            "queryset": queryset,
            "form": form,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "action": "reject_selected",
            "changelist_url": self.changelist_url(request),
            "media": self.media,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.reject_template, context)

    def _report(self, request: HttpRequest, verb: str, done: list[str], refused: list[str]) -> None:
        if done:
            noun = "held memory" if len(done) == 1 else "held memories"
            self.message_user(
                request, f"{verb} {len(done)} {noun}: {', '.join(done)}.", messages.SUCCESS
            )
        if refused:
            self.message_user(
                request, f"Not {verb.lower()}: {'; '.join(refused)}", messages.WARNING
            )
