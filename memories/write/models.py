"""PostgreSQL side of the write pipeline: how far the extractors have read each session."""

from __future__ import annotations

from django.db import models

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
