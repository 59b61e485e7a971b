"""The verification queue: what an untrusted source proposed as a rule waits here for a reviewer.

Approving (as shown or edited) writes it through the write path as a trusted short-term item
whose source is the reviewer; rejecting keeps it out, and the same candidate proposed again is
refused (`rejected_in_verification`). A free-text profile value from a key that is no trusted
writer waits here too (`profile_hold_record`); approval writes it to the user's profile as the
reviewer's.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from memories.audit.services import Action, Actor, audit_record, changes_between
from memories.stm.items import Trust
from memories.write.candidates import SourceKind
from memories.write.models import VerificationRequest
from memories.write.services import Outcome, candidate_of, proposals_submit
from memories.write.trust import confidence_ceiling
from memories.write.updates import ItemChanges, stm_item_update
from memoryproject.errors import Conflict, ErrorCode, Invalid, NotFound
from profiles.models import Source, Tenant
from profiles.services.end_users import end_user_get_or_create
from profiles.services.profile_patch import ProfilePatch, profile_update, touched_state
from profiles.services.profile_trust import ProfileHold

EDITABLE = ("summary",)


def _locked_pending(request: VerificationRequest) -> VerificationRequest:
    locked = (
        VerificationRequest.objects.select_for_update(of=("self",))
        .select_related("tenant", "end_user")
        .get(pk=request.pk)
    )
    if locked.status != VerificationRequest.Status.PENDING:
        raise Conflict(
            f"Verification {locked.request_id} was already {locked.status}.",
            code=ErrorCode.ALREADY_DECIDED,
        )
    return locked


def _decide(request: VerificationRequest, *, status: str, reviewer: Any, reason: str) -> None:
    request.status = status
    request.decided_by = reviewer
    request.decided_at = timezone.now()
    request.decision_reason = reason
    request.save()


@transaction.atomic
def verification_approve(
    *,
    request: VerificationRequest,
    reviewer: AbstractBaseUser,
    edits: Mapping[str, Any] | None = None,
    reason: str = "",
) -> VerificationRequest:
    """Write the held candidate (with the reviewer's edits) as a trusted short-term item.

    The edited text is redacted like any other; one of nothing but sensitive data is `Invalid`.
    A candidate the write policy now refuses (say, its session is gone) is a `Conflict`, and
    nothing is decided.
    """
    request = _locked_pending(request)
    unknown = set(edits or {}) - set(EDITABLE)
    if unknown:
        raise Invalid(
            f"Only {', '.join(EDITABLE)} can be edited.",
            fields={name: ["Not editable."] for name in sorted(unknown)},
        )
    summary = str((edits or {}).get("summary", request.summary)).strip()
    if not summary:
        raise Invalid("The summary cannot be empty.", fields={"summary": ["Required."]})
    if "profile_patch" in request.candidate:
        result_ref = _approve_profile(request, summary=summary, reviewer=reviewer)
        return _approved(
            request, summary=summary, item_id=result_ref, reviewer=reviewer, reason=reason
        )
    if "update_of" in request.candidate:
        item_id = _approve_update(request, summary=summary, reviewer=reviewer)
        return _approved(
            request, summary=summary, item_id=item_id, reviewer=reviewer, reason=reason
        )
    held = candidate_of(request.candidate)
    candidate = replace(
        held,
        summary=summary,
        source_kind=SourceKind.REVIEWER,
        trusted_writer=False,
        detail={
            **held.detail,
            "verification": {
                "request_id": request.request_id,
                "proposed_by": request.source_kind,
                "edited": summary != request.summary,
            },
        },
    )
    actor = Actor.staff(reviewer)
    try:
        (result,) = proposals_submit(tenant=request.tenant, candidates=[candidate], actor=actor)
    except Invalid as exc:  # the edited summary held nothing but sensitive data
        raise Invalid(exc.message, fields={"summary": ["Nothing but sensitive data."]}) from exc
    if result.outcome == Outcome.REFUSED:
        raise Conflict(
            f"The write policy refuses it now ({result.decision.refusal}); nothing was decided."
        )
    return _approved(
        request, summary=summary, item_id=result.item_id, reviewer=reviewer, reason=reason
    )


def _approve_update(request: VerificationRequest, *, summary: str, reviewer: Any) -> str:
    """Apply a held edit of an item (its new words approved, or edited, by the reviewer) to
    the item as it is now; `Conflict` when the item is gone, and nothing is decided."""
    document = request.candidate
    changes = {**document.get("changes", {}), "summary": summary}
    try:
        result = stm_item_update(
            tenant=request.tenant,
            item_id=document["update_of"],
            changes=ItemChanges(**changes),
            actor=Actor.staff(reviewer),
            source_kind=SourceKind.REVIEWER,
            screen=False,
        )
    except NotFound:
        raise Conflict(
            f"Memory {document['update_of']!r} is gone (expired, deleted or superseded); "
            "nothing was decided. Reject this request."
        ) from None
    return result.item.id


def profile_hold_record(*, tenant: Tenant, hold: ProfileHold, actor: Any) -> dict[str, str]:
    """Keep an untrusted writer's free-text profile value for a reviewer (the registered
    recorder of `profiles.services.profile_trust`). The same value for the same field held
    again finds its pending request; one a reviewer rejected is not queued again."""
    summary = _profile_summary(hold.value)
    digest = hashlib.sha256(f"{hold.external_id}\x00{hold.name}\x00{summary}".encode()).hexdigest()
    fingerprint = f"profile:{digest}"[:64]
    end_user = end_user_get_or_create(tenant=tenant, external_id=hold.external_id)
    requests = VerificationRequest.objects.filter(tenant=tenant, fingerprint=fingerprint)
    rejected = requests.filter(status=VerificationRequest.Status.REJECTED).first()
    if rejected is not None:
        return {"request_id": rejected.request_id, "status": rejected.status}
    pending = requests.filter(status=VerificationRequest.Status.PENDING).first()
    if pending is not None:
        return {"request_id": pending.request_id, "status": pending.status}
    request = VerificationRequest.objects.create(
        request_id=f"ver_{uuid.uuid4().hex[:20]}",
        tenant=tenant,
        end_user=end_user,
        memory_type=hold.memory_type,
        summary=summary,
        candidate={
            "profile_patch": hold.part,
            "user_id": hold.external_id,
            "field": hold.name,
            "value_is_text": isinstance(hold.value, str),
        },
        source_kind=SourceKind.PROPOSAL,
        hold_reason=hold.reason,
        requested_by=actor.name if actor is not None else "",
        confidence=confidence_ceiling(source_kind=SourceKind.PROPOSAL, trust=Trust.UNTRUSTED),
        fingerprint=fingerprint,
    )
    audit_record(
        tenant=tenant,
        action=Action.PROPOSE,
        actor=actor if actor is not None else Actor.job("profile"),
        object_type="verification_request",
        object_id=request.request_id,
        after={
            "memory_type": request.memory_type,
            "summary": request.summary,
            "field": hold.name,
            "hold_reason": request.hold_reason,
        },
        end_user_pk=end_user.pk,
    )
    return {"request_id": request.request_id, "status": request.status}


def _profile_summary(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _approve_profile(request: VerificationRequest, *, summary: str, reviewer: Any) -> str:
    """Write a held profile value (as shown, or with the reviewer's words for a text value)
    to the user's profile, as the reviewer's change."""
    document = request.candidate
    part = document["profile_patch"]
    if summary != request.summary:
        if not document.get("value_is_text"):
            raise Invalid(
                "Only a text value can be edited here; reject it and change the profile itself.",
                fields={"summary": ["Not editable for this value."]},
            )
        part = _with_value(part, summary)
    end_user = profile_update(
        tenant=request.tenant,
        external_id=document["user_id"],
        patch=ProfilePatch.of(part),
        staff=reviewer,
        source=Source.ADMIN,
    )
    return f"profile:{end_user.external_id}:{document.get('field', '')}"[:80]


def profile_hold_now(request: VerificationRequest) -> tuple[str, Any]:
    """The field a held profile value would change, and its stored value now (None if unset)."""
    document = request.candidate
    state = touched_state(
        end_user=request.end_user, patch=ProfilePatch.of(document["profile_patch"])
    )
    name = str(document["field"])
    return name, state.get(name)


def _with_value(part: dict[str, Any], value: str) -> dict[str, Any]:
    """The one-value patch `part` with its value replaced."""
    if part.get("profile"):
        (name,) = part["profile"]
        return {"profile": {name: value}}
    for kind in ("preferences", "facts"):
        if part.get(kind):
            return {kind: [{**part[kind][0], "value": value}]}
    return part


def _approved(
    request: VerificationRequest, *, summary: str, item_id: str, reviewer: Any, reason: str
) -> VerificationRequest:
    request.result_ref = item_id
    _decide(request, status=VerificationRequest.Status.APPROVED, reviewer=reviewer, reason=reason)
    audit_record(
        tenant=request.tenant,
        action=Action.APPROVE,
        actor=Actor.staff(reviewer),
        object_type="verification_request",
        object_id=request.request_id,
        before={"summary": request.summary},
        after={"summary": summary, "item_id": item_id},
        changes=changes_between({"summary": request.summary}, {"summary": summary}),
        reason=reason,
        end_user_pk=request.end_user_id,
    )
    return request


@transaction.atomic
def verification_reject(
    *, request: VerificationRequest, reviewer: AbstractBaseUser, reason: str
) -> VerificationRequest:
    """Keep the held candidate out for good: proposed again, it is refused."""
    if not reason.strip():
        raise Invalid("Say why it is rejected.", fields={"reason": ["Required."]})
    request = _locked_pending(request)
    _decide(
        request,
        status=VerificationRequest.Status.REJECTED,
        reviewer=reviewer,
        reason=reason.strip(),
    )
    audit_record(
        tenant=request.tenant,
        action=Action.REJECT,
        actor=Actor.staff(reviewer),
        object_type="verification_request",
        object_id=request.request_id,
        before={"summary": request.summary},
        reason=reason.strip(),
        end_user_pk=request.end_user_id,
    )
    return request
