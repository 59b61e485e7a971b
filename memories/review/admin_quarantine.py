"""The reviewers' quarantine queue: texts held because they read as an instruction to the
model, each released (written where it was going) or discarded through the services."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from memories.quarantine.models import QuarantinedText
from memories.review.admin_common import ReviewQueueAdmin, refusal, short_time
from memories.review.quarantine import quarantine_discard, quarantine_release
from memoryproject.admin_redaction import RedactedDisplayMixin
from memoryproject.errors import DomainError
from profiles.admin_scoping import TENANT_FILTER


@admin.register(QuarantinedText)
class QuarantinedTextAdmin(RedactedDisplayMixin, ReviewQueueAdmin):
    """Held texts, newest first; *Release* writes one past the screen, *Discard* drops it."""

    redacted_fields = ("text", "excerpt", "payload")
    list_display = (
        "quarantine_id",
        "created",
        "status",
        "path",
        "reason",
        "source_kind",
        "user_id",
        "excerpt",
        "tenant",
    )
    list_filter = ("status", "path", "reason", "source_kind", TENANT_FILTER)
    search_fields = ("quarantine_id", "user_id", "excerpt", "text")
    list_select_related = ("tenant",)
    readonly_fields = (
        "quarantine_id",
        "tenant",
        "end_user",
        "user_id",
        "path",
        "source_kind",
        "reason",
        "field",
        "excerpt",
        "text",
        "payload",
        "ref",
        "status",
        "reviewed_by",
        "reviewed_at",
        "review_note",
        "result",
        "created_at",
    )
    actions = ("release_selected", "discard_selected")

    def pending_count(self, request: HttpRequest) -> int | None:
        if not self.has_view_permission(request):
            return None
        return int(self.get_queryset(request).filter(status=QuarantinedText.Status.HELD).count())

    @admin.display(description="time", ordering="created_at")
    def created(self, obj: QuarantinedText) -> str:
        return short_time(obj.created_at)

    @admin.action(description="Release the selected texts (write them past the screen)")
    def release_selected(self, request: HttpRequest, queryset: QuerySet[QuarantinedText]) -> None:
        self._decide(request, queryset, release=True)

    @admin.action(description="Discard the selected texts")
    def discard_selected(self, request: HttpRequest, queryset: QuerySet[QuarantinedText]) -> None:
        self._decide(request, queryset, release=False)

    def _decide(
        self, request: HttpRequest, queryset: QuerySet[QuarantinedText], *, release: bool
    ) -> None:
        done, refused = 0, []
        for held in queryset.filter(status=QuarantinedText.Status.HELD):
            if not self.has_review_permission(request, held):
                refused.append(f"{held.quarantine_id}: not a reviewer of its tenant")
                continue
            try:
                if release:
                    quarantine_release(held=held, reviewer=request.user)  # type: ignore[arg-type]
                else:
                    quarantine_discard(held=held, reviewer=request.user)  # type: ignore[arg-type]
            except DomainError as exc:
                refused.append(f"{held.quarantine_id}: {refusal(exc)}")
                continue
            done += 1
        verb = "Released" if release else "Discarded"
        self.message_user(request, f"{verb} {done} quarantined text(s).", messages.SUCCESS)
        if refused:
            self.message_user(request, "Not decided: " + "; ".join(refused), messages.ERROR)
