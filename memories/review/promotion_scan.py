"""Promotion proposals: a scan over short-term memory finds the items that qualify, checks the
triggers and gates, and records a request for a reviewer; it never promotes anything itself.

An item that fills a domain key is proposed as a profile fact (a preference or stable fact in
PostgreSQL, `PromotionRequest.Path.POSTGRES`); anything else as a long-term card
(`Path.LTM`). Reviewers decide in `memories.review.promotion`.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.db import IntegrityError, transaction

from memories.audit.services import Action, Actor, audit_record
from memories.ltm.models import LtmCard
from memories.policies.models import PromotionPolicy
from memories.quarantine.services import proposal_held
from memories.review.models import PromotionRequest, ReviewStatus
from memories.stm.items import MemoryType, StmItem
from memories.stm.store import now_seconds, stm_store
from memoryproject.errors import StoreUnavailable
from memoryproject.redaction import Report, redactor_for
from memoryproject.redis_keys import Owner
from profiles.domains import FACT_DOMAINS, PREFERENCE_DOMAINS, key_problem
from profiles.models import EndUser, StableFact, Tenant, UserPreference

# Task-local state: what belongs to the task at hand, never to long-term memory.
TASK_LOCAL_TYPES = (MemoryType.HYPOTHESIS, MemoryType.OBSERVATION)
TASK_LOCAL_SUBTYPES = ("tool_result", "exclusion", "conclusion", "next_step", "progress")
NEXT_STEP_WORDS = ("下一步", "接下来", "next step", "next, ", "then check", "待办", "todo")
CARD_TYPE_FOR = {
    MemoryType.PREFERENCE: LtmCard.Type.PREFERENCE,
    MemoryType.DECISION: LtmCard.Type.SEMANTIC_FACT,
    MemoryType.CONSTRAINT: LtmCard.Type.SEMANTIC_FACT,
    MemoryType.FACT: LtmCard.Type.SEMANTIC_FACT,
}


class Trigger:
    HITS = "hits"
    CROSS_SESSION = "cross_session"
    REMEMBER = "remember"
    STABLE_PROFILE = "stable_profile"


@dataclass(frozen=True)
class TriggerCheck:
    """Whether an item should be proposed, by which path, and why (or why not)."""

    propose: bool
    path: str
    triggers: dict[str, str] = field(default_factory=dict)
    blocked: str = ""


def domain_key_of(item: StmItem) -> str:
    """The item's Layer 1 key (`preference.answer_style`) if its fact fills one, else ''."""
    key = item.canonical_fact_key
    if key and item.fact_value and key_problem(key, domains=FACT_DOMAINS) is None:
        return key
    return ""


def task_local_reason(item: StmItem) -> str:
    """Why the item is state of the current task ('' when it is general)."""
    if item.memory_type in TASK_LOCAL_TYPES:
        return f"a {item.memory_type} belongs to the task at hand"
    if item.subtype in TASK_LOCAL_SUBTYPES:
        return f"a {item.subtype} is task-local"
    if item.source.get("kind") == "tool":
        return "a tool result belongs to the task at hand"
    text = item.summary.lower()
    if any(word in text for word in NEXT_STEP_WORDS):
        return "a next step of the current task"
    if item.task_id:
        task = item.task_id.lower()
        named = task in text or task in (e.lower() for e in item.entities)
        if named or item.canonical_fact_key.lower().startswith(f"{task}:"):
            return f"about task {item.task_id} only"
    return ""


def promotion_triggers(item: StmItem, *, policy: PromotionPolicy, now: float) -> TriggerCheck:
    """Apply the design's triggers: at least one must fire and no gate may block."""
    key = domain_key_of(item)
    path = PromotionRequest.Path.POSTGRES if key else PromotionRequest.Path.LTM
    triggers: dict[str, str] = {}
    hits = item.hit_count + item.recall_count
    if hits >= policy.min_hits:
        triggers[Trigger.HITS] = (
            f"written {item.hit_count}× and recalled {item.recall_count}× (≥ {policy.min_hits})"
        )
    if len(item.sessions) >= policy.min_sessions:
        triggers[Trigger.CROSS_SESSION] = (
            f"seen in {len(item.sessions)} sessions (≥ {policy.min_sessions})"
        )
    if item.remember:
        triggers[Trigger.REMEMBER] = "the user asked to remember it"
    if key:
        triggers[Trigger.STABLE_PROFILE] = f"fills the structured key {key}"
    elif item.memory_type == MemoryType.PREFERENCE:
        triggers[Trigger.STABLE_PROFILE] = "a long-term preference of the user"
    age_hours = (now - item.created_at) / 3600
    blocked = ""
    if not item.is_live(now):
        blocked = "no longer active"
    elif reason := task_local_reason(item):
        blocked = reason
    elif item.confidence < policy.min_confidence:
        blocked = f"confidence {item.confidence:.2f} < {policy.min_confidence:.2f}"
    elif age_hours < policy.min_age_hours and not item.remember:
        blocked = f"alive {age_hours:.1f} h < {policy.min_age_hours:g} h"
    elif not triggers:
        blocked = "no trigger fired"
    return TriggerCheck(propose=not blocked, path=path, triggers=triggers, blocked=blocked)


