"""Export: everything held about one end user, in every layer, as one document.

Every derived text in it is redacted as it is read, so rows stored before a detector (or a
tenant pattern) existed show no raw value either. The transcripts are redacted too, except in
the end user's own copy through the API (`raw_transcripts`; why in docs/redaction.md).
"""

from __future__ import annotations

from typing import Any

from memories.audit.models import AuditEvent
from memories.history.selectors import history_entries_for
from memories.ltm.models import LtmCard
from memories.ltm.serializers import card_view
from memories.quarantine.models import QuarantinedText
from memories.review.models import PromotionRequest
from memories.stm.serializers import item_document
from memories.stm.store import stm_store
from memories.write.models import VerificationRequest
from memoryproject.redaction import (
    NAMES_CONTEXT,
    Redactor,
    redact_fields,
    redact_json,
    redactor_for,
)
from memoryproject.redis_keys import Owner
from profiles.models import StableFact, Tenant, UserPreference
from profiles.selectors import end_user_for, profile_document_for
from transcripts.models import Session
from transcripts.selectors import events_after, redacted_events

EXPORT_FORMAT = 1
MAX_STM_ITEMS = 100_000
# The derived texts of each section, redacted as one record per row.
STM_TEXT_FIELDS = (
    "task_id",
    "subtype",
    "summary",
    "detail",
    "entities",
    "tags",
    "canonical_fact_key",
    "fact_value",
)
CARD_TEXT_FIELDS = ("title", "summary", "content", "entities", "tags")
PROFILE_TEXT_FIELDS = ("display_name", "answer_style", "extras")
NAMES = {"entities": NAMES_CONTEXT, "tags": NAMES_CONTEXT}


def _value(redactor: Redactor, value: Any, *, context: str = "") -> Any:
    return redact_json(value, redactor, context=context)


def _versions(rows: Any, redactor: Redactor) -> list[dict[str, Any]]:
    return [
        {
            "key": row.key,
            "value": _value(redactor, row.value, context=row.key),
            "version": row.version,
            "is_current": row.is_current,
            "source": row.source,
            "source_ids": row.source_ids,
            "created_at": row.created_at,
        }
        for row in rows
    ]


def _transcripts(sessions: list[Session], redactor: Redactor | None) -> list[dict[str, Any]]:
    """Every session with its events; redacted unless `redactor` is None (the raw record)."""
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
                "task_id": _value(redactor, session.task_id) if redactor else session.task_id,
                "event_count": session.event_count,
                "created_at": session.created_at,
                "events": redacted_events(events, redactor=redactor) if redactor else events,
            }
        )
    return exported


def _history(tenant: Tenant, user_id: str, redactor: Redactor) -> dict[str, Any]:
    """The user's episodic history entries (redacted when indexed, and again), with their
    count."""
    entries = [
        {**entry, "text": _value(redactor, entry.get("text"))}
        for entry in history_entries_for(tenant=tenant, user_id=user_id)
    ]
    return {"count": len(entries), "entries": entries}


def _layer1(tenant: Tenant, user_id: str, end_user: Any, redactor: Redactor) -> dict[str, Any]:
    document = profile_document_for(tenant=tenant, external_id=user_id)
    document["profile"], _ = redact_fields(redactor, document["profile"], PROFILE_TEXT_FIELDS)
    for section in ("preferences", "facts"):
        document[section] = [
            {**row, "value": _value(redactor, row["value"], context=row["key"])}
            for row in document[section]
        ]
    return {
        **document,
        "preference_history": _versions(
            UserPreference.objects.filter(end_user=end_user).order_by("key", "version"), redactor
        ),
        "fact_history": _versions(
            StableFact.objects.filter(end_user=end_user).order_by("key", "version"), redactor
        ),
    }


def user_export(*, tenant: Tenant, user_id: str, raw_transcripts: bool = False) -> dict[str, Any]:
    """Layer 1 rows with their history, short-term items, cards (any status), transcripts,
    episodic history entries, pending promotions, what waits for a reviewer (verification
    requests, quarantined texts) and audit events of one end user.

    Derived texts are redacted; the transcripts too unless `raw_transcripts`.
    """
    redactor = redactor_for(tenant)
    end_user = end_user_for(tenant=tenant, external_id=user_id)
    owner = Owner(tenant.pk, end_user.pk)
    cards = LtmCard.objects.filter(tenant=tenant, end_user=end_user).select_related(
        "end_user", "project"
    )
    sessions = list(Session.objects.filter(tenant=tenant, end_user=end_user).order_by("pk"))
    audit = AuditEvent.objects.filter(tenant=tenant, end_user_pk=end_user.pk).order_by("seq")
    promotions = PromotionRequest.objects.filter(tenant=tenant, end_user=end_user)
    verifications = VerificationRequest.objects.filter(tenant=tenant, end_user=end_user)
    quarantined = QuarantinedText.objects.filter(tenant=tenant, end_user=end_user)
    return {
        "format": EXPORT_FORMAT,
        "user_id": end_user.external_id,
        "created_at": end_user.created_at,
        "layer1": _layer1(tenant, user_id, end_user, redactor),
        "short_term": [
            redact_fields(
                redactor,
                item_document(item),
                STM_TEXT_FIELDS,
                contexts={"fact_value": item.canonical_fact_key, **NAMES},
            )[0]
            for item in stm_store().items_of(owner=owner, limit=MAX_STM_ITEMS)
        ],
        "long_term": [
            redact_fields(redactor, card_view(card), CARD_TEXT_FIELDS, contexts=NAMES)[0]
            for card in cards
        ],
        "transcripts": _transcripts(sessions, None if raw_transcripts else redactor),
        "history": _history(tenant, end_user.external_id, redactor),
        "promotions": [
            {
                "request_id": p.request_id,
                "path": p.path,
                "status": p.status,
                "proposal": _value(redactor, p.proposal),
                "created_at": p.created_at,
            }
            for p in promotions
        ],
        # What waits for a reviewer: untrusted rules, and texts held as instructions to the model.
        "verifications": [
            {
                "request_id": v.request_id,
                "memory_type": v.memory_type,
                "summary": _value(redactor, v.summary),
                "source_kind": v.source_kind,
                "hold_reason": v.hold_reason,
                "status": v.status,
                "created_at": v.created_at,
            }
            for v in verifications.order_by("pk")
        ],
        "quarantined": [
            {
                "quarantine_id": q.quarantine_id,
                "path": q.path,
                "source_kind": q.source_kind,
                "reason": q.reason,
                "text": _value(redactor, q.text),
                "status": q.status,
                "created_at": q.created_at,
            }
            for q in quarantined.order_by("pk")
        ],
        "audit": [
            {
                "seq": e.seq,
                "action": e.action,
                "actor": e.actor,
                "object_type": e.object_type,
                "object_id": e.object_id,
                "reason": _value(redactor, e.reason),
                "created_at": e.created_at,
                "sha256": e.sha256,
            }
            for e in audit
        ],
    }
