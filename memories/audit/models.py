"""The audit trail's tables: one row per change, hash-chained per tenant, and the values a
change replaced and wrote, kept beside the chain.

They sit below every layer that writes (Layer 1 included), so they name the tenant and the
end user by the app registry ("profiles.Tenant") instead of importing them.
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


class AuditChange(models.Model):
    """One field's value before and after the change an audit event records, redacted.

    Kept beside the chain, not in it: the event's details hold the hash of each value, so a
    changed value is caught by `audit_verify`, while an erasure can remove the values of its
    end user (they go with the user's row) and the chain still verifies.
    """

    event = models.ForeignKey(AuditEvent, on_delete=models.CASCADE, related_name="changes")
    position = models.PositiveSmallIntegerField()  # its index in the event's details
    end_user = models.ForeignKey(
        "profiles.EndUser", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    field = models.CharField(max_length=300)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["event", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["event", "position"], name="auditchange_unique_position"
            )
        ]

    def __str__(self) -> str:
        return f"{self.field}: {self.before!r} -> {self.after!r}"
