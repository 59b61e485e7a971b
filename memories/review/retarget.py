"""Retargeting: a reviewer moves a pending proposal between a profile fact (a preference or
stable fact under a domain key) and a long-term card, or to another domain key.

The proposal stays pending; the reviewer decides it afterwards, with the current value of the
new key (a profile fact) or the nearest cards (a card) in front of them.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from memories.audit.services import Action, Actor, audit_record
from memories.ltm.models import LtmCard
from memories.policies.models import PromotionPolicy
from memories.review.models import PromotionRequest
from memories.review.promotion import locked_pending
from memories.review.promotion_scan import (
    CARD_TYPE_FOR,
    current_value,
    promotion_fingerprint,
    similar_cards,
)
from memoryproject.errors import Conflict, ErrorCode, Invalid
from memoryproject.redaction import Report, redactor_for
from profiles.domains import FACT_DOMAINS, PREFERENCE_DOMAINS, key_problem

Path = PromotionRequest.Path


def _card_from(request: PromotionRequest) -> dict[str, Any]:
    """A card proposal from the profile fact proposed and the item it came from."""
    item, proposal = request.evidence.get("item") or {}, request.proposal
    summary = str(item.get("summary") or f"{proposal.get('key')}: {proposal.get('value')}")
    return {
        "memory_type": CARD_TYPE_FOR.get(request.memory_type, LtmCard.Type.SEMANTIC_FACT),
        "title": summary[:80],
        "summary": summary,
        "content": "",
        "entities": [],
        "tags": ["promoted"],
        "importance": 0.5,
        "confidence": request.confidence,
    }


def _fact_from(request: PromotionRequest, key: str, value: Any) -> dict[str, Any]:
    item, proposal = request.evidence.get("item") or {}, request.proposal
    if value in ("", None):
        same_key = item.get("canonical_fact_key") == key or proposal.get("key") == key
        value = (
            proposal.get("value")
            if proposal.get("key") == key
            else item.get("fact_value")
            if same_key and item.get("fact_value")
            else proposal.get("summary") or item.get("summary", "")
        )
    target = "preference" if key.split(".", 1)[0] in PREFERENCE_DOMAINS else "fact"
    return {"key": key, "value": value, "target": target}


def promotion_retarget(
    *,
    request: PromotionRequest,
    reviewer: AbstractBaseUser,
    path: str,
    key: str = "",
    value: Any = None,
) -> PromotionRequest:
    """Move a pending proposal to `path` (for a profile fact under `key`, with `value` or the
    value the evidence holds); refreshes what exists already and records a `retarget` audit
    event."""
    if path not in Path.values:
        raise Invalid("Unknown path.", fields={"path": ["Use postgres or ltm."]})
    if path == Path.POSTGRES:
        problem = key_problem(key, domains=FACT_DOMAINS) if key else "is required"
        if problem:
            raise Invalid(f"The key {problem}.", fields={"key": [f"The key {problem}."]})
    if path == request.path and (path == Path.LTM or key == request.proposal.get("key")):
        raise Invalid("The proposal is there already.", fields={"path": ["Nothing to change."]})
    end_user = request.end_user
    if end_user is None:
        raise Conflict("The end user of this proposal no longer exists.", code=ErrorCode.USER_GONE)
    proposal = _fact_from(request, key, value) if path == Path.POSTGRES else _card_from(request)
    report = Report()
    proposal = redactor_for(request.tenant).value(
        proposal, path="", report=report, context=str(proposal.get("key", ""))
    )
    if any(p in (".value", ".summary") for p in report.emptied):
        raise Invalid("Nothing but sensitive data would be left.", fields={"value": ["Empty."]})
    # Outside systems are read before the transaction (a card's nearest cards).
    if path == Path.LTM:
        policy = PromotionPolicy.objects.filter(tenant=request.tenant).first()
        k = policy.similar_cards if policy else PromotionPolicy().similar_cards
        existing = similar_cards(
            tenant=request.tenant, end_user=end_user, text=proposal["summary"], k=k
        )
        what: Any = proposal["summary"].strip().lower()
    else:
        existing = {}
        what = [proposal["key"], proposal["value"]]
    return _save(request, reviewer, path, proposal, existing, what)


@transaction.atomic
def _save(
    request: PromotionRequest,
    reviewer: AbstractBaseUser,
    path: str,
    proposal: dict[str, Any],
    existing: dict[str, Any],
    what: Any,
) -> PromotionRequest:
    request = locked_pending(request)
    before = {"path": request.path, "proposal": request.proposal}
    if path == Path.POSTGRES:
        assert request.end_user is not None
        existing = current_value(
            end_user=request.end_user, key=proposal["key"], target=proposal["target"]
        )
    request.path, request.proposal, request.existing = path, proposal, existing
    request.fingerprint = promotion_fingerprint(
        end_user_pk=request.end_user_id, path=path, what=what
    )
    try:
        with transaction.atomic():
            request.save()
    except IntegrityError:
        raise Conflict(
            "Another pending proposal promotes the same thing already.", code=ErrorCode.DUPLICATE
        ) from None
    audit_record(
        tenant=request.tenant,
        action=Action.RETARGET,
        actor=Actor.staff(reviewer),
        object_type="promotion_request",
        object_id=request.request_id,
        before=before,
        after={"path": path, "proposal": proposal},
        end_user_pk=request.end_user_id,
        details={"from": before["path"], "to": path, "key": proposal.get("key", "")},
    )
    return request
