"""PostgreSQL side of long-term memory: the card ledger, its index outbox, the forgetting cursor.

The indexes recall reads live in Elasticsearch and Milvus; these rows are what they are
rebuilt, audited and erased from.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Q

from profiles.models import Tenant


class LtmCard(models.Model):
    """The authoritative ledger of a long-term memory card; ES and Milvus index it by memory_id.

    Recall reads only the indexes; this row is what they are rebuilt, audited and erased from.
    """

    class Type(models.TextChoices):
        SEMANTIC_FACT = "semantic_fact", "Semantic fact"
        EPISODIC_CASE = "episodic_case", "Episodic case"
        PROCEDURE = "procedure", "Procedure"
        PREFERENCE = "preference", "Preference"
        KNOWLEDGE = "knowledge", "Knowledge"

    class SourceType(models.TextChoices):
        PROMOTED_FROM_STM = "promoted_from_stm", "Promoted from short-term memory"
        REFLECTION = "reflection", "Reflection"
        IMPORT = "import", "Import"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        ARCHIVED = "archived", "Archived"
        DELETED = "deleted", "Deleted"

    memory_id = models.CharField(max_length=64, unique=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="ltm_cards")
    # The importer's own id, so a repeated import updates instead of duplicating.
    external_id = models.CharField(max_length=128, blank=True)
    end_user = models.ForeignKey(
        "profiles.EndUser",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="ltm_cards",
        help_text="Empty for project-wide knowledge.",
    )
    project = models.ForeignKey(
        "profiles.Project", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    memory_type = models.CharField(max_length=32, choices=Type.choices)
    title = models.CharField(max_length=300, blank=True)
    summary = models.TextField(blank=True)
    occurred_at = models.DateTimeField(
        null=True, blank=True, help_text="When what the card remembers happened, if known."
    )
    content = models.TextField(blank=True)
    entities = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)
    source_type = models.CharField(max_length=32, choices=SourceType.choices)
    # {"stm_item_ids": [...], "message_ids": [...]} — where the card came from.
    source_refs = models.JSONField(default=dict, blank=True)
    importance = models.FloatField(default=0.5)
    confidence = models.FloatField(default=0.8)
    access_count = models.PositiveIntegerField(default=0)
    last_access_at = models.DateTimeField(null=True, blank=True)
    # Multiplies the card's recall score; the forgetting job lowers it for cards unused for long
    # and raises it for cards recalled often.
    weight = models.FloatField(default=1.0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant", "-updated_at"]
        verbose_name = "long-term memory card"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "external_id"],
                condition=~Q(external_id=""),
                name="ltmcard_unique_external_id",
            ),
            models.CheckConstraint(
                condition=Q(
                    importance__gte=0, importance__lte=1, confidence__gte=0, confidence__lte=1
                ),
                name="ltmcard_scores_in_range",
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "status"], name="ltmcard_tenant_status"),
            # Whether a tenant holds any shared card, without reading the users' cards.
            models.Index(
                fields=["tenant"],
                condition=Q(end_user__isnull=True, status="active"),
                name="ltmcard_shared_active",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} v{self.version}: {self.title or self.summary[:40]}"

    @property
    def text(self) -> str:
        """Everything searchable about the card, for bm25_text and the embedding."""
        return "\n".join(part for part in (self.title, self.summary, self.content) if part)

    def index_fields(self) -> dict[str, Any]:
        """The card's fields as both indexes store them and recall reads them (end user and
        project selected with the card)."""
        refs = self.source_refs or {}
        return {
            "tenant_id": str(self.tenant_id),
            "user_id": self.end_user.external_id if self.end_user else "",
            "project_id": self.project.key if self.project else "",
            "memory_type": self.memory_type,
            "title": self.title,
            "summary": self.summary,
            "content": self.content,
            "entities": list(self.entities),
            "tags": list(self.tags),
            "source_type": self.source_type,
            "source_refs": [f"{kind}:{ref}" for kind, ids in refs.items() for ref in ids],
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "occurred_at": self.occurred_at.isoformat() if self.occurred_at else None,
            "importance": self.importance,
            "confidence": self.confidence,
            "access_count": self.access_count,
            "status": self.status,
        }


class LtmOutbox(models.Model):
    """A card version still to be written to (or removed from) both indexes.

    Recorded in the same transaction as the card change; a task drains it, retrying until both
    Elasticsearch and Milvus agree.
    """

    card = models.ForeignKey(LtmCard, on_delete=models.CASCADE, related_name="outbox")
    version = models.PositiveIntegerField()
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        verbose_name_plural = "long-term memory outbox"

    def __str__(self) -> str:
        return f"{self.card.memory_id} v{self.version}"


class ForgettingCursor(models.Model):
    """How far the forgetting job got through a tenant's cards on the day it last ran there.

    A run that stopped resumes after `card_pk`; a tenant `finished` for a day is not faded
    again that day, however often the job runs.
    """

    tenant = models.OneToOneField(
        Tenant, on_delete=models.CASCADE, primary_key=True, related_name="forgetting_cursor"
    )
    day = models.DateField()
    card_pk = models.BigIntegerField(default=0, help_text="The last card handled on `day`.")
    finished = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        state = "finished" if self.finished else f"at card {self.card_pk}"
        return f"forgetting of {self.tenant} on {self.day}: {state}"
