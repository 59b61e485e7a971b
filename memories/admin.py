"""Tenant admins' screens (policies, vocabularies, the card ledger) and the reviewers' queue."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.utils import unquote
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from memories.models import (
    POLICY_FIELDS,
    AuditEvent,
    DeletionRequest,
    ForgettingPolicy,
    LtmCard,
    PromotionPolicy,
    PromotionRequest,
    RecallPolicy,
    ReviewStatus,
    VocabularyEntry,
    WritePolicy,
)
from memories.review.audit import audit_verify
from memories.review.deletion import deletion_approve, deletion_reject
from memories.review.promotion import promotion_approve, promotion_merge, promotion_reject
from memories.review.selectors import evidence_excerpt
from memories.services import (
    tenant_policy_delete,
    tenant_policy_save,
    vocabulary_entry_delete,
    vocabulary_entry_save,
)
from memories.write.services import write_policy_publish
from memoryproject.admin_redaction import RedactedDisplayMixin
from memoryproject.errors import DomainError
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


# --- review queue -----------------------------------------------------------------------------
class ConfidenceBandFilter(admin.SimpleListFilter):
    title = "confidence"
    parameter_name = "confidence"
    BANDS: dict[str, tuple[float | None, float | None]] = {
        "high": (0.8, None),
        "medium": (0.5, 0.8),
        "low": (None, 0.5),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("high", "High (≥ 0.8)"), ("medium", "Medium (0.5 – 0.8)"), ("low", "Low (< 0.5)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        band = self.BANDS.get(self.value() or "")
        if band is None:
            return queryset
        low, high = band
        if low is not None:
            queryset = queryset.filter(confidence__gte=low)
        if high is not None:
            queryset = queryset.filter(confidence__lt=high)
        return queryset


class AgeFilter(admin.SimpleListFilter):
    title = "age"
    parameter_name = "age"
    BUCKETS: dict[str, tuple[int, int | None]] = {  # [older than, younger than] in days
        "day": (0, 1),
        "week": (1, 7),
        "month": (7, 30),
        "older": (30, None),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("day", "Under a day"),
            ("week", "1 – 7 days"),
            ("month", "7 – 30 days"),
            ("older", "Over 30 days"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        bucket = self.BUCKETS.get(self.value() or "")
        if bucket is None:
            return queryset
        older_than, younger_than = bucket
        now = timezone.now()
        queryset = queryset.filter(created_at__lte=now - timedelta(days=older_than))
        if younger_than is not None:
            queryset = queryset.filter(created_at__gt=now - timedelta(days=younger_than))
        return queryset


def _reviewer(request: HttpRequest) -> AbstractBaseUser:
    user = request.user
    if not isinstance(user, AbstractBaseUser):  # admin views only serve logged-in staff
        raise PermissionDenied
    return user


def _refusal(exc: DomainError) -> str:
    details = "; ".join(
        f"{name}: {' '.join(problems)}" for name, problems in (exc.fields or {}).items()
    )
    return f"{exc.message} ({details})" if details else exc.message


def _pretty(value: Any) -> str:
    """A value as reviewers read it: text as is, anything else as indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


@dataclass(frozen=True)
class DiffRow:
    left: str
    right: str
    kind: str  # equal | replace | delete | insert


def side_by_side(old: str, new: str) -> list[DiffRow]:
    """Line-by-line comparison of two texts, for a two-column diff table."""
    before, after = old.splitlines(), new.splitlines()
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for kind, i1, i2, j1, j2 in matcher.get_opcodes():
        left, right = before[i1:i2], after[j1:j2]
        for n in range(max(len(left), len(right))):
            rows.append(
                DiffRow(
                    left=left[n] if n < len(left) else "",
                    right=right[n] if n < len(right) else "",
                    kind=kind,
                )
            )
    return rows


def _card_text(card: Mapping[str, Any]) -> str:
    return "\n".join(str(card.get(name) or "") for name in ("title", "summary", "content")).strip()