def _canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def promotion_fingerprint(*, end_user_pk: int | None, path: str, what: Any) -> str:
    raw = b"|".join([path.encode(), str(end_user_pk or "").encode(), _canonical(what)])
    return hashlib.sha256(raw).hexdigest()


def _item_fingerprint(item: StmItem, path: str) -> str:
    if path == PromotionRequest.Path.POSTGRES:
        return promotion_fingerprint(
            end_user_pk=item.end_user_id,
            path=path,
            what=[item.canonical_fact_key, item.fact_value],
        )
    return promotion_fingerprint(end_user_pk=item.end_user_id, path=path, what=item.fingerprint)


def _proposal_for(item: StmItem, path: str) -> dict[str, Any]:
    if path == PromotionRequest.Path.POSTGRES:
        key = item.canonical_fact_key
        target = "preference" if key.split(".", 1)[0] in PREFERENCE_DOMAINS else "fact"
        return {"key": key, "value": item.fact_value, "target": target}
    text = str(item.detail.get("text") or item.summary)
    if item.detail.get("request"):
        # the text as said is the statement plus "please remember that": nothing to add
        text = item.summary
    return {
        "memory_type": CARD_TYPE_FOR.get(item.memory_type, LtmCard.Type.SEMANTIC_FACT),
        "title": item.summary[:80],
        "summary": item.summary,
        "content": text if text != item.summary else "",
        "entities": list(item.entities),
        "tags": sorted({*item.tags, "promoted"}),
        "importance": item.importance,
        "confidence": item.confidence,
    }


def _evidence_for(item: StmItem, check: TriggerCheck, now: float) -> dict[str, Any]:
    return {
        "stm_item_ids": [item.id],
        "message_ids": item.message_ids,
        "tool_call_ids": list(item.source.get("tool_call_ids", [])),
        "sessions": list(item.sessions or [item.session_id]),
        "triggers": check.triggers,
        "hits": item.hit_count,
        "recalls": item.recall_count,
        "age_hours": round((now - item.created_at) / 3600, 2),
        **({"said_at": str(item.detail["said_at"])} if item.detail.get("said_at") else {}),
        "item": {
            "summary": item.summary,
            "memory_type": item.memory_type,
            "subtype": item.subtype,
            "task_id": item.task_id,
            "canonical_fact_key": item.canonical_fact_key,
            "fact_value": item.fact_value,
            "version": item.version,
            "source_kind": item.source_kind,
            "trust": item.trust,
        },
    }


def current_value(*, end_user: EndUser, key: str, target: str) -> dict[str, Any]:
    row: UserPreference | StableFact | None
    if target == "preference":
        row = UserPreference.objects.filter(end_user=end_user, key=key, is_current=True).first()
    else:
        row = StableFact.objects.filter(
            end_user=end_user, scope=StableFact.Scope.USER, key=key, is_current=True
        ).first()
    if row is None:
        return {"current": None}
    return {"current": {"value": row.value, "version": row.version, "source": row.source}}


def similar_cards(*, tenant: Tenant, end_user: EndUser, text: str, k: int) -> dict[str, Any]:
    """The user's (and shared) cards nearest to `text`, for the reviewer to compare and merge."""
    from memories.ltm.selectors import ltm_search

    try:
        result = ltm_search(tenant=tenant, query=text, k=k, user_id=end_user.external_id)
    except StoreUnavailable as exc:
        return {"similar": [], "unavailable": str(exc)[:200]}
    return {
        "similar": [
            {
                "memory_id": hit.memory_id,
                "title": hit.card.get("title", ""),
                "summary": hit.card.get("summary", ""),
                "score": round(hit.score, 4),
            }
            for hit in result.hits
        ]
    }


def _has_new_evidence(item: StmItem, rejected: PromotionRequest) -> bool:
    """A rejected proposal comes back only with messages or sessions it did not have."""
    old = rejected.evidence
    return bool(
        set(item.message_ids) - set(old.get("message_ids", []))
        or set(item.sessions) - set(old.get("sessions", []))
    )


def proposal_blocked(
    *, tenant: Tenant, fingerprint: str, new_evidence: Callable[[PromotionRequest], bool]
) -> bool:
    """Whether the latest proposal of this fingerprint is pending or approved, or was
    rejected and `new_evidence` finds nothing it did not have."""
    latest = (
        PromotionRequest.objects.filter(tenant=tenant, fingerprint=fingerprint)
        .order_by("-created_at")
        .first()
    )
    if latest is None:
        return False
    if latest.status in (ReviewStatus.PENDING, ReviewStatus.APPROVED):
        return True
    return not new_evidence(latest)


def redact_proposal(request: PromotionRequest) -> bool:
    """Redact a new proposal's text and evidence in place (items written before redaction
    covered every field may still hold raw values); False when nothing would be left of it."""
    redactor = redactor_for(request.tenant)
    report = Report()
    context = str(request.proposal.get("key", ""))
    request.proposal = redactor.value(request.proposal, path="", report=report, context=context)
    request.evidence = redactor.value(request.evidence, path="", report=Report())
    request.existing = redactor.value(request.existing, path="", report=Report())
    essential = (".value", ".summary")
    return not any(path in essential for path in report.emptied)


