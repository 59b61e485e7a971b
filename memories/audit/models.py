"""The audit trail's table: one row per change, hash-chained per tenant.

It sits below every layer that writes (Layer 1 included), so it names its tenant by the app
registry ("profiles.Tenant") instead of importing it.
"""

from __future__ import annotations

from django.db import models


class AuditEvent(models.Model):
    """One change to memory or review state; append-only and hash-chained per tenant.

    Holds hashes of the before and after states, never their content, so erasure does not
    have to touch it. A database trigger refuses updates and deletes.
    """

    class ActorType(models.TextChoices):
        API_KEY = "api_key", "API key"
        STAFF = "staff", "Staff user"
        JOB = "job", "Job"

    tenant = models.ForeignKey("profiles.Tenant", on_delete=models.CASCADE, related_name="+")
    seq = models.PositiveBigIntegerField()
    action = models.CharField(max_length=32)
    actor_type = models.CharField(max_length=16, choices=ActorType.choices)
    actor = models.CharField(max_length=200)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=200)
    # Primary key of the end user the change concerns (kept as a number: no personal data).
    end_user_pk = models.BigIntegerField(null=True, blank=True)
    before_sha256 = models.CharField(max_length=64, blank=True)
    after_sha256 = models.CharField(max_length=64, blank=True)
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    prev_sha256 = models.CharField(max_length=64, blank=True)
    sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["tenant", "-seq"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "seq"], name="auditevent_unique_seq")
        ]
        indexes = [models.Index(fields=["tenant", "end_user_pk"], name="audit_tenant_user")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.action} {self.object_type} {self.object_id}"
