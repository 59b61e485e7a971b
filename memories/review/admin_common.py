"""What the review queues' admin screens share: list filters, diffs, the scoped queue base, the
decision page of a request, and the bulk approve / reject actions."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.utils import unquote
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from memoryproject.errors import DomainError
from profiles.admin_scoping import ReadOnlyScopedAdmin
from profiles.models import TenantMembership


class StatusFilter(admin.SimpleListFilter):
    """Status with the count of each; the queue opens on its pending requests."""

    title = "status"
    parameter_name = "status"
    DEFAULT = "pending"
    ALL = "all"

    def _counts(self, request: HttpRequest, model_admin: Any) -> dict[str, int]:
        rows = (
            model_admin.get_queryset(request)
            .order_by()
            .values_list("status")
            .annotate(n=Count("pk"))
        )
        return dict(rows)

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        counts = self._counts(request, model_admin)
        self.total = sum(counts.values())
        choices = model_admin.model._meta.get_field("status").choices
        return [(value, f"{label} ({counts.get(value, 0)})") for value, label in choices]

    def value(self) -> str:
        return str(super().value() or self.DEFAULT)

    def has_output(self) -> bool:
        return True

    def choices(self, changelist: Any) -> Iterator[Any]:
        yield {
            "selected": self.value() == self.ALL,
            "query_string": changelist.get_query_string({self.parameter_name: self.ALL}),
            "display": f"All ({self.total})",
        }
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == str(lookup),
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == self.ALL:
            return queryset
        return queryset.filter(status=self.value())


def short_time(moment: datetime | None) -> str:
    """A timestamp in the current time zone, as short as a list column needs."""
    if moment is None:
        return "-"
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M")


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


def reviewer_of(request: HttpRequest) -> AbstractBaseUser:
    user = request.user
    if not isinstance(user, AbstractBaseUser):  # admin views only serve logged-in staff
        raise PermissionDenied
    return user


def refusal(exc: DomainError) -> str:
    details = "; ".join(
        f"{name}: {' '.join(problems)}" for name, problems in (exc.fields or {}).items()
    )
    return f"{exc.message} ({details})" if details else exc.message


def add_refusal(
    form: forms.Form, exc: DomainError, *, names: Mapping[str, str] | None = None
) -> None:
    """Show a refused decision's field problems at the form's fields (`names`: a service's
    field name to the form's, where they differ)."""
    for name, problems in (exc.fields or {}).items():
        target = (names or {}).get(name, name)
        if target in form.fields:
            form.add_error(target, problems)


def fieldset_fields(fieldsets: Sequence[tuple[str | None, Mapping[str, Any]]]) -> tuple[str, ...]:
    """Every field the fieldsets show, in order: a queue's read-only fields."""
    return tuple(name for _, options in fieldsets for name in options["fields"])


def pretty(value: Any) -> str:
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


def card_text(card: Mapping[str, Any]) -> str:
    return "\n".join(str(card.get(name) or "") for name in ("title", "summary", "content")).strip()


class ReviewQueueAdmin(ReadOnlyScopedAdmin):
    """Reviewers' queue: rows change only through the review services, never through a form.

    Reviewers see the tenants where they hold the reviewer role; decisions need the same.
    """

    tenant_role = TenantMembership.Role.REVIEWER

    def pending_count(self, request: HttpRequest) -> int | None:
        """Requests waiting in this queue, for the admin index's badge (None: not shown)."""
        if not self.has_view_permission(request):
            return None
        return int(self.get_queryset(request).filter(status="pending").count())

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

    # Singular and plural of what the queue holds, for the bulk actions' messages.
    request_noun = ("request", "requests")
    # The bulk reject's confirmation page (a queue's own extends this one).
    reject_template = "admin/memories/review/reject_selected.html"

    def decided(self, request: HttpRequest, done: Any, verb: str, *, note: str = "") -> None:
        """Log a decision and tell the reviewer, naming what approval produced."""
        outcome = f" → {done.result_ref}" if done.result_ref else ""
        self.log_change(request, done, f"{verb}{outcome}. {done.decision_reason}".strip())
        self.message_user(request, f"{verb} {done.request_id}{outcome}{note}.", messages.SUCCESS)

    def report_bulk(
        self, request: HttpRequest, verb: str, done: list[str], refused: list[str]
    ) -> None:
        if done:
            noun = self.request_noun[0] if len(done) == 1 else self.request_noun[1]
            self.message_user(
                request, f"{verb} {len(done)} {noun}: {', '.join(done)}.", messages.SUCCESS
            )
        if refused:
            self.message_user(
                request, f"Not {verb.lower()}: {'; '.join(refused)}", messages.WARNING
            )


class DecisionPageAdmin(ReviewQueueAdmin):
    """A queue whose request is decided on its own change page: the change form template shows
    `decision_form` below the fields with the buttons `_approve` and `_reject`."""

    decision_form_class: type[forms.Form] = forms.Form
    decision_name = "review"  # the page's decision form is #<name>-decision
    # A refused decision shows the page again with the form as sent; False: reloads it.
    redisplay_refused = True

    def decision_form(self, obj: Any, data: Any = None) -> forms.Form:
        """The decision form of `obj`: empty, or bound to what the page sent."""
        return self.decision_form_class(data)

    def decide(self, request: HttpRequest, obj: Any, form: Any) -> bool:
        """Apply the decision the page sent; False (with a message) when nothing was decided."""
        raise NotImplementedError

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        obj = self.reviewable(request, object_id)
        form = self.decision_form(obj)
        if request.method == "POST":
            if not self.has_review_permission(request, obj):
                raise PermissionDenied
            form = self.decision_form(obj, request.POST)
            if self.decide(request, obj, form):
                return HttpResponseRedirect(self.changelist_url(request))
            if not self.redisplay_refused:
                return HttpResponseRedirect(request.get_full_path())
            request.method = "GET"  # show the page again with the form as sent
        extra = {
            "can_decide": obj.status == "pending" and self.has_review_permission(request, obj),
            "decision_form": form,
            "decision_name": self.decision_name,
        }
        return super().change_view(request, object_id, form_url, {**extra, **(extra_context or {})})


def reason_field(*, rows: int = 2) -> forms.CharField:
    """The reason of a reviewer's decision on one request: needed to reject, kept in any case."""
    return forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": rows, "cols": 80}),
        help_text="Required to reject; kept with the decision in any case.",
    )


