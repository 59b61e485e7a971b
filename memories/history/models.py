"""PostgreSQL side of episodic history: what is still to be indexed, and how far each session is.

The entries themselves live in Elasticsearch and Milvus only; the transcript segments are
their source, so both indexes can always be rebuilt from Layer 0.
"""

from __future__ import annotations

from django.db import models

from transcripts.models import Session


class HistoryOutbox(models.Model):
    """A range of a session's transcript events still to be indexed as history entries.

    Recorded in the append's own transaction; a task drains it in batches (embedding many
    events per call), and a beat job drains what a missed task left.
    """

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="history_outbox")
    first_seq = models.PositiveIntegerField()
    last_seq = models.PositiveIntegerField()
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "memories"
        ordering = ["created_at"]
        verbose_name = "history index outbox row"
        verbose_name_plural = "history index outbox"
        indexes = [models.Index(fields=["created_at"], name="historyoutbox_created")]

    def __str__(self) -> str:
        return f"{self.session} {self.first_seq}-{self.last_seq}"

    @property
    def events(self) -> int:
        return self.last_seq - self.first_seq + 1


class HistoryCursor(models.Model):
    """The last transcript sequence number of a session written to both history indexes."""

    session = models.OneToOneField(
        Session, on_delete=models.CASCADE, primary_key=True, related_name="history_cursor"
    )
    indexed_seq = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "memories"

    def __str__(self) -> str:
        return f"{self.session} history indexed to {self.indexed_seq}"
