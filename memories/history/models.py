"""PostgreSQL side of episodic history: what is still to be indexed, and how far each session is.

The entries themselves live in the lexical index (Elasticsearch, or PostgreSQL's full-text index,
`HistoryLexicalEntry`) and Milvus; the transcript segments are their source, so every index can
always be rebuilt from Layer 0.
"""

from __future__ import annotations

from django.contrib.postgres.search import SearchVectorField
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


class HistoryLexicalEntry(models.Model):
    """A history entry in PostgreSQL's own full-text index, the lexical engine
    `HISTORY_LEXICAL_ENGINE=postgres` selects (`pg_search.py`): its BM25 terms as a `tsvector`,
    read with its owner's other rows (the owner index), never another user's."""

    entry_id = models.CharField(primary_key=True, max_length=64)
    tenant_id = models.CharField(max_length=64)
    user_id = models.CharField(max_length=255)
    session_id = models.CharField(max_length=255)
    session_pk = models.BigIntegerField()
    seq = models.BigIntegerField()
    event_id = models.CharField(max_length=255)
    role = models.CharField(max_length=32)
    occurred_at = models.DateTimeField()
    text = models.TextField()
    context = models.TextField(blank=True)
    text_terms = SearchVectorField(null=True)
    context_terms = SearchVectorField(null=True)
    text_length = models.PositiveIntegerField(default=0)  # BM25 terms, for length normalisation
    context_length = models.PositiveIntegerField(default=0)

    class Meta:
        app_label = "memories"
        verbose_name = "history entry (PostgreSQL full-text index)"
        verbose_name_plural = "history entries (PostgreSQL full-text index)"
        indexes = [
            models.Index(fields=["tenant_id", "user_id", "occurred_at"], name="historylex_owner"),
            models.Index(fields=["tenant_id", "session_pk"], name="historylex_session"),
        ]

    def __str__(self) -> str:
        return self.entry_id