class BulkRejectForm(forms.Form):
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="Kept with every rejected request.",
    )


Action = Callable[[Any, HttpRequest, QuerySet[Any]], HttpResponse | None]


def approve_action(*, description: str, approve: Callable[..., Any]) -> Action:
    """A bulk action approving each selected request as shown through `approve(request=,
    reviewer=)`; one refused is named and the others still approved."""

    @admin.action(description=description, permissions=["review"])
    def approve_selected(
        modeladmin: ReviewQueueAdmin, request: HttpRequest, queryset: QuerySet[Any]
    ) -> None:
        reviewer = reviewer_of(request)
        approved, refused = [], []
        for obj in queryset.select_related("tenant", "end_user"):
            try:
                done = approve(request=obj, reviewer=reviewer)
            except DomainError as exc:
                refused.append(f"{obj.request_id} ({refusal(exc)})")
            else:
                modeladmin.log_change(request, done, f"Approved → {done.result_ref} (bulk action).")
                approved.append(done.request_id)
        modeladmin.report_bulk(request, "Approved", approved, refused)

    return approve_selected


def reject_action(*, description: str, reject: Callable[..., Any], title: str) -> Action:
    """A bulk action asking one reason on a confirmation page (`reject_template` of the admin),
    then rejecting each selected request through `reject(request=, reviewer=, reason=)`."""

    @admin.action(description=description, permissions=["review"])
    def reject_selected(
        modeladmin: ReviewQueueAdmin, request: HttpRequest, queryset: QuerySet[Any]
    ) -> HttpResponse | None:
        form = BulkRejectForm(request.POST if "post" in request.POST else None)
        if form.is_bound and form.is_valid():
            reviewer, reason = reviewer_of(request), form.cleaned_data["reason"]
            rejected, refused = [], []
            for obj in queryset:
                try:
                    done = reject(request=obj, reviewer=reviewer, reason=reason)
                except DomainError as exc:
                    refused.append(f"{obj.request_id} ({refusal(exc)})")
                else:
                    modeladmin.log_change(request, done, f"Rejected (bulk action). {reason}")
                    rejected.append(done.request_id)
            modeladmin.report_bulk(request, "Rejected", rejected, refused)
            return None
        opts = modeladmin.opts
        context = {
            **modeladmin.admin_site.each_context(request),
            "opts": opts,
            "app_label": opts.app_label,
            "title": title,
            "queryset": queryset,
            "form": form,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "action": "reject_selected",
            "changelist_url": modeladmin.changelist_url(request),
            "media": modeladmin.media,
        }
        request.current_app = modeladmin.admin_site.name
        return TemplateResponse(request, modeladmin.reject_template, context)

    return reject_selected
