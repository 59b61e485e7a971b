"""Reviewers' decisions on quarantined texts: release one (it is written where it was going,
past the screen) or discard it. Used by the admin; each decision has its audit event."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from memories.audit.services import Action, Actor, audit_record
from memories.history.services import history_drain_enqueue, history_record_append
from memories.ltm.services import CardInput, cards_import
from memories.ltm.updates import card_update
from memories.policies.selectors import vocabulary_for
from memories.quarantine.models import QuarantinedText
from memories.write.candidates import Candidate
from memories.write.extractors import ExtractionContext, RuleExtractor
from memories.write.services import proposals_submit
from memories.write.updates import ItemChanges, stm_item_update
from memoryproject.errors import Conflict, ErrorCode, NotFound
from memoryproject.quarantine import WritePath
from profiles.services.profile_patch import ProfilePatch, profile_update
from transcripts.models import Session
from transcripts.selectors import events_after


def _locked_held(held: QuarantinedText) -> QuarantinedText:
    locked = (
        QuarantinedText.objects.select_for_update(of=("self",))
        .select_related("tenant")
        .get(pk=held.pk)
    )
    if locked.status != QuarantinedText.Status.HELD:
        raise Conflict(
            f"Quarantined text {locked.quarantine_id} was already {locked.status}.",
            code=ErrorCode.ALREADY_DECIDED,
        )
    return locked


def _decided(
    held: QuarantinedText, *, status: str, reviewer: AbstractBaseUser, note: str, action: str
) -> QuarantinedText:
    held.status = status
    held.reviewed_by = reviewer  # type: ignore[assignment]
    held.reviewed_at = timezone.now()
    held.review_note = note
    held.save()
    audit_record(
        tenant=held.tenant_id,
        action=action,
        actor=Actor.staff(reviewer),
        object_type="quarantined_text",
        object_id=held.quarantine_id,
        reason=note,
        end_user_pk=held.end_user_id,
        details={"path": held.path, "reason": held.reason, "status": status, **held.result},
    )
    return held


@transaction.atomic
def quarantine_release(
    *, held: QuarantinedText, reviewer: AbstractBaseUser, note: str = ""
) -> QuarantinedText:
    """Write a held text where it was going, past the screen: a proposal or an extracted
    candidate into short-term memory, a card into long-term memory, profile values into
    Layer 1; a transcript event is indexed as history and read by the rule extractor; a
    promotion proposal is proposed by the next scan."""
    held = _locked_held(held)
    held.result = _write(held, reviewer=reviewer)
    return _decided(
        held,
        status=QuarantinedText.Status.RELEASED,
        reviewer=reviewer,
        note=note,
        action=Action.APPROVE,
    )


@transaction.atomic
def quarantine_discard(
    *, held: QuarantinedText, reviewer: AbstractBaseUser, note: str = ""
) -> QuarantinedText:
    """Drop a held text for good: its text and payload are cleared, its reason stays."""
    held = _locked_held(held)
    held.text, held.payload = "", {}
    return _decided(
        held,
        status=QuarantinedText.Status.DISCARDED,
        reviewer=reviewer,
        note=note,
        action=Action.REJECT,
    )


def _write(held: QuarantinedText, *, reviewer: AbstractBaseUser) -> dict[str, Any]:
    payload = held.payload
    actor = Actor.staff(reviewer)
    if held.path in (WritePath.PROPOSAL, WritePath.EXTRACTION):
        candidate = _candidate(payload["candidate"])
        [result] = proposals_submit(
            tenant=held.tenant, candidates=[candidate], actor=actor, strict=False, screen=False
        )
        return {"outcome": result.outcome, "item_id": result.item_id}
    if held.path == WritePath.IMPORT:
        card = dict(payload["card"])
        if card.get("occurred_at"):
            card["occurred_at"] = datetime.fromisoformat(card["occurred_at"])
        [(written, outcome)] = cards_import(
            tenant=held.tenant, cards=[CardInput(**card)], actor=actor
        )
        return {"outcome": outcome, "memory_id": written.memory_id}
    if held.path == WritePath.PROFILE:
        end_user = profile_update(
            tenant=held.tenant,
            external_id=payload["user_id"],
            patch=ProfilePatch.of(payload["patch"]),
            staff=reviewer,
        )
        return {"outcome": "updated", "end_user": end_user.external_id}
    if held.path == WritePath.EVENT:
        return _release_event(held, actor=actor)
    if held.path in (WritePath.STM_UPDATE, WritePath.CARD_UPDATE):
        return _release_update(held, actor=actor)
    return {"outcome": "released"}  # a promotion proposal: the next scan proposes it


def _candidate(fields: dict[str, Any]) -> Candidate:
    values = dict(fields)
    for name in ("entities", "tags", "message_ids", "tool_call_ids"):
        values[name] = tuple(values.get(name) or ())
    return Candidate(**values)


def _release_update(held: QuarantinedText, *, actor: Actor) -> dict[str, Any]:
    """Apply a held edit of an item or a card to what it is now, as its writer's words (the
    release says they are not an instruction, not that they are the user's)."""
    payload = held.payload
    try:
        if held.path == WritePath.STM_UPDATE:
            item = stm_item_update(
                tenant=held.tenant,
                item_id=payload["item_id"],
                changes=ItemChanges(**payload["changes"]),
                actor=actor,
                trusted_writer=bool(payload.get("trusted_writer")),
                screen=False,
            )
            return {"outcome": item.outcome, "item_id": item.item.id}
        changes = dict(payload["changes"])
        if changes.get("occurred_at"):
            changes["occurred_at"] = datetime.fromisoformat(changes["occurred_at"])
        card = card_update(
            tenant=held.tenant,
            memory_id=payload["memory_id"],
            changes=changes,
            actor=actor,
            screen=False,
        )
        return {"outcome": card.outcome, "memory_id": card.card.memory_id}
    except NotFound:
        return {"outcome": "gone"}


def _release_event(held: QuarantinedText, *, actor: Actor) -> dict[str, Any]:
    """Index the event as history and let the rule extractor read it."""
    payload = held.payload
    session = (
        Session.objects.select_related("tenant", "end_user")
        .filter(pk=payload["session_pk"], tenant_id=held.tenant_id, erased_at__isnull=True)
        .first()
    )
    if session is None or session.end_user is None:
        return {"outcome": "gone"}
    seq = int(payload["seq"])
    history_record_append(session_pk=session.pk, first_seq=seq, last_seq=seq, roles=frozenset())
    transaction.on_commit(history_drain_enqueue)
    page = events_after(session=session, after=seq - 1, limit=1)
    events = [event for event in page.events if int(event["seq"]) == seq]
    context = ExtractionContext(
        user_id=session.end_user.external_id,
        session_id=session.external_id,
        task_id=session.task_id,
        vocabulary=vocabulary_for(tenant=session.tenant),
    )
    candidates = RuleExtractor().extract(events=events, context=context) if events else []
    results = (
        proposals_submit(
            tenant=session.tenant, candidates=candidates, actor=actor, strict=False, screen=False
        )
        if candidates
        else []
    )
    return {"outcome": "indexed", "item_ids": [r.item_id for r in results if r.item_id]}
