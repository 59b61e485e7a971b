"""PostgreSQL side of the write pipeline: how far the extractors have read each session."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from transcripts.models import Session


class ExtractionCursor(models.Model):
    """How far the extractors have read a session's transcript (its watermark)."""

    session = models.OneToOneField(
        Session, on_delete=models.CASCADE, primary_key=True, related_name="extraction_cursor"
    )
    extracted_seq = models.PositiveIntegerField(default=0)
    # Fencing token: bumped by each extraction run that takes the session's lease; a run
    # advances the cursor only while it still carries its own (memories.write.extraction).
    fence = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.session} extracted to {self.extracted_seq}"


class ReviewStatus(models.TextChoices):
    PENDING = "pending", "Pending review"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class ReviewedRequest(models.Model):
    """What a request a reviewer approves or rejects keeps of its decision (held memories here,
    promotion requests in `memories.review`).

    `fingerprint` names what it would write: one request per fingerprint is pending at a time
    (each model's constraint), and a rejected one is not proposed again unchanged.
    """

    Status = ReviewStatus

    fingerprint = models.CharField(max_length=64)
    status = models.CharField(
        max_length=16, choices=ReviewStatus.choices, default=ReviewStatus.PENDING
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)
    # What approval produced (each model says what it names).
    result_ref = models.CharField(max_length=80, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]


def review_queue_rules(*, prefix: str) -> tuple[list[models.BaseConstraint], list[models.Index]]:
    """A review queue's table rules: one pending request per tenant and fingerprint, and the
    index its list reads by (tenant, status); `prefix` names them."""
    pending_once = models.UniqueConstraint(
        fields=["tenant", "fingerprint"],
        condition=Q(status="pending"),
        name=f"{prefix}_one_pending_per_fingerprint",
    )
    return [pending_once], [
        models.Index(fields=["tenant", "status"], name=f"{prefix}_tenant_status")
    ]


class VerificationRequest(ReviewedRequest):
    """A constraint, preference or profile fact from an untrusted source, held for a reviewer.

    Until approved it is no short-term item at all, so it is never injected, as a rule or
    otherwise. Approval (as shown or edited) writes it as a trusted item (source `reviewer`).
    """

    request_id = models.CharField(max_length=40, unique=True)
    tenant = models.ForeignKey(
        "profiles.Tenant", on_delete=models.CASCADE, related_name="verifications"
    )
    end_user = models.ForeignKey("profiles.EndUser", on_delete=models.CASCADE, related_name="+")
    session_id = models.CharField(max_length=128, blank=True)
    task_id = models.CharField(max_length=128, blank=True)
    memory_type = models.CharField(max_length=32)
    summary = models.TextField()
    # The (redacted) candidate as the policy judged it: what approval writes.
    candidate = models.JSONField(default=dict)
    source_kind = models.CharField(max_length=32)
    hold_reason = models.CharField(max_length=40)
    requested_by = models.CharField(max_length=200, blank=True)
    confidence = models.FloatField(default=0.5)
    # `fingerprint`: the candidate's, with its type: a retried proposal finds its pending
    # request, and a rejected one is refused when proposed again. `result_ref`: the short-term
    # item approved.

    class Meta(ReviewedRequest.Meta):
        constraints, indexes = review_queue_rules(prefix="verification")

    def __str__(self) -> str:
        return f"{self.request_id} ({self.memory_type})"

    @property
    def headline(self) -> str:
        return self.summary[:120]