class ReviewQueueAdmin(ReadOnlyScopedAdmin):
    """Reviewers' queue: rows change only through the review services, never through a form.

    Reviewers see the tenants where they hold the reviewer role; decisions need the same.
    """

    tenant_role = TenantMembership.Role.REVIEWER

    def has_review_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self._may_use(request, obj)

    def reviewable(self, request: HttpRequest, object_id: str) -> Any:
        """The scoped row; another tenant's (or a missing) one is a 404."""
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404("No such request.")
        if not self.has_view_permission(request, obj):
            raise PermissionDenied
        return obj

    def changelist_url(self, request: HttpRequest) -> str:
        opts = self.opts
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        return add_preserved_filters(
            {"preserved_filters": self.get_preserved_filters(request), "opts": opts}, url
        )


class PromotionDecision:
    APPROVE = "approve"
    APPROVE_EDITED = "approve_edited"
    REJECT = "reject"
    MERGE = "merge"
    CHOICES = [
        (APPROVE, "Approve"),
        (APPROVE_EDITED, "Approve with edits"),
        (REJECT, "Reject"),
        (MERGE, "Merge into card"),
    ]


def _as_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


class PromotionReviewForm(forms.Form):
    """A reviewer's decision on one proposal, with the editable fields of its path."""

    decision = forms.ChoiceField(choices=PromotionDecision.CHOICES)
    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="Required to reject; kept with the decision in any case.",
    )
    value = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="Text values as they are; numbers, lists and objects as JSON.",
    )
    title = forms.CharField(
        required=False, max_length=300, widget=forms.TextInput(attrs={"size": 80})
    )
    summary = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3, "cols": 80}))
    content = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4, "cols": 80}))
    memory_type = forms.ChoiceField(required=False, choices=LtmCard.Type.choices)
    entities = forms.CharField(
        required=False, widget=forms.TextInput(attrs={"size": 80}), help_text="Comma-separated."
    )
    tags = forms.CharField(
        required=False, widget=forms.TextInput(attrs={"size": 80}), help_text="Comma-separated."
    )
    memory_id = forms.ChoiceField(required=False, label="Merge into card")

    PATH_A_FIELDS = ("value",)
    PATH_B_FIELDS = ("title", "summary", "content", "memory_type", "entities", "tags", "memory_id")

    def __init__(self, *args: Any, promotion: PromotionRequest, **kwargs: Any) -> None:
        self.promotion = promotion
        proposal = promotion.proposal
        initial: dict[str, Any] = {"value": _pretty(proposal.get("value"))}
        for name in ("title", "summary", "content", "memory_type"):
            initial[name] = proposal.get(name, "")
        for name in ("entities", "tags"):
            initial[name] = ", ".join(str(v) for v in proposal.get(name, []))
        kwargs["initial"] = {**initial, **kwargs.get("initial", {})}
        super().__init__(*args, **kwargs)
        self.path_a = promotion.path == PromotionRequest.Path.POSTGRES
        for name in self.PATH_B_FIELDS if self.path_a else self.PATH_A_FIELDS:
            del self.fields[name]
        decision = self.fields["decision"]
        assert isinstance(decision, forms.ChoiceField)
        if self.path_a:
            decision.choices = [c for c in PromotionDecision.CHOICES if c[0] != "merge"]
        else:
            similar = promotion.existing.get("similar", [])
            merge_into = self.fields["memory_id"]
            assert isinstance(merge_into, forms.ChoiceField)
            merge_into.choices = [("", "---------")] + [
                (
                    s["memory_id"],
                    f"{s['memory_id']}: {s.get('title') or s.get('summary', '')}"[:120],
                )
                for s in similar
                if s.get("memory_id")
            ]
        self.edits: dict[str, Any] = {}

    @classmethod
    def decision_of(cls, post: Mapping[str, Any]) -> dict[str, Any]:
        """The submitted data with `decision` taken from the button that was pressed."""
        data = dict(post.items())
        data["decision"] = next(
            (value for value, _ in PromotionDecision.CHOICES if f"_{value}" in post), ""
        )
        return data

    def edit_fields(self) -> list[forms.BoundField]:
        editable = ("value", "title", "summary", "content", "memory_type", "entities", "tags")
        return [self[name] for name in editable if name in self.fields]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        decision = cleaned.get("decision")
        if decision == PromotionDecision.MERGE and not cleaned.get("memory_id"):
            self.add_error("memory_id", "Pick the card to merge into.")
        if decision == PromotionDecision.APPROVE_EDITED:
            self.edits = self._edits(cleaned)
        return cleaned

    def _edits(self, cleaned: dict[str, Any]) -> dict[str, Any]:
        """The editable fields whose submitted value differs from the proposal."""
        proposal = self.promotion.proposal
        submitted: dict[str, Any] = {}
        if self.path_a:
            original, text = proposal.get("value"), cleaned.get("value", "")
            if isinstance(original, str):
                submitted["value"] = text.strip()
            else:
                try:
                    submitted["value"] = json.loads(text)
                except ValueError:
                    self.add_error("value", "Enter the value as JSON, like the current one.")
                    return {}
        else:
            for name in ("title", "summary", "content", "memory_type"):
                submitted[name] = cleaned.get(name, "")
            for name in ("entities", "tags"):
                submitted[name] = _as_list(cleaned.get(name, ""))
        unset: dict[str, Any] = {"entities": [], "tags": []}
        return {
            name: v for name, v in submitted.items() if v != proposal.get(name, unset.get(name, ""))
        }


