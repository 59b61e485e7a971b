"""The promotion queue: the review page of one proposal, and bulk approve / reject.

Approve applies the fields exactly as the page shows them (edited or not); Merge folds them into
the card picked; Reject needs a reason; Retarget moves the proposal between a profile fact and a
card. A card proposal that repeats a live card of its user offers to merge into it; approving it
as shown is then refused, and "Approve as a new card" needs a reason. The decision form is in
`admin_promotion_form.py`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from memories.ltm.models import LtmCard
from memories.review.admin_common import (
    AgeFilter,
    ConfidenceBandFilter,
    ReviewQueueAdmin,
    StatusFilter,
    add_refusal,
    approve_action,
    card_text,
    pretty,
    refusal,
    reject_action,
    reviewer_of,
    short_time,
    side_by_side,
)
from memories.review.admin_promotion_form import (
    CARD,
    PROFILE_FACT,
    PromotionDecision,
    PromotionReviewForm,
)
from memories.review.models import PromotionRequest, ReviewStatus
from memories.review.promotion import (
    CARD_EDITABLE,
    promotion_approve,
    promotion_merge,
    promotion_reject,
    promotion_repeats,
)
from memories.review.promotion_scan import current_value
from memories.review.repeats import Repeat
from memories.review.retarget import promotion_retarget
from memories.review.selectors import evidence_excerpt
from memoryproject.admin_redaction import RedactedDisplayMixin
from memoryproject.errors import DomainError
from memoryproject.redaction import Report, redactor_for
from profiles.admin_scoping import TENANT_FILTER


@admin.register(PromotionRequest)
class PromotionRequestAdmin(RedactedDisplayMixin, ReviewQueueAdmin):
    """Promotion proposals: approve (as shown), reject, merge or retarget, through services."""

    redacted_fields = (
        "proposal",
        "proposal_as_proposed",
        "evidence",
        "existing",
        "decision_reason",
    )
    list_display = (
        "request_id",
        "proposal_headline",
        "path_short",
        "memory_type",
        "source",
        "end_user",
        "confidence",
        "status",
        "created",
        "decided_by",
    )
    list_display_links = ("request_id", "proposal_headline")
    list_filter = (
        StatusFilter,
        "path",
        "memory_type",
        "origin",
        ConfidenceBandFilter,
        AgeFilter,
        TENANT_FILTER,
    )
    search_fields = ("request_id", "end_user__external_id", "proposal", "decision_reason")
    list_select_related = ("tenant", "end_user", "decided_by")
    list_per_page = 50
    readonly_fields = (
        "request_id",
        "tenant",
        "end_user",
        "path",
        "origin",
        "memory_type",
        "proposal",
        "proposal_as_proposed",
        "evidence",
        "existing",
        "confidence",
        "status",
        "decided_by",
        "decided_at",
        "decision_reason",
        "result_ref",
        "created_at",
    )
    actions = ("approve_selected", "reject_selected")
    change_list_template = "admin/memories/promotionrequest/change_list.html"
    review_template = "admin/memories/promotionrequest/review.html"
    reject_template = "admin/memories/promotionrequest/reject_selected.html"
    request_noun = ("promotion request", "promotion requests")

    @admin.display(description="proposal")
    def proposal_headline(self, obj: PromotionRequest) -> str:
        return obj.headline[:100]

    @admin.display(description="source / trust")
    def source(self, obj: PromotionRequest) -> str:
        """Whose word the proposed item is (proposals made before it was recorded show '-')."""
        item = (obj.evidence or {}).get("item") or {}
        if not item.get("source_kind"):
            return "-"
        return f"{item['source_kind']} / {item.get('trust', '')}"

    @admin.display(description="path", ordering="path")
    def path_short(self, obj: PromotionRequest) -> str:
        return "profile fact" if obj.path == PROFILE_FACT else "card"

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: PromotionRequest) -> str:
        return short_time(obj.created_at)

    # --- one request ---------------------------------------------------------------------
    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        promotion = self.reviewable(request, object_id)
        repeats = self._repeats(promotion)
        if request.method == "POST":
            if not self.has_review_permission(request, promotion):
                raise PermissionDenied
            form = PromotionReviewForm(
                PromotionReviewForm.decision_of(request.POST), promotion=promotion, repeats=repeats
            )
            next_url = self._decide(request, promotion, form)
            if next_url:
                return HttpResponseRedirect(next_url)
            promotion = self.reviewable(request, object_id)  # as it is now, for the page
            form.promotion = promotion
            repeats = self._repeats(promotion)
        else:
            form = PromotionReviewForm(promotion=promotion, repeats=repeats)
        return self._review_page(request, promotion, form, extra_context, repeats)

    @staticmethod
    def _repeats(promotion: PromotionRequest) -> list[Repeat]:
        """The live cards a pending card proposal repeats, read now (one approved since the
        proposal was made counts too)."""
        if promotion.status != ReviewStatus.PENDING:
            return []
        return promotion_repeats(promotion, promotion.proposal)

    def _decide(
        self, request: HttpRequest, promotion: PromotionRequest, form: PromotionReviewForm
    ) -> str | None:
        """Apply the decision; the page to go to next, or None to show the form again."""
        if not form.is_valid():
            general = [str(problem) for problem in form.non_field_errors()]
            text = " ".join(general) if general else "correct the errors below."
            self.message_user(request, f"Nothing was decided: {text}", messages.ERROR)
            return None
        decision, reason = form.cleaned_data["decision"], form.cleaned_data["reason"]
        reviewer = reviewer_of(request)
        edits = form.edits or None
        try:
            if decision == PromotionDecision.REJECT:
                done = promotion_reject(request=promotion, reviewer=reviewer, reason=reason)
                verb = "Rejected"
            elif decision == PromotionDecision.MERGE:
                done = promotion_merge(
                    request=promotion,
                    reviewer=reviewer,
                    memory_id=form.cleaned_data["memory_id"],
                    reason=reason,
                    edits=edits,
                )
                verb = "Merged with edits" if edits else "Merged"
            elif decision in (PromotionDecision.RETARGET, PromotionDecision.RETARGET_LTM):
                return self._retarget(request, promotion, form, reviewer)
            else:
                as_new_card = decision == PromotionDecision.APPROVE_NEW
                done = promotion_approve(
                    request=promotion,
                    reviewer=reviewer,
                    edits=edits,
                    reason=reason,
                    as_new_card=as_new_card,
                )
                verb = "Approved as a new card" if as_new_card else "Approved"
                verb += " with edits" if edits else ""
        except DomainError as exc:
            add_refusal(form, exc)
            self.message_user(request, f"Nothing was decided: {refusal(exc)}", messages.ERROR)
            return None
        edited = f" ({', '.join(sorted(edits))} as edited)" if edits else ""
        self.decided(request, done, verb, note=edited)
        return self.changelist_url(request)

    def _retarget(
        self,
        request: HttpRequest,
        promotion: PromotionRequest,
        form: PromotionReviewForm,
        reviewer: Any,
    ) -> str | None:
        to_ltm = form.cleaned_data["decision"] == PromotionDecision.RETARGET_LTM
        key = "" if to_ltm else form.cleaned_data["retarget_key"]
        value_text = form.cleaned_data.get("retarget_value", "").strip()
        value: Any = value_text
        if value_text:
            try:
                value = json.loads(value_text)
            except ValueError:
                value = value_text
        try:
            done = promotion_retarget(
                request=promotion,
                reviewer=reviewer,
                path=CARD if to_ltm else PROFILE_FACT,
                key=key,
                value=value,
            )
        except DomainError as exc:
            add_refusal(form, exc, names={"key": "retarget_key", "value": "retarget_value"})
            self.message_user(request, f"Not retargeted: {refusal(exc)}", messages.ERROR)
            return None
        where = "a long-term card" if to_ltm else f"a profile fact, key {key}"
        self.log_change(request, done, f"Retargeted to {where}.")
        self.message_user(
            request,
            f"Moved {done.request_id} to {where}; it is still pending. Check it and decide.",
            messages.SUCCESS,
        )
        return reverse("admin:memories_promotionrequest_change", args=[done.pk])

    def _review_page(
        self,
        request: HttpRequest,
        promotion: PromotionRequest,
        form: PromotionReviewForm,
        extra_context: dict[str, Any] | None,
        repeats: Sequence[Repeat] = (),
    ) -> HttpResponse:
        evidence = promotion.evidence or {}
        excerpt = evidence_excerpt(
            tenant=promotion.tenant,
            session_ids=[str(s) for s in evidence.get("sessions", [])],
            message_ids=[str(m) for m in evidence.get("message_ids", [])],
        )
        proposal = promotion.proposal
        is_profile_fact = promotion.path == PROFILE_FACT
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "title": f"Review {promotion.request_id}",
            "subtitle": promotion.headline,
            "original": promotion,
            "promotion": promotion,
            "form": form,
            "can_decide": promotion.status == ReviewStatus.PENDING
            and self.has_review_permission(request, promotion),
            "profile_fact": is_profile_fact,
            "triggers": sorted((evidence.get("triggers") or {}).items()),
            "evidence": evidence,
            "evidence_item": evidence.get("item") or {},
            "excerpt": excerpt,
            "proposal_text": (
                pretty(proposal.get("value")) if is_profile_fact else card_text(proposal)
            ),
            "changelist_url": self.changelist_url(request),
            "has_view_permission": True,
            "media": self.media + form.media,
            "repeats": [
                {
                    "card": repeat,
                    "diff": side_by_side(
                        card_text({"title": repeat.title, "summary": repeat.summary}),
                        card_text(proposal),
                    ),
                }
                for repeat in repeats
            ],
            **self._comparison(promotion),
            **self._reviewer_edits(promotion),
            **(extra_context or {}),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.review_template, context)

    @staticmethod
    def _reviewer_edits(promotion: PromotionRequest) -> dict[str, Any]:
        """A proposal approved with edits: as proposed beside as approved, line by line, and
        the fields the reviewer changed (both redacted on display, like the proposal)."""
        original = promotion.proposal_as_proposed
        if original is None:
            return {}
        approved = promotion.proposal
        return {
            "edited_fields": [
                name
                for name in sorted({*original, *approved})
                if original.get(name) != approved.get(name)
            ],
            "edit_diff": side_by_side(
                proposal_lines(original, promotion.path), proposal_lines(approved, promotion.path)
            ),
        }

    def _comparison(self, promotion: PromotionRequest) -> dict[str, Any]:
        """A profile fact: the key's value now beside the proposed one; a card: the nearest
        cards."""
        proposal, existing = promotion.proposal, promotion.existing or {}
        if promotion.path == PROFILE_FACT:
            current = existing.get("current")
            if promotion.end_user is not None and proposal.get("key"):
                current = current_value(
                    end_user=promotion.end_user,
                    key=str(proposal["key"]),
                    target=str(proposal.get("target", "fact")),
                )["current"]
                if current is not None:
                    current = redactor_for(promotion.tenant_id).value(
                        current, path="", report=Report(), context=str(proposal["key"])
                    )
            old = pretty(current.get("value")) if current else ""
            return {
                "current": current,
                "diff": side_by_side(old, pretty(proposal.get("value"))),
            }
        similar = existing.get("similar", [])
        ids = [str(hit.get("memory_id", "")) for hit in similar]
        statuses = dict(
            LtmCard.objects.filter(tenant=promotion.tenant, memory_id__in=ids).values_list(
                "memory_id", "status"
            )
        )
        proposed = card_text(proposal)
        return {
            "similar": [
                {
                    **hit,
                    "status": statuses.get(str(hit.get("memory_id", "")), ""),
                    "diff": side_by_side(card_text(hit), proposed),
                }
                for hit in similar
            ],
            "similar_unavailable": existing.get("unavailable", ""),
        }

    # --- bulk actions --------------------------------------------------------------------
    approve_selected = approve_action(
        description="Approve selected promotion requests", approve=promotion_approve
    )
    reject_selected = reject_action(
        description="Reject selected promotion requests…",
        reject=promotion_reject,
        title="Reject promotion requests",
    )


def proposal_lines(proposal: dict[str, Any], path: str) -> str:
    """A proposal as reviewers compare two of them: a profile fact's value, or every field a
    reviewer may edit of a card, one `name: value` block each."""
    if path == PROFILE_FACT:
        return pretty(proposal.get("value"))
    blocks = []
    for name in CARD_EDITABLE:
        value = proposal.get(name)
        if isinstance(value, list):
            value = ", ".join(str(part) for part in value)
        blocks.append(f"{name}: {pretty(value)}")
    return "\n".join(blocks)
