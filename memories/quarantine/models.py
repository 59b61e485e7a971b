"""PostgreSQL side of quarantine: texts held for review because they read as an instruction to
the model."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from memoryproject.quarantine import Reason, WritePath
from profiles.models import Tenant


class QuarantinedText(models.Model):
    """A write held for review: the text, why, and what a release writes (`payload`).

    Held texts are injected nowhere: they reach no memory store until a reviewer releases
    them; a discarded one keeps only its reason and excerpt.
    """

    class Status(models.TextChoices):
        HELD = "held", "Held for review"
        RELEASED = "released", "Released"
        DISCARDED = "discarded", "Discarded"

    quarantine_id = models.CharField(max_length=40, unique=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quarantined")
    end_user = models.ForeignKey(
        "profiles.EndUser", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    user_id = models.CharField(max_length=128, blank=True)  # the end user's external id
    path = models.CharField(max_length=16, choices=[(p, p) for p in WritePath.ALL])
    source_kind = models.CharField(max_length=32, blank=True)
    reason = models.CharField(max_length=32, choices=[(r, r) for r in Reason.ALL])
    field = models.CharField(max_length=200, blank=True)  # where in the write it was found
    excerpt = models.CharField(max_length=200)  # the words that gave it away
    text = models.TextField(blank=True)  # the held text, redacted
    payload = models.JSONField(default=dict, blank=True)  # what a release writes
    # The write's own key (a transcript event, a promotion fingerprint): held once, and a
    # released one passes when the writer meets it again.
    ref = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.HELD)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)  # what the release wrote
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "memories"
        ordering = ["-created_at"]
        verbose_name = "quarantined text"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "ref"], condition=~Q(ref=""), name="quarantine_ref_unique"
            )
        ]
        indexes = [
            models.Index(fields=["tenant", "status", "created_at"], name="quarantine_queue"),
            models.Index(fields=["tenant", "user_id"], name="quarantine_user"),
        ]

    def __str__(self) -> str:
        return f"{self.quarantine_id} ({self.reason}, {self.status})"
