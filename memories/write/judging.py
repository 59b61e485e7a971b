"""Judging proposals: each candidate read as the same words in a transcript, capped at its
source's confidence, compared with what short-term memory holds and decided by the tenant's
write policy; an accepted one becomes the item to write, an untrusted rule waits for a
reviewer."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memories.facts import normalise_fact
from memories.stm.items import StmItem
from memories.stm.store import RedisShortTermStore
from memories.vocabulary import Vocabulary
from memories.write.candidates import Candidate
from memories.write.models import VerificationRequest
from memories.write.policy import Decision, ExistingState, PolicySettings, decide
from memories.write.redaction import RedactedCandidate
from memories.write.statements import proposal_read
from memories.write.supersede import REPLACEABLE_TYPES, replaceable, replaced_statement
from memories.write.trust import confidence_ceiling, hold_reason, trust_of
from memoryproject.quarantine import Finding
from memoryproject.redis_keys import Owner

NEARBY_ITEMS = 20
# The newest live statements of each replaceable type a new statement is compared with.
LIVE_STATEMENTS = 100


def fingerprint_of(candidate: Candidate) -> str:
    """Near-duplicate key: hash of user + task + subtype + the normalised fact."""
    fact = normalise_fact(candidate.fact_value or candidate.summary)
    raw = "|".join((candidate.user_id, candidate.task_id, candidate.subtype, fact))
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def new_item_id(owner: Owner) -> str:
    """Item ids carry their end user's key, so a read finds the user (and tenant) first."""
    return f"stm_{owner.end_user_id}_{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True)
class _Decided:
    """One candidate as judged: the decision, the item to write (none while held), and whose
    word it is."""

    decision: Decision
    item: StmItem | None
    redacted: list[str]
    source_kind: str
    trust: str
    hold_reason: str = ""
    held: Candidate | None = None  # what a reviewer approves, as read before any ceiling
    owner: Owner | None = None
    fingerprint: str = ""


Decided = list[_Decided]


def decide_all(
    redacted_all: Sequence[RedactedCandidate],
    *,
    owners: dict[str, Owner],
    store: RedisShortTermStore,
    now: float,
    settings: PolicySettings,
    vocabulary: Vocabulary,
    quarantined: dict[int, Finding],
) -> Decided:
    decided: Decided = []
    seen_in_batch: set[tuple[str, str]] = set()
    statements = _LiveStatements()
    for index, redaction in enumerate(redacted_all):
        candidate, redacted = redaction.candidate, redaction.kinds
        candidate = proposal_read(candidate, vocabulary)  # judged as the same words in a transcript
        read = candidate
        trust = trust_of(source_kind=candidate.source_kind, trusted_writer=candidate.trusted_writer)
        # A source claims no more confidence than the design gives it (user > tool > model).
        ceiling = confidence_ceiling(source_kind=candidate.source_kind, trust=trust)
        if candidate.confidence > ceiling:
            candidate = replace(candidate, confidence=ceiling)
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
        elif index in quarantined:
            # the refusal code is the outcome the submit reports (`Outcome.QUARANTINED`)
            decision = replace(decision, accepted=False, refusal="quarantined")
        # An untrusted constraint, preference or profile fact waits for a reviewer.
        hold = hold_reason(candidate, trust=trust) if decision.accepted else ""
        held_fp = f"{fingerprint}:{candidate.memory_type}"
        if hold and owner is not None and _rejected_before(owner, held_fp):
            decision = replace(decision, accepted=False, refusal="rejected_in_verification")
            hold = ""
        item = None
        if decision.accepted and owner is not None and not hold:
            seen_in_batch.add((candidate.user_id, fingerprint))
            item = _item_for(
                candidate, owner=owner, fp=fingerprint, decision=decision, now=now, trust=trust
            )
            # Only a user's own unkeyed statement may replace one: nothing else reads Redis here.
            if replaceable(item) and not (existing.same_fact or existing.updates_fact):
                earlier = statements.of(store, owner, now)
                replaced = replaced_statement(item, earlier, vocabulary)
                if replaced is not None:
                    item.supersedes = replaced.id
                earlier.insert(0, item)  # a later candidate of the batch may replace it
        decided.append(
            _Decided(
                decision,
                item,
                sorted(redacted),
                candidate.source_kind,
                trust,
                hold_reason=hold,
                held=read if hold else None,
                owner=owner,
                fingerprint=held_fp,
            )
        )
    return decided


def _rejected_before(owner: Owner, fingerprint: str) -> bool:
    """Whether a reviewer already rejected this candidate for this user."""
    return VerificationRequest.objects.filter(
        tenant_id=owner.tenant_id,
        end_user_id=owner.end_user_id,
        fingerprint=fingerprint,
        status=VerificationRequest.Status.REJECTED,
    ).exists()


class _LiveStatements:
    """Each user's live statements that a new one may replace, read once per batch."""

    def __init__(self) -> None:
        self._by_owner: dict[Owner, list[StmItem]] = {}

    def of(self, store: RedisShortTermStore, owner: Owner, now: float) -> list[StmItem]:
        if owner not in self._by_owner:
            heads = store.index_heads(
                owner=owner,
                indexes=[("type", kind, LIVE_STATEMENTS) for kind in sorted(REPLACEABLE_TYPES)],
            )
            ids = [item_id for rows in heads for item_id, _ in rows]
            items = [i for i in store.get_many(owner=owner, item_ids=ids) if i.is_live(now)]
            self._by_owner[owner] = sorted(items, key=lambda i: -i.updated_at)
        return self._by_owner[owner]


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
    candidate: Candidate, *, owner: Owner, fp: str, decision: Decision, now: float, trust: str
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
        trust=trust,
    )