class BulkRejectForm(forms.Form):
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="Kept with every rejected request.",
    )


@admin.register(PromotionRequest)
class PromotionRequestAdmin(RedactedDisplayMixin, ReviewQueueAdmin):
    """Promotion proposals: approve, edit and approve, reject or merge, through the services."""

    redacted_fields = ("proposal", "evidence", "existing", "decision_reason")
    list_display = (
        "request_id",
        "proposal_headline",
        "path_short",
        "memory_type",
        "end_user",
        "confidence",
        "status",
        "created_at",
        "decided_by",
    )
    list_display_links = ("request_id", "proposal_headline")
    list_filter = (
        "status",
        "path",
        "memory_type",
        "origin",
        ConfidenceBandFilter,
        AgeFilter,
        TENANT_FILTER,
    )
    search_fields = ("request_id", "end_user__external_id", "proposal", "decision_reason")
    list_select_related = ("tenant", "end_user", "decided_by")
    readonly_fields = (
        "request_id",
        "tenant",
        "end_user",
        "path",
        "origin",
        "memory_type",
        "proposal",
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
    review_template = "admin/memories/promotionrequest/review.html"
    reject_template = "admin/memories/promotionrequest/reject_selected.html"

    @admin.display(description="proposal")
    def proposal_headline(self, obj: PromotionRequest) -> str:
        return obj.headline[:100]

    @admin.display(description="path", ordering="path")
    def path_short(self, obj: PromotionRequest) -> str:
        return "A: fact" if obj.path == PromotionRequest.Path.POSTGRES else "B: card"

    # --- one request ---------------------------------------------------------------------
    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        promotion = self.reviewable(request, object_id)
        if request.method == "POST":
            if not self.has_review_permission(request, promotion):
                raise PermissionDenied
            form = PromotionReviewForm(
                PromotionReviewForm.decision_of(request.POST), promotion=promotion
            )
            if self._decide(request, promotion, form):
                return HttpResponseRedirect(self.changelist_url(request))
        else:
            form = PromotionReviewForm(promotion=promotion)
        return self._review_page(request, promotion, form, extra_context)

    def _decide(
        self, request: HttpRequest, promotion: PromotionRequest, form: PromotionReviewForm
    ) -> bool:
        if not form.is_valid():
            self.message_user(
                request, "Nothing was decided: correct the errors below.", messages.ERROR
            )
            return False
        decision, reason = form.cleaned_data["decision"], form.cleaned_data["reason"]
        reviewer = _reviewer(request)
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
                )
                verb = "Merged"
            else:
                edits = form.edits if decision == PromotionDecision.APPROVE_EDITED else None
                done = promotion_approve(
                    request=promotion, reviewer=reviewer, edits=edits, reason=reason
                )
                verb = "Approved with edits" if edits else "Approved"
        except DomainError as exc:
            for name, problems in (exc.fields or {}).items():
                if name in form.fields:
                    form.add_error(name, problems)
            self.message_user(request, f"Nothing was decided: {_refusal(exc)}", messages.ERROR)
            return False
        outcome = f" → {done.result_ref}" if done.result_ref else ""
        self.log_change(request, done, f"{verb}{outcome}. {done.decision_reason}".strip())
        self.message_user(request, f"{verb} {done.request_id}{outcome}.", messages.SUCCESS)
        return True

    def _review_page(
        self,
        request: HttpRequest,
        promotion: PromotionRequest,
        form: PromotionReviewForm,
        extra_context: dict[str, Any] | None,
    ) -> HttpResponse:
        evidence = promotion.evidence or {}
        excerpt = evidence_excerpt(
            tenant=promotion.tenant,
            session_ids=[str(s) for s in evidence.get("sessions", [])],
            message_ids=[str(m) for m in evidence.get("message_ids", [])],
        )
        proposal = promotion.proposal
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
            "path_a": promotion.path == PromotionRequest.Path.POSTGRES,
            "triggers": sorted((evidence.get("triggers") or {}).items()),
            "evidence": evidence,
            "evidence_item": evidence.get("item") or {},
            "excerpt": excerpt,
            "proposal_text": _pretty(proposal.get("value"))
            if promotion.path == PromotionRequest.Path.POSTGRES
            else _card_text(proposal),
            "changelist_url": self.changelist_url(request),
            "has_view_permission": True,
            "media": self.media + form.media,
            **self._comparison(promotion),
            **(extra_context or {}),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.review_template, context)

    def _comparison(self, promotion: PromotionRequest) -> dict[str, Any]:
        """Path A: the current value beside the proposed one. Path B: the nearest cards."""
        proposal, existing = promotion.proposal, promotion.existing or {}
        if promotion.path == PromotionRequest.Path.POSTGRES:
            current = existing.get("current")
            old = _pretty(current.get("value")) if current else ""
            return {
                "current": current,
                "diff": side_by_side(old, _pretty(proposal.get("value"))),
            }
        similar = existing.get("similar", [])
        ids = [str(hit.get("memory_id", "")) for hit in similar]
        statuses = dict(
            LtmCard.objects.filter(tenant=promotion.tenant, memory_id__in=ids).values_list(
                "memory_id", "status"
            )
        )
        proposed = _card_text(proposal)
        return {
            "similar": [
                {
                    **hit,
                    "status": statuses.get(str(hit.get("memory_id", "")), ""),
                    "diff": side_by_side(_card_text(hit), proposed),
                }
                for hit in similar
            ],
            "similar_unavailable": existing.get("unavailable", ""),
        }

    # --- bulk actions --------------------------------------------------------------------
    @admin.action(description="Approve selected promotion requests", permissions=["review"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[PromotionRequest]) -> None:
        reviewer = _reviewer(request)
        approved, refused = [], []
        for promotion in queryset.select_related("tenant", "end_user"):
            try:
                done = promotion_approve(request=promotion, reviewer=reviewer)
            except DomainError as exc:
                refused.append(f"{promotion.request_id} ({_refusal(exc)})")
            else:
                self.log_change(request, done, f"Approved → {done.result_ref} (bulk action).")
                approved.append(done.request_id)
        self._report(request, "Approved", approved, refused)

    @admin.action(description="Reject selected promotion requests…", permissions=["review"])
    def reject_selected(
        self, request: HttpRequest, queryset: QuerySet[PromotionRequest]
    ) -> HttpResponse | None:
        form = BulkRejectForm(request.POST if "post" in request.POST else None)
        if form.is_bound and form.is_valid():
            reviewer, reason = _reviewer(request), form.cleaned_data["reason"]
            rejected, refused = [], []
            for promotion in queryset:
                try:
                    done = promotion_reject(request=promotion, reviewer=reviewer, reason=reason)
                except DomainError as exc:
                    refused.append(f"{promotion.request_id} ({_refusal(exc)})")
                else:
                    self.log_change(request, done, f"Rejected (bulk action). {reason}")
                    rejected.append(done.request_id)
            self._report(request, "Rejected", rejected, refused)
            return None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "title": "Reject promotion requests",
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
            noun = "promotion request" if len(done) == 1 else "promotion requests"
            self.message_user(
                request, f"{verb} {len(done)} {noun}: {', '.join(done)}.", messages.SUCCESS
            )
        if refused:
            self.message_user(
                request, f"Not {verb.lower()}: {'; '.join(refused)}", messages.WARNING
            )


class DeletionDecisionForm(forms.Form):
    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="Required to reject; kept with the decision in any case.",
    )


