"""The write path: redact, judge each candidate with the tenant's policy, upsert what passes."""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import transaction

from memories.audit.services import Action, Actor, AuditEntry, audit_record_many
from memories.facts import normalise_fact
from memories.policies.selectors import vocabulary_for
from memories.stm.items import StmItem
from memories.stm.store import RedisShortTermStore, UpsertResult, now_seconds, stm_store
from memories.vocabulary import Vocabulary, redactor_of
from memories.write.candidates import Candidate
from memories.write.policy import Decision, ExistingState, PolicySettings, decide, policy_for
from memories.write.redaction import RedactedCandidate, redact_candidate
from memories.write.statements import proposal_read
from memories.write.vectors import stm_vectors_schedule
from memoryproject.errors import Invalid, StoreUnavailable
from memoryproject.metrics import count_refusal
from memoryproject.redis_keys import Owner
from profiles.models import EndUser, Tenant
from profiles.services import end_users_get_or_create

NEARBY_ITEMS = 20
logger = logging.getLogger(__name__)


class Outcome:
    INSERTED = "inserted"
    MERGED = "merged"
    SUPERSEDED = "superseded"
    UNCHANGED = "unchanged"
    REFUSED = "refused"
    WOULD_WRITE = "would_write"  # dry run


@dataclass(frozen=True)
class ProposalResult:
    """What happened to one proposal: the decision, and the item it landed in."""

    decision: Decision
    outcome: str
    item_id: str = ""
    version: int = 0
    superseded_id: str = ""
    redacted: list[str] = field(default_factory=list)


def fingerprint_of(candidate: Candidate) -> str:
    """Near-duplicate key: hash of user + task + subtype + the normalised fact."""
    fact = normalise_fact(candidate.fact_value or candidate.summary)
    raw = "|".join((candidate.user_id, candidate.task_id, candidate.subtype, fact))
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def new_item_id(owner: Owner) -> str:
    """Item ids carry their end user's key, so a read finds the user (and tenant) first."""
    return f"stm_{owner.end_user_id}_{uuid.uuid4().hex[:16]}"


def proposals_submit(
    *,
    tenant: Tenant,
    candidates: Sequence[Candidate],
    dry_run: bool = False,
    actor: Actor | None = None,
    strict: bool = True,
) -> list[ProposalResult]:
    """Judge each candidate and land the accepted ones in short-term memory.

    Every candidate is redacted first. With `strict` (agents' proposals) a field that held
    nothing but sensitive content refuses the whole call (`Invalid` naming
    `proposals.<index>.<field>`, nothing written); otherwise (extraction) such a candidate is
    refused with `sensitive` and such entities or tags are left out. All accepted items of one
    call are upserted in one Redis transaction. A dry run decides exactly the same way and
    writes nothing, not even unknown end users.
    """
    settings = policy_for(tenant=tenant)
    vocabulary = vocabulary_for(tenant=tenant)
    redactor = redactor_of(vocabulary)
    redacted_all = [redact_candidate(raw, redactor=redactor) for raw in candidates]
    if strict:
        _refuse_sensitive(redacted_all)
    store = stm_store()
    now = now_seconds()
    if dry_run:
        owners = _owners(tenant=tenant, user_ids={c.user_id for c in candidates}, create=False)
        decided = _decide_all(
            redacted_all,
            owners=owners,
            store=store,
            now=now,
            settings=settings,
            vocabulary=vocabulary,
        )
        return _results(decided, [], dry_run=True)

    # End users, the upsert and its audit land together: the end users and the audit events
    # are one PostgreSQL transaction, the upsert its last step before the audit; when the
    # audit or the commit fails after the upsert landed, the upsert is undone, so a failure
    # at any step leaves no end user, audit event or item behind.
    to_write: list[StmItem] = []
    written: list[UpsertResult] = []
    try:
        with transaction.atomic():
            owners = _owners(tenant=tenant, user_ids={c.user_id for c in candidates}, create=True)
            decided = _decide_all(
                redacted_all,
                owners=owners,
                store=store,
                now=now,
                settings=settings,
                vocabulary=vocabulary,
            )
            to_write = [item for _, item, _ in decided if item is not None]
            # Distinct timestamps keep index scores (and so paging cursors) unique in a batch.
            for offset, item in enumerate(to_write):
                item.created_at = item.updated_at = item.last_access_at = now + offset * 1e-4
            written = store.upsert(items=to_write, now=now)
            results = _results(decided, written, dry_run=False)
            _audit_writes(tenant, [item for _, item, _ in decided], results, actor)
    except BaseException:
        if written:
            _undo(store, to_write, written)
        raise
    for redaction, (decision, _, _) in zip(redacted_all, decided, strict=True):
        if not decision.accepted:
            count_refusal(source=redaction.candidate.source_kind, reason=decision.refusal)
    stm_vectors_schedule(
        tenant_id=tenant.pk,
        items=[
            (item.end_user_id, result.item_id)
            for item, result in zip(to_write, written, strict=True)
            if result.outcome != "unchanged"
        ],
    )
    return results


