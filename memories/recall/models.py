"""PostgreSQL side of recall: side effects kept while Redis is down."""

from __future__ import annotations

from django.db import models

from profiles.models import Tenant


class RecallEffectOutbox(models.Model):
    """One recall's side effects, kept here while Redis (its queue and the broker) is down.

    The recall-effects beat job applies and deletes these rows once Redis is back, so the
    recall's transcript event is not lost.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    record = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "recall effects outbox"

    def __str__(self) -> str:
        return str(self.record.get("recall_id", self.pk))
