"""The write path: redact, judge each candidate with the tenant's policy (`judging`), hold back
what waits for a reviewer or reads as an instruction, upsert what passes, audit it."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from dataclasses import fields as dataclass_fields
from typing import Any

from django.db import transaction

from memories.audit.services import Action, Actor, AuditEntry, audit_record_many
from memories.policies.selectors import vocabulary_for
from memories.quarantine.services import released_refs
from memories.stm.items import StmItem
from memories.stm.store import RedisShortTermStore, UpsertResult, now_seconds, stm_store
from memories.vocabulary import Vocabulary, redactor_of, screen_of
from memories.write.candidates import Candidate, SourceKind
from memories.write.judging import Decided, decide_all, fingerprint_of
from memories.write.models import VerificationRequest
from memories.write.policy import Decision, policy_for
from memories.write.redaction import RedactedCandidate, redact_candidate
from memories.write.vectors import stm_vectors_schedule
from memoryproject.errors import Invalid, StoreUnavailable
from memoryproject.metrics import count_refusal
from memoryproject.quarantine import Finding, WritePath, held_view, hold
from memoryproject.redis_keys import Owner
from profiles.models import EndUser, Tenant
from profiles.services.end_users import end_users_get_or_create

logger = logging.getLogger(__name__)


class Outcome:
    INSERTED = "inserted"
    MERGED = "merged"
    SUPERSEDED = "superseded"
    UNCHANGED = "unchanged"
    REFUSED = "refused"
    HELD = "held_for_verification"  # an untrusted rule: stored for a reviewer, not written
    QUARANTINED = "quarantined"  # it reads as an instruction to the model: held for review
    WOULD_WRITE = "would_write"  # dry run
    WOULD_HOLD = "would_hold"  # dry run


@dataclass(frozen=True)
class ProposalResult:
    """What happened to one proposal: the decision, and the item it landed in."""

    decision: Decision
    outcome: str
    item_id: str = ""
    version: int = 0
    superseded_id: str = ""
    redacted: list[str] = field(default_factory=list)
    source_kind: str = ""
    trust: str = ""
    hold_reason: str = ""  # why it waits for a reviewer ('' when it does not)
    verification_id: str = ""  # the verification request holding it
    # A quarantined proposal: its quarantine id (none in a dry run), reason code and field.
    quarantine: dict[str, str] | None = None


def proposals_submit(
    *,
    tenant: Tenant,
    candidates: Sequence[Candidate],
    dry_run: bool = False,
    actor: Actor | None = None,
    strict: bool = True,
    screen: bool = True,
) -> list[ProposalResult]:
    """Judge each candidate and land the accepted ones in short-term memory.

    Every candidate is redacted first. With `strict` (agents' proposals) a field that held
    nothing but sensitive content refuses the whole call (`Invalid` naming
    `proposals.<index>.<field>`, nothing written); otherwise (extraction) such a candidate is
    refused with `sensitive` and such entities or tags are left out. All accepted items of one
    call are upserted in one Redis transaction. A dry run decides exactly the same way and
    writes nothing, not even unknown end users.

    A candidate whose text reads as an instruction to the model (`memoryproject.quarantine`)
    is held for review instead (outcome `quarantined`, refusal `quarantined`), unless a
    reviewer released the same one before; `screen=False` is a reviewer's release. Every
    candidate, whatever its source kind, is screened by meaning as well as by the patterns.
    """
    settings = policy_for(tenant=tenant)
    vocabulary = vocabulary_for(tenant=tenant)
    redactor = redactor_of(vocabulary)
    redacted_all = [redact_candidate(raw, redactor=redactor) for raw in candidates]
    if strict:
        _refuse_sensitive(redacted_all)
    path = WritePath.PROPOSAL if strict else WritePath.EXTRACTION
    findings = _screened(tenant, redacted_all, vocabulary, path=path) if screen else {}
    # Only the users of what is not quarantined are created: such a write changes nothing else.
    user_ids = {c.candidate.user_id for i, c in enumerate(redacted_all) if i not in findings}
    store = stm_store()
    now = now_seconds()
    if dry_run:
        owners = _owners(tenant=tenant, user_ids=user_ids, create=False)
        decided = decide_all(
            redacted_all,
            owners=owners,
            store=store,
            now=now,
            settings=settings,
            vocabulary=vocabulary,
            quarantined=findings,
        )
        return _results(
            decided, [], dry_run=True, quarantined={i: "" for i in findings}, findings=findings
        )

    # End users, the upsert and its audit land together: the end users and the audit events
    # are one PostgreSQL transaction, the upsert its last step before the audit; when the
    # audit or the commit fails after the upsert landed, the upsert is undone, so a failure
    # at any step leaves no end user, audit event or item behind.
    to_write: list[StmItem] = []
    written: list[UpsertResult] = []
    try:
        with transaction.atomic():
            owners = _owners(tenant=tenant, user_ids=user_ids, create=True)
            decided = decide_all(
                redacted_all,
                owners=owners,
                store=store,
                now=now,
                settings=settings,
                vocabulary=vocabulary,
                quarantined=findings,
            )
            held = _hold(tenant, decided, actor)
            quarantined = {
                index: hold(
                    tenant=tenant,
                    path=path,
                    finding=finding,
                    text=redacted_all[index].candidate.summary,
                    payload={"candidate": asdict(redacted_all[index].candidate)},
                    source_kind=redacted_all[index].candidate.source_kind,
                    user_id=redacted_all[index].candidate.user_id,
                    ref=_held_ref(path, redacted_all[index].candidate),
                )
                for index, finding in findings.items()
            }
            to_write = [one.item for one in decided if one.item is not None]
            # Distinct timestamps keep index scores (and so paging cursors) unique in a batch.
            for offset, item in enumerate(to_write):
                item.created_at = item.updated_at = item.last_access_at = now + offset * 1e-4
            written = store.upsert(items=to_write, now=now)
            results = _results(
                decided,
                written,
                dry_run=False,
                held=held,
                quarantined=quarantined,
                findings=findings,
            )
            _audit_writes(tenant, [one.item for one in decided], results, actor)
    except BaseException:
        if written:
            _undo(store, to_write, written)
        raise
    for redaction, one in zip(redacted_all, decided, strict=True):
        if not one.decision.accepted:
            count_refusal(source=redaction.candidate.source_kind, reason=one.decision.refusal)
    stm_vectors_schedule(
        tenant_id=tenant.pk,
        items=[
            (item.end_user_id, result.item_id)
            for item, result in zip(to_write, written, strict=True)
            if result.outcome != "unchanged"
        ],
    )
    return results


def _held_ref(path: str, candidate: Candidate) -> str:
    """The same candidate quarantined twice (a retried call, a re-read transcript) is one row."""
    return f"{path}:{fingerprint_of(candidate)}"


def _screened(
    tenant: Tenant, redacted_all: Sequence[RedactedCandidate], vocabulary: Vocabulary, *, path: str
) -> dict[int, Finding]:
    """The candidates that read as an instruction to the model, by index, with why; those a
    reviewer released before pass."""
    screen = screen_of(vocabulary, by_meaning=True)
    findings: dict[int, Finding] = {}
    for index, redaction in enumerate(redacted_all):
        candidate = redaction.candidate
        if redaction.nothing_left:
            continue  # refused as sensitive anyway
        detail = candidate.detail
        if path == WritePath.EXTRACTION and candidate.source_kind != SourceKind.LLM:
            # The rule extractors' account of their match ("an instruction (不允许|禁止…) with
            # 禁止") is the service's own words about the text, not the speaker's.
            detail = {key: value for key, value in detail.items() if key != "reason"}
        found = screen.fields(
            (
                ("summary", candidate.summary),
                ("fact_value", candidate.fact_value),
                ("detail", detail),
                ("entities", list(candidate.entities)),
                ("tags", list(candidate.tags)),
                ("subtype", candidate.subtype),
            )
        )
        if found is not None:
            findings[index] = found
    if findings:
        released = released_refs(
            tenant=tenant,
            refs=[_held_ref(path, redacted_all[index].candidate) for index in findings],
        )
        findings = {
            index: found
            for index, found in findings.items()
            if _held_ref(path, redacted_all[index].candidate) not in released
        }
    return findings


def _hold(tenant: Tenant, decided: Decided, actor: Actor | None) -> dict[int, str]:
    """Store each held candidate in the verification queue (a retried proposal finds its
    pending request); returns position -> request id."""
    held: dict[int, str] = {}
    audits: list[AuditEntry] = []
    for position, one in enumerate(decided):
        if not one.hold_reason or one.held is None or one.owner is None:
            continue
        candidate = one.held
        pending = VerificationRequest.objects.filter(
            tenant=tenant,
            fingerprint=one.fingerprint,
            status=VerificationRequest.Status.PENDING,
        ).first()
        if pending is None:
            pending = VerificationRequest.objects.create(
                request_id=f"ver_{uuid.uuid4().hex[:20]}",
                tenant=tenant,
                end_user_id=one.owner.end_user_id,
                session_id=candidate.session_id,
                task_id=candidate.task_id,
                memory_type=candidate.memory_type,
                summary=candidate.summary.strip(),
                candidate=candidate_document(candidate),
                source_kind=one.source_kind,
                hold_reason=one.hold_reason,
                requested_by=(actor or Actor.job("extraction")).name,
                confidence=candidate.confidence,
                fingerprint=one.fingerprint,
            )
            audits.append(
                AuditEntry(
                    action=Action.PROPOSE,
                    object_type="verification_request",
                    object_id=pending.request_id,
                    after={
                        "memory_type": pending.memory_type,
                        "summary": pending.summary,
                        "source_kind": pending.source_kind,
                        "hold_reason": pending.hold_reason,
                    },
                    end_user_pk=one.owner.end_user_id,
                )
            )
        held[position] = pending.request_id
    audit_record_many(tenant=tenant, actor=actor or Actor.job("extraction"), entries=audits)
    return held


def candidate_document(candidate: Candidate) -> dict[str, Any]:
    """A candidate as JSON, for the verification queue; `candidate_of` reads it back."""
    return asdict(candidate)


def candidate_of(document: dict[str, Any]) -> Candidate:
    known = {f.name for f in dataclass_fields(Candidate)}
    values = {name: value for name, value in document.items() if name in known}
    for name in ("entities", "tags", "message_ids", "tool_call_ids"):
        values[name] = tuple(values.get(name) or ())
    return Candidate(**values)


def _results(
    decided: Decided,
    written: Sequence[UpsertResult],
    *,
    dry_run: bool,
    held: dict[int, str] | None = None,
    quarantined: dict[int, str] | None = None,
    findings: dict[int, Finding] | None = None,
) -> list[ProposalResult]:
    upserts = iter(written)
    results = []
    quarantined, findings = quarantined or {}, findings or {}
    for position, one in enumerate(decided):
        decision, item = one.decision, one.item
        if decision.refusal == Outcome.QUARANTINED and position in quarantined:
            view = held_view(quarantine_id=quarantined[position], finding=findings[position])
            result = ProposalResult(decision, Outcome.QUARANTINED, quarantine=view)
        elif not decision.accepted:
            result = ProposalResult(decision, Outcome.REFUSED)
        elif one.hold_reason:
            result = ProposalResult(
                decision,
                Outcome.WOULD_HOLD if dry_run else Outcome.HELD,
                hold_reason=one.hold_reason,
                verification_id=(held or {}).get(position, ""),
            )
        elif dry_run or item is None:
            result = ProposalResult(decision, Outcome.WOULD_WRITE)
        else:
            upserted = next(upserts)
            result = ProposalResult(
                decision,
                upserted.outcome,
                item_id=upserted.item_id,
                version=upserted.version,
                superseded_id=upserted.superseded_id,
            )
        results.append(
            replace(result, redacted=one.redacted, source_kind=one.source_kind, trust=one.trust)
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
