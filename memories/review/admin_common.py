"""What the review queues' admin screens share: list filters, diffs, the scoped queue base."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib import admin
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.utils import unquote
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Model, QuerySet
from django.http import Http404, HttpRequest
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
