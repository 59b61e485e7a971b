"""Promotion decisions: a reviewer approves a proposal (optionally edited), rejects it or merges
it into an existing card.

Approving a profile fact (`PromotionRequest.Path.POSTGRES`) writes the user's preference or
stable fact in PostgreSQL; approving a card (`Path.LTM`) creates a long-term card. Proposals are
made in `memories.review.promotion_scan`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memories.audit.services import (
    Action,
    Actor,
    AuditEntry,
    Change,
    audit_record,
    audit_record_many,
    changes_between,
)
from memories.ltm.models import LtmCard
from memories.ltm.services import CardInput, card_merge, cards_import
from memories.review.models import PromotionRequest, ReviewStatus
from memories.review.repeats import Repeat, lock_cards_of, repeat_of, repeated_cards
from memoryproject.errors import Conflict, ErrorCode, Invalid, NotFound
from memoryproject.redaction import Report, redactor_for
from profiles.models import Source, Tenant
from profiles.services.profile_versions import fact_set, preference_set

CARD_EDITABLE = ("title", "summary", "content", "memory_type", "entities", "tags")


def locked_pending(request: PromotionRequest) -> PromotionRequest:
    locked = (
        PromotionRequest.objects.select_for_update(of=("self",))
        .select_related("end_user", "tenant")
        .get(pk=request.pk)
    )
    if locked.status != ReviewStatus.PENDING:
        raise Conflict(
            f"Promotion {locked.request_id} was already {locked.status}.",
            code=ErrorCode.ALREADY_DECIDED,
        )
    return locked


def _edited(request: PromotionRequest, edits: Mapping[str, Any] | None) -> dict[str, Any]:
    """The proposal with the reviewer's edits, redacted like any other text written; an
    edited field that is nothing but sensitive data is `Invalid`."""
    proposal = dict(request.proposal)
    edits = edits or {}
    allowed = ("value",) if request.path == PromotionRequest.Path.POSTGRES else CARD_EDITABLE
    unknown = sorted(set(edits) - set(allowed))
    if unknown:
        raise Invalid(
            "These fields cannot be edited.", fields={name: ["Not editable."] for name in unknown}
        )
    proposal.update(edits)
    redactor, report = redactor_for(request.tenant), Report()
    key = str(proposal.get("key", ""))
    proposal = {
        name: redactor.value(value, path=name, report=report, context=key * (name == "value"))
        for name, value in proposal.items()
    }
    refused = [path for path in report.emptied if path.split(".", 1)[0] in edits]
    if refused:
        raise Invalid(
            "An edit holds nothing but sensitive data.",
            fields={path: ["Holds nothing but sensitive data (redacted)."] for path in refused},
        )
    if not edits:
        return proposal
    if request.path == PromotionRequest.Path.LTM:
        if not str(proposal.get("summary", "")).strip():
            raise Invalid("A card needs a summary.", fields={"summary": ["Required."]})
        if proposal.get("memory_type") not in LtmCard.Type.values:
            raise Invalid("Unknown card type.", fields={"memory_type": ["Unknown type."]})
    elif proposal.get("value") in ("", None):
        raise Invalid("A fact needs a value.", fields={"value": ["Required."]})
    return proposal


def _keep_as_proposed(request: PromotionRequest, proposal: dict[str, Any]) -> None:
    """Write `proposal` as the request's, keeping the proposal as it was proposed when the
    reviewer's edits (or the redaction of them) changed it."""
    if proposal != request.proposal and request.proposal_as_proposed is None:
        request.proposal_as_proposed = request.proposal
    request.proposal = proposal


def _edit_changes(before: Mapping[str, Any], proposal: Mapping[str, Any]) -> list[Change]:
    """The fields of a proposal the reviewer's edits changed, with their values (a profile
    fact's value is redacted knowing its key)."""
    return changes_between(before, proposal, contexts={"value": str(before.get("key", ""))})


def _source_ids(request: PromotionRequest) -> list[str]:
    evidence = request.evidence
    return [*evidence.get("stm_item_ids", []), *evidence.get("message_ids", [])]


