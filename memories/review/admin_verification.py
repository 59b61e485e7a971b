"""The verification queue: constraints, preferences and profile facts an untrusted source
proposed, held until a reviewer approves (as shown or edited) or rejects them."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.html import format_html

from memories.review.admin_common import (
    AgeFilter,
    DecisionPageAdmin,
    StatusFilter,
    add_refusal,
    approve_action,
    fieldset_fields,
    pretty,
    reason_field,
    refusal,
    reject_action,
    reviewer_of,
    short_time,
)
from memories.stm.selectors import stm_item_for
from memories.write.models import VerificationRequest
from memories.write.verification import (
    profile_hold_now,
    verification_approve,
    verification_reject,
)
from memoryproject.admin_redaction import RedactedDisplayMixin
from memoryproject.errors import DomainError, NotFound, StoreUnavailable
from memoryproject.redaction import redact_text
from profiles.admin_scoping import TENANT_FILTER


class VerificationDecisionForm(forms.Form):
    summary = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="Approve writes this text as the user's rule; edit it first if need be.",
    )
    reason = reason_field()


@admin.register(VerificationRequest)
class VerificationRequestAdmin(RedactedDisplayMixin, DecisionPageAdmin):
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
                    "edit_of",
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
    readonly_fields = fieldset_fields(fieldsets)
    actions = ("approve_selected", "reject_selected")
    change_form_template = "admin/memories/verificationrequest/change_form.html"
    reject_template = "admin/memories/verificationrequest/reject_selected.html"
    request_noun = ("held memory", "held memories")
    decision_name = "verification"

    @admin.display(description="edit of")
    def edit_of(self, obj: VerificationRequest) -> str:
        """For a held edit of an item: the item and its words now, beside the new ones; for a
        held profile value: the field and its value now."""
        if "profile_patch" in (obj.candidate or {}):
            name, now = profile_hold_now(obj)
            shown = "unset" if now is None else redact_text(str(now))[:300]
            return f"profile {name}, now: {shown}"
        item_id = (obj.candidate or {}).get("update_of")
        if not item_id:
            return "- (a new memory)"
        try:
            item = stm_item_for(tenant=obj.tenant, item_id=str(item_id))
        except NotFound:
            return f"{item_id} (gone: expired, deleted or superseded)"
        except StoreUnavailable:
            return f"{item_id} (Redis does not answer)"
        return f"{item_id}, now: {redact_text(item.summary)[:300]}"

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
    def decision_form(self, obj: VerificationRequest, data: Any = None) -> VerificationDecisionForm:
        return VerificationDecisionForm(data, initial={"summary": obj.summary})

    def decide(
        self, request: HttpRequest, obj: VerificationRequest, form: VerificationDecisionForm
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
                edits = {"summary": summary} if summary != obj.summary else None
                done = verification_approve(
                    request=obj, reviewer=reviewer, edits=edits, reason=reason
                )
                verb = "Approved with edits" if edits else "Approved"
            elif "_reject" in request.POST:
                done = verification_reject(request=obj, reviewer=reviewer, reason=reason)
                verb = "Rejected"
            else:
                self.message_user(request, "Choose approve or reject.", messages.ERROR)
                return False
        except DomainError as exc:
            add_refusal(form, exc)
            self.message_user(request, f"Nothing was decided: {refusal(exc)}", messages.ERROR)
            return False
        self.decided(request, done, verb)
        return True

    # --- bulk actions --------------------------------------------------------------------
    approve_selected = approve_action(
        description="Approve selected held memories as shown", approve=verification_approve
    )
    reject_selected = reject_action(
        description="Reject selected held memories…",
        reject=verification_reject,
        title="Reject held memories",
    )
