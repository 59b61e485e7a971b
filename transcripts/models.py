"""Layer 0 metadata. Event content lives only in the segment objects in transcript storage."""

from __future__ import annotations

from django.db import models

from profiles.models import EndUser, Tenant, external_id_validator


class Session(models.Model):
    """One conversation of an end user; its events are appended as hash-chained segments."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="sessions")
    # Empty once the end user is erased: the session then holds only tombstoned segments.
    end_user = models.ForeignKey(
        EndUser, on_delete=models.SET_NULL, null=True, blank=True, related_name="sessions"
    )
    external_id = models.CharField(max_length=128, validators=[external_id_validator])
    task_id = models.CharField(max_length=128, blank=True)
    event_count = models.PositiveIntegerField(default=0)
    segment_count = models.PositiveIntegerField(default=0)
    last_event_at = models.DateTimeField(null=True, blank=True)
    # SHA-256 of the newest segment; the next segment records it as its predecessor.
    head_hash = models.CharField(max_length=64, blank=True)
    erased_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant", "-last_event_at"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "external_id"], name="session_unique_id")
        ]
        indexes = [models.Index(fields=["end_user", "-last_event_at"], name="session_user_recent")]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.external_id}"


class Segment(models.Model):
    """One append call's events, stored as an immutable JSONL object in transcript storage."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="segments")
    number = models.PositiveIntegerField()
    first_seq = models.PositiveIntegerField()
    last_seq = models.PositiveIntegerField()
    path = models.CharField(max_length=500)
    sha256 = models.CharField(max_length=64)
    prev_sha256 = models.CharField(max_length=64, blank=True)
    size_bytes = models.PositiveIntegerField()
    # Set when the segment's events were erased: the object at `path` is then a tombstone that
    # names `sha256` (so the chain still links) and hashes to `tombstone_sha256`.
    tombstone_sha256 = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "number"]
        constraints = [
            models.UniqueConstraint(fields=["session", "number"], name="segment_unique_number"),
            models.UniqueConstraint(fields=["session", "first_seq"], name="segment_unique_start"),
        ]
        indexes = [models.Index(fields=["session", "last_seq"], name="segment_session_last_seq")]

    def __str__(self) -> str:
        return f"{self.session} #{self.number} ({self.first_seq}-{self.last_seq})"


class EventRef(models.Model):
    """Where an event id lives and a digest of its content, so retried appends are recognised."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="event_refs")
    message_id = models.CharField(max_length=128)
    seq = models.PositiveIntegerField()
    digest = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "message_id"], name="eventref_unique_id"),
            models.UniqueConstraint(fields=["session", "seq"], name="eventref_unique_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.message_id} @ {self.seq}"