Decided = list[tuple[Decision, StmItem | None, list[str]]]


def _decide_all(
    redacted_all: Sequence[RedactedCandidate],
    *,
    owners: dict[str, Owner],
    store: RedisShortTermStore,
    now: float,
    settings: PolicySettings,
    vocabulary: Vocabulary,
) -> Decided:
    decided: Decided = []
    seen_in_batch: set[tuple[str, str]] = set()
    for redaction in redacted_all:
        candidate, redacted = redaction.candidate, redaction.kinds
        candidate = proposal_read(candidate, vocabulary)  # judged as the same words in a transcript
        owner = owners.get(candidate.user_id)
        fingerprint = fingerprint_of(candidate)
        existing, request = _existing_state(
            store=store, owner=owner, candidate=candidate, fp=fingerprint, now=now
        )
        if request and not candidate.detail.get("request"):
            # said again plainly, the fact keeps the remember request it was first asked with
            candidate = replace(candidate, detail={**candidate.detail, "request": request})
        if (candidate.user_id, fingerprint) in seen_in_batch:
            existing = ExistingState(same_fact=True)
        decision = decide(candidate, existing=existing, settings=settings, vocabulary=vocabulary)
        if redaction.nothing_left:
            decision = replace(decision, accepted=False, refusal="sensitive")
        item = None
        if decision.accepted and owner is not None:
            seen_in_batch.add((candidate.user_id, fingerprint))
            item = _item_for(candidate, owner=owner, fp=fingerprint, decision=decision, now=now)
        decided.append((decision, item, sorted(redacted)))
    return decided


def _results(
    decided: Decided, written: Sequence[UpsertResult], *, dry_run: bool
) -> list[ProposalResult]:
    upserts = iter(written)
    results = []
    for decision, item, removed in decided:
        if not decision.accepted:
            results.append(ProposalResult(decision, Outcome.REFUSED, redacted=removed))
        elif dry_run or item is None:
            results.append(ProposalResult(decision, Outcome.WOULD_WRITE, redacted=removed))
        else:
            upserted = next(upserts)
            results.append(
                ProposalResult(
                    decision,
                    upserted.outcome,
                    item_id=upserted.item_id,
                    version=upserted.version,
                    superseded_id=upserted.superseded_id,
                    redacted=removed,
                )
            )
    return results


def _undo(
    store: RedisShortTermStore, items: Sequence[StmItem], written: Sequence[UpsertResult]
) -> None:
    try:
        store.undo_upserts(items=items, results=written)
    except StoreUnavailable:
        logger.error(
            "could not undo %d short-term upserts after a failed submit: %s",
            len(written),
            ", ".join(r.item_id for r in written),
            exc_info=True,
        )


def _refuse_sensitive(redacted: Sequence[RedactedCandidate]) -> None:
    fields = {
        f"proposals.{index}.{path}": ["Holds nothing but sensitive data (redacted), so not stored."]
        for index, one in enumerate(redacted)
        for path in one.emptied
    }
    if fields:
        raise Invalid("A proposal holds nothing but sensitive data.", fields=fields)


AUDITED_OUTCOMES = {
    Outcome.INSERTED: Action.CREATE,
    Outcome.MERGED: Action.MERGE,
    Outcome.SUPERSEDED: Action.SUPERSEDE,
}