def _apply_profile_fact(request: PromotionRequest, proposal: dict[str, Any], reviewer: Any) -> str:
    end_user = request.end_user
    if end_user is None:
        raise Conflict("The end user of this proposal no longer exists.", code=ErrorCode.USER_GONE)
    if proposal["target"] == "preference":
        pref = preference_set(
            end_user=end_user,
            key=proposal["key"],
            value=proposal["value"],
            confidence=request.confidence,
            source=Source.PROMOTION,
            source_ids=_source_ids(request),
        )
        return f"preference:{pref.pk}"
    fact = fact_set(
        tenant=request.tenant,
        key=proposal["key"],
        value=proposal["value"],
        end_user=end_user,
        source=Source.PROMOTION,
        source_ids=_source_ids(request),
        approved_by=reviewer,
    )
    return f"fact:{fact.pk}"


def _card_input(request: PromotionRequest, proposal: dict[str, Any]) -> CardInput:
    evidence = request.evidence
    return CardInput(
        memory_type=proposal["memory_type"],
        title=proposal.get("title", ""),
        summary=proposal["summary"],
        content=proposal.get("content", ""),
        user_id=request.end_user.external_id if request.end_user else "",
        entities=list(proposal.get("entities", [])),
        tags=list(proposal.get("tags", [])),
        source_type=(
            LtmCard.SourceType.REFLECTION
            if request.origin == PromotionRequest.Origin.REFLECTION
            else LtmCard.SourceType.PROMOTED_FROM_STM
        ),
        source_refs={
            "stm_item_ids": list(evidence.get("stm_item_ids", [])),
            "message_ids": list(evidence.get("message_ids", [])),
            "promotion_ids": [request.request_id],
        },
        importance=float(proposal.get("importance", 0.5)),
        confidence=float(proposal.get("confidence", request.confidence)),
        occurred_at=_said_at(evidence),
    )


def _said_at(evidence: Mapping[str, Any]) -> datetime | None:
    """When what the card remembers was said (the latest of its evidence), where known: a card
    is as recent as what it was made from, not as its approval."""
    try:
        said = parse_datetime(str(evidence.get("said_at") or ""))
    except ValueError:
        return None
    if said is not None and timezone.is_naive(said):
        said = timezone.make_aware(said, UTC)
    return said


def _decide(
    request: PromotionRequest, *, status: str, reviewer: Any, reason: str, result_ref: str = ""
) -> None:
    request.status = status
    request.decided_by = reviewer
    request.decided_at = timezone.now()
    request.decision_reason = reason
    request.result_ref = result_ref
    request.save()


def promotion_repeats(request: PromotionRequest, proposal: Mapping[str, Any]) -> list[Repeat]:
    """The live cards of the request's user that this card proposal repeats (card proposals
    only)."""
    if request.path != PromotionRequest.Path.LTM:
        return []
    return repeated_cards(
        tenant=request.tenant, end_user=request.end_user, summary=str(proposal.get("summary", ""))
    )


def _refuse_repeat(repeats: Sequence[Repeat]) -> None:
    first = repeats[0]
    others = f" (and {len(repeats) - 1} more)" if len(repeats) > 1 else ""
    raise Conflict(
        f"This proposal repeats the live card {first.memory_id}{others}: {first.why}. "
        "Merge it into that card, or approve it as a new card and say why.",
        code=ErrorCode.REPEATS_CARD,
    )


@transaction.atomic
def promotion_approve(
    *,
    request: PromotionRequest,
    reviewer: AbstractBaseUser,
    edits: Mapping[str, Any] | None = None,
    reason: str = "",
    as_new_card: bool = False,
) -> PromotionRequest:
    """Apply a proposal (optionally edited): a profile fact is written to PostgreSQL, a card
    proposal creates a long-term card.

    A card proposal that repeats a live card of its user is refused (`Conflict`
    `repeats_card`, naming the card) unless the reviewer chose `as_new_card` and gave a reason:
    approving as shown never makes a second card of a fact without a word.
    """
    request = locked_pending(request)
    proposal = _edited(request, edits)
    before = request.proposal
    repeats: list[Repeat] = []
    if request.path == PromotionRequest.Path.POSTGRES:
        result_ref = _apply_profile_fact(request, proposal, reviewer)
    else:
        if as_new_card and not reason.strip():
            raise Invalid(
                "Say why it should be a new card.", fields={"reason": ["Required for a new card."]}
            )
        lock_cards_of(request.end_user)  # so a card approved meanwhile is seen below
        repeats = promotion_repeats(request, proposal)
        if repeats and not as_new_card:
            _refuse_repeat(repeats)
        [(card, _)] = cards_import(tenant=request.tenant, cards=[_card_input(request, proposal)])
        result_ref = card.memory_id
    _keep_as_proposed(request, proposal)
    _decide(
        request,
        status=ReviewStatus.APPROVED,
        reviewer=reviewer,
        reason=reason,
        result_ref=result_ref,
    )
    edited = _edit_changes(before, proposal)
    approve = AuditEntry(
        action=Action.APPROVE,
        object_type="promotion_request",
        object_id=request.request_id,
        before=before,
        after=proposal,
        reason=reason,
        end_user_pk=request.end_user_id,
        details={
            "edited": proposal != before,
            "edited_fields": [change.field for change in edited],
            **({"as_new_card": True, "repeats": [r.as_dict() for r in repeats]} if repeats else {}),
        },
        changes=edited,
    )
    promote = AuditEntry(
        action=Action.PROMOTE,
        object_type="preference_or_fact" if request.path == "postgres" else "ltm_card",
        object_id=result_ref,
        after=proposal,
        end_user_pk=request.end_user_id,
        details={"promotion": request.request_id, "path": request.path},
    )
    audit_record_many(
        tenant=request.tenant, actor=Actor.staff(reviewer), entries=[approve, promote]
    )
    return request