def proposal_record(
    request: PromotionRequest, *, actor: Actor, details: Mapping[str, Any]
) -> PromotionRequest | None:
    """Save a proposal with its audit event; None when the same one was proposed meanwhile,
    when it would hold nothing but sensitive data, or when it is held for review because it
    reads as an instruction to the model."""
    if not redact_proposal(request):
        return None
    if proposal_held(
        tenant=request.tenant,
        fingerprint=request.fingerprint,
        proposal=request.proposal,
        user_id=request.end_user.external_id if request.end_user else "",
        origin=request.origin,
    ):
        return None
    try:
        with transaction.atomic():
            request.save()
            audit_record(
                tenant=request.tenant,
                action=Action.PROPOSE,
                actor=actor,
                object_type="promotion_request",
                object_id=request.request_id,
                after=request.proposal,
                end_user_pk=request.end_user_id,
                details=details,
            )
    except IntegrityError:  # one pending request per fingerprint
        return None
    return request


def new_request_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def promotion_propose(
    *, tenant: Tenant, item: StmItem, check: TriggerCheck, policy: PromotionPolicy, now: float
) -> PromotionRequest | None:
    """Record a proposal for one item, unless one is pending, approved or was rejected
    without new evidence since. Returns the new request, if any."""
    fingerprint = _item_fingerprint(item, check.path)
    if proposal_blocked(
        tenant=tenant,
        fingerprint=fingerprint,
        new_evidence=lambda rejected: _has_new_evidence(item, rejected),
    ):
        return None
    end_user = EndUser.objects.filter(tenant=tenant, pk=item.end_user_id).first()
    if end_user is None:
        return None
    proposal = _proposal_for(item, check.path)
    if check.path == PromotionRequest.Path.POSTGRES:
        existing = current_value(end_user=end_user, key=proposal["key"], target=proposal["target"])
        current = existing["current"]
        if current is not None and current["value"] == proposal["value"]:
            return None  # PostgreSQL holds it already
    else:
        existing = similar_cards(
            tenant=tenant, end_user=end_user, text=item.summary, k=policy.similar_cards
        )
    request = PromotionRequest(
        request_id=new_request_id("prm"),
        tenant=tenant,
        end_user=end_user,
        path=check.path,
        origin=PromotionRequest.Origin.SCAN,
        memory_type=item.memory_type,
        proposal=proposal,
        evidence=_evidence_for(item, check, now),
        existing=existing,
        confidence=item.confidence,
        fingerprint=fingerprint,
    )
    return proposal_record(
        request,
        actor=Actor.job("promotion_scan"),
        details={"path": check.path, "triggers": sorted(check.triggers)},
    )


@dataclass(frozen=True)
class ScanResult:
    examined: int
    proposed: int
    next_cursor: int  # 0 when the whole of short-term memory was scanned


def owners_with_policy(
    *, cursor: int, owners: int, tenant: Tenant | None
) -> tuple[int, list[tuple[Owner, Tenant, PromotionPolicy]]]:
    """One page of the users holding short-term items, each with its active tenant and that
    tenant's promotion policy; the next cursor is 0 once every user was paged."""
    store = stm_store()
    next_cursor, page = store.owners_page(cursor=cursor, count=owners)
    if tenant is not None:
        page = [o for o in page if o.tenant_id == tenant.pk]
        # Other tenants' users do not fill a page of this tenant's: read on until it is full.
        while next_cursor and len(page) < owners:
            next_cursor, more = store.owners_page(cursor=next_cursor, count=owners)
            page += [o for o in more if o.tenant_id == tenant.pk]
    tenants = Tenant.objects.in_bulk({o.tenant_id for o in page})
    policies = {p.tenant_id: p for p in PromotionPolicy.objects.filter(tenant_id__in=list(tenants))}
    found = []
    for owner in page:
        owner_tenant = tenants.get(owner.tenant_id)
        if owner_tenant is not None and owner_tenant.is_active:
            policy = policies.get(owner.tenant_id) or PromotionPolicy(tenant=owner_tenant)
            found.append((owner, owner_tenant, policy))
    return next_cursor, found


def promotion_scan(
    *, now: float | None = None, cursor: int = 0, owners: int = 200, tenant: Tenant | None = None
) -> ScanResult:
    """Examine the short-term items of up to about `owners` users and propose what qualifies."""
    now = now if now is not None else now_seconds()
    store = stm_store()
    next_cursor, page = owners_with_policy(cursor=cursor, owners=owners, tenant=tenant)
    examined = proposed = 0
    for owner, owner_tenant, policy in page:
        for item in store.items_of(owner=owner):
            examined += 1
            check = promotion_triggers(item, policy=policy, now=now)
            if check.propose and promotion_propose(
                tenant=owner_tenant, item=item, check=check, policy=policy, now=now
            ):
                proposed += 1
    return ScanResult(examined=examined, proposed=proposed, next_cursor=next_cursor)