def _audit_writes(
    tenant: Tenant,
    items: Sequence[StmItem | None],
    results: Sequence[ProposalResult],
    actor: Actor | None,
) -> None:
    """One audit event per user and kind of change, naming every item it changed."""
    changed: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for item, result in zip(items, results, strict=True):
        action = AUDITED_OUTCOMES.get(result.outcome)
        if item is None or action is None:
            continue
        changed.setdefault((item.end_user_id, action), []).append(
            {"id": result.item_id, "version": result.version, "supersedes": result.superseded_id}
        )
    audit_record_many(
        tenant=tenant,
        actor=actor or Actor.job("extraction"),
        entries=[
            AuditEntry(
                action=action,
                object_type="stm_item",
                object_id=",".join(e["id"] for e in entries)[:200],
                after=entries,
                end_user_pk=end_user_pk,
                details={"items": entries},
            )
            for (end_user_pk, action), entries in changed.items()
        ],
    )


def _owners(*, tenant: Tenant, user_ids: set[str], create: bool) -> dict[str, Owner]:
    if create:
        users = list(end_users_get_or_create(tenant=tenant, external_ids=user_ids).values())
    else:
        users = list(EndUser.objects.filter(tenant=tenant, external_id__in=user_ids))
    return {u.external_id: Owner(tenant.pk, u.pk) for u in users}


def _existing_state(
    *, store: RedisShortTermStore, owner: Owner | None, candidate: Candidate, fp: str, now: float
) -> tuple[ExistingState, str]:
    """What the store holds that bears on the candidate, and the remember request
    (`detail.request`) of the live item it repeats, if any."""
    if owner is None:
        return ExistingState(), ""
    found = store.lookup(
        owner=owner, fingerprint=fp, canonical_fact_key=candidate.canonical_fact_key
    )
    matches = {
        how: item
        for how, item_id in found.items()
        if (item := store.get(owner=owner, item_id=item_id)) is not None and item.is_live(now)
    }
    by_key = matches.get("canonical")
    updates = bool(
        by_key
        and candidate.fact_value
        and by_key.fact_value
        and by_key.fact_value != candidate.fact_value
    )
    same = not updates and bool(matches)
    hits = max((item.hit_count for item in matches.values()), default=0) if same else 0
    asked = [str(item.detail.get("request") or "") for item in matches.values()] if same else []
    index, value = (
        ("task", candidate.task_id) if candidate.task_id else ("session", candidate.session_id)
    )
    nearby_ids = [
        i for i, _ in store.ids_by_index(owner=owner, index=index, value=value, limit=NEARBY_ITEMS)
    ]
    nearby = [i.summary for i in store.get_many(owner=owner, item_ids=nearby_ids) if i.is_live(now)]
    existing = ExistingState(
        same_fact=same, updates_fact=updates, nearby_summaries=nearby, hits=hits
    )
    return existing, next((request for request in asked if request), "")


def _item_for(
    candidate: Candidate, *, owner: Owner, fp: str, decision: Decision, now: float
) -> StmItem:
    return StmItem(
        id=new_item_id(owner),
        tenant_id=owner.tenant_id,
        end_user_id=owner.end_user_id,
        user_id=candidate.user_id,
        session_id=candidate.session_id,
        task_id=candidate.task_id,
        memory_type=candidate.memory_type,
        subtype=candidate.subtype,
        summary=candidate.summary.strip(),
        detail=dict(candidate.detail),
        entities=list(candidate.entities),
        tags=list(candidate.tags),
        source={
            "kind": candidate.source_kind,
            "message_ids": list(candidate.message_ids),
            "tool_call_ids": list(candidate.tool_call_ids),
        },
        confidence=candidate.confidence,
        importance=max(candidate.importance, 0.9) if candidate.remember else candidate.importance,
        created_at=now,
        updated_at=now,
        last_access_at=now,
        expires_at=now + decision.ttl_minutes * 60,
        fingerprint=fp,
        fingerprints=[fp],
        canonical_fact_key=candidate.canonical_fact_key,
        fact_value=candidate.fact_value,
        sessions=[candidate.session_id] if candidate.session_id else [],
        verified=candidate.verified,
        remember=candidate.remember,
    )