@transaction.atomic
def promotion_reject(
    *, request: PromotionRequest, reviewer: AbstractBaseUser, reason: str
) -> PromotionRequest:
    """Refuse a proposal; its fingerprint is not proposed again without new evidence."""
    if not reason.strip():
        raise Invalid("Say why the proposal is rejected.", fields={"reason": ["Required."]})
    request = locked_pending(request)
    _decide(request, status=ReviewStatus.REJECTED, reviewer=reviewer, reason=reason.strip())
    audit_record(
        tenant=request.tenant,
        action=Action.REJECT,
        actor=Actor.staff(reviewer),
        object_type="promotion_request",
        object_id=request.request_id,
        before=request.proposal,
        reason=reason.strip(),
        end_user_pk=request.end_user_id,
    )
    return request


@transaction.atomic
def promotion_merge(
    *,
    request: PromotionRequest,
    reviewer: AbstractBaseUser,
    memory_id: str,
    reason: str = "",
    edits: Mapping[str, Any] | None = None,
) -> PromotionRequest:
    """Fold a long-term card proposal (optionally edited) into an existing card instead: the
    card gets its text, entities and references as its next version.

    The card must be the tenant's, live, and the proposal's user's or shared by all users."""
    request = locked_pending(request)
    if request.path != PromotionRequest.Path.LTM:
        raise Invalid("Only long-term card proposals can be merged into a card.")
    proposal = _edited(request, edits)
    before = request.proposal
    lock_cards_of(request.end_user)
    target = LtmCard.objects.filter(tenant=request.tenant, memory_id=memory_id).first()
    if target is None or target.end_user_id not in (None, request.end_user_id):
        raise NotFound(f"No active card {memory_id!r}.")
    repeat = repeat_of(target, str(proposal.get("summary", "")))
    card = card_merge(
        tenant=request.tenant,
        memory_id=memory_id,
        addition=_card_input(request, proposal),
    )
    _keep_as_proposed(request, proposal)
    edited = _edit_changes(before, proposal)
    _decide(
        request,
        status=ReviewStatus.APPROVED,
        reviewer=reviewer,
        reason=reason or f"merged into {card.memory_id}",
        result_ref=card.memory_id,
    )
    audit_record(
        tenant=request.tenant,
        action=Action.MERGE,
        actor=Actor.staff(reviewer),
        object_type="ltm_card",
        object_id=card.memory_id,
        after=request.proposal,
        reason=request.decision_reason,
        end_user_pk=request.end_user_id,
        details={
            "promotion": request.request_id,
            "version": card.version,
            "edited_fields": [change.field for change in edited],
            **({"repeat": repeat.as_dict()} if repeat else {}),
        },
        changes=edited,
    )
    return request


def promotions_for(
    *, tenant: Tenant, statuses: Sequence[str] = (), limit: int = 100
) -> list[PromotionRequest]:
    """The tenant's promotion requests, newest first, optionally of some statuses."""
    queryset = PromotionRequest.objects.filter(tenant=tenant).select_related("end_user")
    if statuses:
        queryset = queryset.filter(status__in=statuses)
    return list(queryset.order_by("-created_at")[:limit])
