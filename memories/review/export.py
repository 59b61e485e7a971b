"""Export: everything held about one end user, in every layer, as one document."""

from __future__ import annotations

from typing import Any

from memories.audit.models import AuditEvent
from memories.history.selectors import history_entries_for
from memories.ltm.models import LtmCard
from memories.ltm.serializers import card_view
from memories.review.models import PromotionRequest
from memories.stm.serializers import item_document
from memories.stm.store import stm_store
from memoryproject.redis_keys import Owner
from profiles.models import StableFact, Tenant, UserPreference
from profiles.selectors import end_user_for, profile_document_for
from transcripts.models import Session
from transcripts.selectors import events_after

EXPORT_FORMAT = 1
MAX_STM_ITEMS = 100_000


def _versions(rows: Any) -> list[dict[str, Any]]:
    return [
        {
            "key": row.key,
            "value": row.value,
            "version": row.version,
            "is_current": row.is_current,
            "source": row.source,
            "source_ids": row.source_ids,
            "created_at": row.created_at,
        }
        for row in rows
    ]


def _transcripts(sessions: list[Session]) -> list[dict[str, Any]]:
    exported = []
    for session in sessions:
        events: list[dict[str, Any]] = []
        after = 0
        while True:
            page = events_after(session=session, after=after, limit=1000)
            events.extend(page.events)
            if not page.has_more or not page.events:
                break
            after = page.next_after
        exported.append(
            {
                "session_id": session.external_id,
                "task_id": session.task_id,
                "event_count": session.event_count,
                "created_at": session.created_at,
                "events": events,
            }
        )
    return exported


def _history(tenant: Tenant, user_id: str) -> dict[str, Any]:
    """The user's episodic history entries (redacted text as indexed), with their count."""
    entries = history_entries_for(tenant=tenant, user_id=user_id)
    return {"count": len(entries), "entries": entries}


def user_export(*, tenant: Tenant, user_id: str) -> dict[str, Any]:
    """Layer 1 rows with their history, short-term items, cards (any status), transcripts,
    episodic history entries, pending promotions and audit events of one end user."""
    end_user = end_user_for(tenant=tenant, external_id=user_id)
    owner = Owner(tenant.pk, end_user.pk)
    cards = LtmCard.objects.filter(tenant=tenant, end_user=end_user).select_related(
        "end_user", "project"
    )
    sessions = list(Session.objects.filter(tenant=tenant, end_user=end_user).order_by("pk"))
    audit = AuditEvent.objects.filter(tenant=tenant, end_user_pk=end_user.pk).order_by("seq")
    promotions = PromotionRequest.objects.filter(tenant=tenant, end_user=end_user)
    return {
        "format": EXPORT_FORMAT,
        "user_id": end_user.external_id,
        "created_at": end_user.created_at,
        "layer1": {
            **profile_document_for(tenant=tenant, external_id=user_id),
            "preference_history": _versions(
                UserPreference.objects.filter(end_user=end_user).order_by("key", "version")
            ),
            "fact_history": _versions(
                StableFact.objects.filter(end_user=end_user).order_by("key", "version")
            ),
        },
        "short_term": [
            item_document(item) for item in stm_store().items_of(owner=owner, limit=MAX_STM_ITEMS)
        ],
        "long_term": [card_view(card) for card in cards],
        "transcripts": _transcripts(sessions),
        "history": _history(tenant, end_user.external_id),
        "promotions": [
            {
                "request_id": p.request_id,
                "path": p.path,
                "status": p.status,
                "proposal": p.proposal,
                "created_at": p.created_at,
            }
            for p in promotions
        ],
        "audit": [
            {
                "seq": e.seq,
                "action": e.action,
                "actor": e.actor,
                "object_type": e.object_type,
                "object_id": e.object_id,
                "reason": e.reason,
                "created_at": e.created_at,
                "sha256": e.sha256,
            }
            for e in audit
        ],
    }