@admin.register(DeletionRequest)
class DeletionRequestAdmin(ReviewQueueAdmin):
    """Deletion requests: approving starts the erasure job; its progress and receipt show here."""

    list_display = (
        "request_id",
        "kind",
        "target",
        "subject_user",
        "tenant",
        "status",
        "requested_by",
        "created_at",
        "decided_by",
        "completed_at",
    )
    list_filter = ("status", "kind", AgeFilter, TENANT_FILTER)
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
        ("Decision", {"fields": ("status", "decided_by", "decided_at", "decision_reason")}),
        (
            "Erasure",
            {
                "fields": (
                    "progress_pretty",
                    "attempts",
                    "last_error",
                    "completed_at",
                    "receipt_pretty",
                    "receipt_sha256",
                )
            },
        ),
    )
    readonly_fields = (
        "request_id",
        "tenant",
        "kind",
        "target",
        "subject_user",
        "reason",
        "requested_by",
        "created_at",
        "status",
        "decided_by",
        "decided_at",
        "decision_reason",
        "progress_pretty",
        "attempts",
        "last_error",
        "completed_at",
        "receipt_pretty",
        "receipt_sha256",
    )
    change_form_template = "admin/memories/deletionrequest/change_form.html"

    @admin.display(description="progress")
    def progress_pretty(self, obj: DeletionRequest) -> str:
        return format_html("<pre>{}</pre>", _pretty(obj.progress)) if obj.progress else "-"

    @admin.display(description="receipt")
    def receipt_pretty(self, obj: DeletionRequest) -> str:
        return format_html("<pre>{}</pre>", _pretty(obj.receipt)) if obj.receipt else "-"

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        deletion = self.reviewable(request, object_id)
        if request.method == "POST":
            if not self.has_review_permission(request, deletion):
                raise PermissionDenied
            if self._decide(request, deletion):
                return HttpResponseRedirect(self.changelist_url(request))
            return HttpResponseRedirect(request.get_full_path())
        extra = {
            "can_decide": deletion.status == DeletionRequest.Status.PENDING
            and self.has_review_permission(request, deletion),
            "decision_form": DeletionDecisionForm(),
        }
        return super().change_view(request, object_id, form_url, {**extra, **(extra_context or {})})

    def _decide(self, request: HttpRequest, deletion: DeletionRequest) -> bool:
        form = DeletionDecisionForm(request.POST)
        reason = form.cleaned_data["reason"] if form.is_valid() else ""
        reviewer = _reviewer(request)
        try:
            if "_approve" in request.POST:
                done = deletion_approve(request=deletion, reviewer=reviewer, reason=reason)
                verb = "Approved"
            elif "_reject" in request.POST:
                done = deletion_reject(request=deletion, reviewer=reviewer, reason=reason)
                verb = "Rejected"
            else:
                self.message_user(request, "Choose approve or reject.", messages.ERROR)
                return False
        except DomainError as exc:
            self.message_user(request, f"Nothing was decided: {_refusal(exc)}", messages.ERROR)
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


@admin.register(AuditEvent)
class AuditEventAdmin(RedactedDisplayMixin, ReadOnlyScopedAdmin):
    """The audit trail, read-only for everyone (a database trigger refuses changes anyway)."""

    redacted_fields = ("reason", "details")
    list_display = (
        "seq",
        "tenant",
        "action",
        "object_type",
        "object_id",
        "actor_type",
        "actor",
        "created_at",
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


# Episodic history indexing (its outbox and lag).
from memories.history import admin as history_admin  # noqa: E402, F401
