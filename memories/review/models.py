"""PostgreSQL side of the review workflows: promotion and deletion requests, tenant purges."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from memories.write.models import ReviewedRequest, review_queue_rules
from memories.write.models import ReviewStatus as ReviewStatus  # the review code reads it here
from profiles.models import Tenant


class PromotionRequest(ReviewedRequest):
    """A proposal to promote short-term memory: to a profile fact in PostgreSQL or a card.

    Nothing is promoted until a reviewer approves; the evidence says why it was proposed.
    """

    class Path(models.TextChoices):
        POSTGRES = "postgres", "profile fact (PostgreSQL)"
        LTM = "ltm", "long-term card"

    class Origin(models.TextChoices):
        SCAN = "scan", "Promotion scan"
        REFLECTION = "reflection", "Reflection"

    request_id = models.CharField(max_length=40, unique=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="promotions")
    end_user = models.ForeignKey(
        "profiles.EndUser", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    path = models.CharField(max_length=16, choices=Path.choices)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.SCAN)
    memory_type = models.CharField(max_length=32)
    # A profile fact: {"key", "value", "target": "preference" | "fact"}; a card: its fields.
    proposal = models.JSONField(default=dict)
    # The proposal as it was proposed, kept when a reviewer approves or merges it with edits
    # (`proposal` then holds it as approved); null when it was decided as proposed.
    proposal_as_proposed = models.JSONField(null=True, blank=True)
    # Short-term item ids, transcript message ids per session, triggers and their reasons.
    evidence = models.JSONField(default=dict)
    # A profile fact: the key's current value; a card: the nearest existing cards.
    existing = models.JSONField(default=dict, blank=True)
    confidence = models.FloatField(default=0.5)
    # `fingerprint`: what it promotes, normalised: a rejected fingerprint is not proposed again
    # without new evidence. `result_ref`: a card's memory_id, or "preference:<pk>" / "fact:<pk>".

    class Meta(ReviewedRequest.Meta):
        constraints, indexes = review_queue_rules(prefix="promotion")

    def __str__(self) -> str:
        return f"{self.request_id} ({self.get_path_display()})"

    @property
    def headline(self) -> str:
        if self.path == self.Path.POSTGRES:
            return f"{self.proposal.get('key')} = {self.proposal.get('value')}"
        return str(self.proposal.get("title") or self.proposal.get("summary", ""))[:120]


class DeletionRequest(models.Model):
    """An agent's request to erase an end user, a long-term card, or a stable fact/preference.

    A reviewer approves it; an erasure job then removes it from every store, verifies, and
    stores a receipt.
    """

    class Kind(models.TextChoices):
        USER = "user", "End user (right to erasure)"
        CARD = "card", "Long-term card"
        FACT = "fact", "Stable fact"
        PREFERENCE = "preference", "Preference"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending review"
        REJECTED = "rejected", "Rejected"
        ERASING = "erasing", "Erasing"
        DONE = "done", "Erased and verified"

    request_id = models.CharField(max_length=40, unique=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="deletions")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The end user's external id, a card's memory_id, or the fact/preference row id. Not a
    # foreign key: the row it names is what gets erased.
    target = models.CharField(max_length=128)
    # External id of the end user the target belongs to, if any (for the reviewer's context).
    subject_user = models.CharField(max_length=128, blank=True)
    reason = models.TextField(blank=True)
    requested_by = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)
    # The erasure job's state per step, so a retry resumes where the last attempt stopped.
    progress = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    receipt = models.JSONField(default=dict, blank=True)
    receipt_sha256 = models.CharField(max_length=64, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "kind", "target"],
                condition=Q(status__in=["pending", "erasing"]),
                name="deletion_one_open_per_target",
            )
        ]
        indexes = [models.Index(fields=["tenant", "status"], name="deletion_tenant_status")]

    def __str__(self) -> str:
        return f"{self.request_id}: erase {self.kind} {self.target}"


class TenantPurge(models.Model):
    """A deleted tenant whose data is still to be removed from the stores beside PostgreSQL.

    Written in the transaction that deletes the tenant (so it holds the tenant's id, not a key
    to a row that is gone, and the end users its Redis keys are named after); the purge task
    empties Redis, Elasticsearch, Milvus and transcript storage and deletes this row once
    nothing of the tenant is left there. A failed run keeps it for the next one.
    """

    tenant_id = models.PositiveBigIntegerField(db_index=True)
    tenant_slug = models.CharField(max_length=64)
    end_users = models.JSONField(default=list)  # [[pk, external_id], ...]
    progress = models.JSONField(default=dict)  # what each step removed, by store
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.tenant_slug} ({self.tenant_id})"
