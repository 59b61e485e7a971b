"""Changes of one short-term item through the API: the guards of a new write, applied to an edit.

An edit keeps the item's id and its type, task, session and canonical key; it may change the
summary, entities, tags, importance, confidence and lifetime. On its way it meets what a
proposal meets: redaction of the record as a whole (a field of nothing but sensitive data is
`Invalid`), the write policy's hard refusals of a summary, the quarantine screen (by meaning
too: an item may be recalled as the user's word), the confidence ceiling of the writer's
source, and trust. New words are the writer's: an untrusted writer's new summary of a rule (a
constraint, a preference, a profile fact) waits in the verification queue like an untrusted
rule proposed afresh, and of any other item makes it untrusted evidence.

The edit lands as one unit: the audit event (with each field's value before and after, redacted)
and the item's new version in Redis, the latter the transaction's last step and undone when the
commit fails; a summary changed is embedded again in the worker.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from django.db import transaction

from memories.audit.services import Action, Actor, audit_record, changes_between, state_sha256
from memories.policies.selectors import vocabulary_for
from memories.quarantine.services import released_refs
from memories.stm.items import Status, StmItem, Trust
from memories.stm.selectors import stm_item_for
from memories.stm.store import EditResult, now_seconds, stm_store
from memories.vocabulary import redactor_of, screen_of
from memories.write.candidates import Candidate, SourceKind
from memories.write.judging import fingerprint_of
from memories.write.models import VerificationRequest
from memories.write.policy import hard_refusal, is_promotable_without_hits, policy_for
from memories.write.redaction import redact_candidate
from memories.write.trust import confidence_ceiling, hold_reason, trust_of
from memories.write.vectors import stm_vectors_schedule
from memoryproject.errors import Conflict, ErrorCode, Invalid, NotFound, StoreUnavailable
from memoryproject.quarantine import WritePath, held_view, hold
from profiles.models import Tenant

logger = logging.getLogger(__name__)

# The fields of an item an edit may write (`ttl_minutes` becomes `expires_at`); redaction of the
# record as a whole may reach `detail` too.
WRITTEN = (
    "summary",
    "detail",
    "entities",
    "tags",
    "importance",
    "confidence",
    "expires_at",
    "trust",
    "source",
    "fingerprint",
    "fingerprints",
)
# The values an audit event keeps before and after (redacted there).
AUDITED = ("summary", "detail", "entities", "tags", "importance", "confidence", "expires_at")
EDIT_ATTEMPTS = 3  # reads again when a merge lands between the read and the write


class Outcome:
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    QUARANTINED = "quarantined"
    HELD = "held_for_verification"


@dataclass(frozen=True)
class ItemChanges:
    """The fields an edit gives (None: left as it is)."""

    summary: str | None = None
    entities: Sequence[str] | None = None
    tags: Sequence[str] | None = None
    importance: float | None = None
    confidence: float | None = None
    ttl_minutes: int | None = None

    def given(self) -> dict[str, Any]:
        return {
            name: list(value) if isinstance(value, tuple | list) else value
            for name, value in asdict(self).items()
            if value is not None
        }


@dataclass(frozen=True)
class ItemUpdateResult:
    """What an edit did, and the item as it is now (as it was when nothing was written)."""

    outcome: str
    item: StmItem
    redacted: list[str] = field(default_factory=list)
    quarantine: dict[str, str] | None = None
    hold_reason: str = ""
    verification_id: str = ""


class _Changed(Exception):
    """The item was merged or edited between the read and the write."""


def stm_item_update(
    *,
    tenant: Tenant,
    item_id: str,
    changes: ItemChanges,
    actor: Actor,
    trusted_writer: bool = False,
    source_kind: str = SourceKind.PROPOSAL,
    expected_version: int | None = None,
    screen: bool = True,
) -> ItemUpdateResult:
    """Change one live item of the tenant (NotFound otherwise) as a write of `source_kind`.

    `expected_version`: apply only to that version (`Conflict` otherwise). `screen=False` is a
    reviewer's release of an edit the quarantine held. An edit that changes nothing writes
    nothing (outcome `unchanged`).
    """
    for attempt in range(EDIT_ATTEMPTS):
        try:
            return _update_once(
                tenant=tenant,
                item_id=item_id,
                changes=changes,
                actor=actor,
                trusted_writer=trusted_writer,
                source_kind=source_kind,
                expected_version=expected_version,
                screen=screen,
            )
        except _Changed:
            if expected_version is not None or attempt == EDIT_ATTEMPTS - 1:
                raise Conflict(
                    f"Memory {item_id!r} changed while it was being edited; read it again."
                ) from None
    raise AssertionError("unreachable")  # pragma: no cover


def _update_once(
    *,
    tenant: Tenant,
    item_id: str,
    changes: ItemChanges,
    actor: Actor,
    trusted_writer: bool,
    source_kind: str,
    expected_version: int | None,
    screen: bool,
) -> ItemUpdateResult:
    item = stm_item_for(tenant=tenant, item_id=item_id)
    if expected_version is not None and item.version != expected_version:
        raise Conflict(f"Memory {item_id!r} is at version {item.version}, not {expected_version}.")
    if item.status != Status.ACTIVE:
        raise Conflict(f"Memory {item_id!r} was superseded by {item.superseded_by!r}.")
    vocabulary = vocabulary_for(tenant=tenant)
    settings = policy_for(tenant=tenant)
    given = changes.given()
    redaction = redact_candidate(
        _candidate(item, changes, source_kind=source_kind), redactor=redactor_of(vocabulary)
    )
    if redaction.emptied:
        raise Invalid(
            "A change holds nothing but sensitive data.",
            fields={
                path: ["Holds nothing but sensitive data (redacted), so not stored."]
                for path in redaction.emptied
            },
        )
    candidate = redaction.candidate
    if "summary" in given:
        refusal = hard_refusal(candidate, settings=settings, vocabulary=vocabulary)
        if refusal:
            raise Invalid(
                f"The write policy refuses this summary ({refusal}).",
                fields={"summary": [f"Refused by the write policy: {refusal}."]},
            )
    redacted = sorted(redaction.kinds)
    if screen:
        held = _quarantined(tenant, item, candidate, given, vocabulary, trusted_writer)
        if held is not None:
            return ItemUpdateResult(
                Outcome.QUARANTINED, item=item, redacted=redacted, quarantine=held
            )

    now = now_seconds()
    writer_trust = trust_of(source_kind=source_kind, trusted_writer=trusted_writer)
    updated = _edited(item, candidate, given, settings, now=now)
    words_changed = updated.summary != item.summary
    if words_changed:
        reason = hold_reason(candidate, trust=writer_trust)
        if reason:
            request_id = _hold_for_verification(
                tenant, item, candidate, given, reason=reason, actor=actor
            )
            return ItemUpdateResult(
                Outcome.HELD,
                item=item,
                redacted=redacted,
                hold_reason=reason,
                verification_id=request_id,
            )
        updated.trust = writer_trust
        updated.source = {**item.source, "kind": _joined_kind(item, source_kind)}
    if "confidence" in given:
        ceiling = confidence_ceiling(source_kind=source_kind, trust=writer_trust)
        updated.confidence = min(float(given["confidence"]), ceiling)
    before, after = _audited(item), _audited(updated)
    written = [name for name in WRITTEN if getattr(updated, name) != getattr(item, name)]
    if not written:
        return ItemUpdateResult(Outcome.UNCHANGED, item=item, redacted=redacted)

    store = stm_store()
    result: EditResult | None = None
    try:
        with transaction.atomic():
            audit_record(
                tenant=tenant,
                action=Action.UPDATE,
                actor=actor,
                object_type="stm_item",
                object_id=item.id,
                before=item.to_redis(),
                after=updated.to_redis(),
                changes=changes_between(before, after),
                end_user_pk=item.end_user_id,
                details={"version": item.version + 1, "fields": written},
            )
            # Redis last: a failure before it leaves nothing to undo.
            result = store.edit(item=updated, fields=written, read_version=item.version, now=now)
            if result.outcome == "changed":
                raise _Changed
            if result.outcome == "gone":
                raise NotFound(f"No memory {item_id!r}.")
            if words_changed:
                stm_vectors_schedule(tenant_id=tenant.pk, items=[(item.end_user_id, item.id)])
    except BaseException:
        if result is not None and result.outcome == "updated":
            _undo(store, updated, result)
        raise
    updated.version, updated.updated_at = result.version, now
    return ItemUpdateResult(Outcome.UPDATED, item=updated, redacted=redacted)


def _candidate(item: StmItem, changes: ItemChanges, *, source_kind: str) -> Candidate:
    """The item as the write path would read it with the changes given."""
    return Candidate(
        user_id=item.user_id,
        session_id=item.session_id,
        memory_type=item.memory_type,
        summary=item.summary if changes.summary is None else changes.summary,
        task_id=item.task_id,
        subtype=item.subtype,
        detail=dict(item.detail),
        entities=tuple(item.entities if changes.entities is None else changes.entities),
        tags=tuple(item.tags if changes.tags is None else changes.tags),
        source_kind=source_kind,
        canonical_fact_key=item.canonical_fact_key,
        fact_value=item.fact_value,
        remember=item.remember,
    )


def _edited(
    item: StmItem, candidate: Candidate, given: dict[str, Any], settings: Any, *, now: float
) -> StmItem:
    """The item with the (redacted) changes applied; trust and confidence are the caller's."""
    updated = replace(
        item,
        summary=candidate.summary.strip(),
        detail=dict(candidate.detail),
        entities=list(candidate.entities),
        tags=list(candidate.tags),
        source=dict(item.source),
        fingerprints=list(item.fingerprints),
        sessions=list(item.sessions),
    )
    if "importance" in given:
        updated.importance = float(given["importance"])
    if "ttl_minutes" in given:
        # Clamped as a proposal's lifetime is: what promotion may propose without hits lives
        # at least until the promotion scan has seen it.
        minutes = int(given["ttl_minutes"])
        if is_promotable_without_hits(candidate):
            minutes = max(minutes, settings.promotable_ttl_minutes)
        minutes = min(max(minutes, settings.min_ttl_minutes), settings.max_ttl_minutes)
        updated.expires_at = now + minutes * 60
    if updated.summary != item.summary:
        # The same words written again merge into this item, as they would have into a new one.
        updated.fingerprint = fingerprint_of(replace(candidate, summary=updated.summary))
        if updated.fingerprint not in updated.fingerprints:
            updated.fingerprints.append(updated.fingerprint)
    return updated


def _joined_kind(item: StmItem, source_kind: str) -> str:
    kinds = [kind for kind in str(item.source.get("kind") or "").split("+") if kind]
    if source_kind not in kinds:
        kinds.append(source_kind)
    return "+".join(kinds)


def _audited(item: StmItem) -> dict[str, Any]:
    values: dict[str, Any] = {name: getattr(item, name) for name in AUDITED}
    values["expires_at"] = datetime.fromtimestamp(item.expires_at, tz=UTC).isoformat()
    values["trust"] = item.trust
    return values


def _quarantined(
    tenant: Tenant,
    item: StmItem,
    candidate: Candidate,
    given: dict[str, Any],
    vocabulary: Any,
    trusted_writer: bool,
) -> dict[str, str] | None:
    """Hold the edit for review when a text it gives reads as an instruction to the model
    (by meaning too, as a proposal is screened); its quarantine view, or None when it passes
    (a reviewer may have released the same edit before)."""
    texts = {
        "summary": candidate.summary,
        "entities": list(candidate.entities),
        "tags": list(candidate.tags),
    }
    finding = screen_of(vocabulary, by_meaning=True).fields(
        (name, value) for name, value in texts.items() if name in given
    )
    if finding is None:
        return None
    edit = {**given, **{name: value for name, value in texts.items() if name in given}}
    ref = f"{WritePath.STM_UPDATE}:{item.id}:{item.version}:{state_sha256(edit)[:24]}"
    if released_refs(tenant=tenant, refs=[ref]):
        return None
    with transaction.atomic():
        held_id = hold(
            tenant=tenant,
            path=WritePath.STM_UPDATE,
            finding=finding,
            text=candidate.summary if "summary" in given else str(edit),
            payload={
                "item_id": item.id,
                "changes": edit,
                "version": item.version,
                "trusted_writer": trusted_writer,
            },
            source_kind=SourceKind.PROPOSAL,
            user_id=item.user_id,
            ref=ref,
        )
    return held_view(quarantine_id=held_id, finding=finding)


def _hold_for_verification(
    tenant: Tenant,
    item: StmItem,
    candidate: Candidate,
    given: dict[str, Any],
    *,
    reason: str,
    actor: Actor,
) -> str:
    """Keep an untrusted writer's new words for a rule in the verification queue (a retried
    edit finds its pending request); the item stays as it is. Approval applies the edit as
    the reviewer's (`verification_approve`)."""
    fingerprint = f"{fingerprint_of(candidate)}:{candidate.memory_type}"[:64]
    with transaction.atomic():
        requests = VerificationRequest.objects.filter(tenant=tenant, fingerprint=fingerprint)
        if requests.filter(
            end_user_id=item.end_user_id, status=VerificationRequest.Status.REJECTED
        ).exists():
            raise Conflict(
                "A reviewer rejected this change before.", code=ErrorCode.ALREADY_DECIDED
            )
        pending = requests.filter(status=VerificationRequest.Status.PENDING).first()
        if pending is not None:
            return pending.request_id
        document = {
            **asdict(candidate),
            "update_of": item.id,
            "changes": {**given, "summary": candidate.summary},
            "version": item.version,
        }
        request = VerificationRequest.objects.create(
            request_id=f"ver_{uuid.uuid4().hex[:20]}",
            tenant=tenant,
            end_user_id=item.end_user_id,
            session_id=item.session_id,
            task_id=item.task_id,
            memory_type=item.memory_type,
            summary=candidate.summary.strip(),
            candidate=document,
            source_kind=candidate.source_kind,
            hold_reason=reason,
            requested_by=actor.name,
            confidence=min(
                float(given.get("confidence", item.confidence)),
                confidence_ceiling(source_kind=candidate.source_kind, trust=Trust.UNTRUSTED),
            ),
            fingerprint=fingerprint,
        )
        audit_record(
            tenant=tenant,
            action=Action.PROPOSE,
            actor=actor,
            object_type="verification_request",
            object_id=request.request_id,
            after={
                "memory_type": request.memory_type,
                "summary": request.summary,
                "source_kind": request.source_kind,
                "hold_reason": request.hold_reason,
                "update_of": item.id,
            },
            end_user_pk=item.end_user_id,
        )
    return request.request_id


def _undo(store: Any, item: StmItem, result: EditResult) -> None:
    try:
        store.undo_edit(item=item, result=result)
    except StoreUnavailable:
        logger.error("could not undo the edit of %s after a failed update", item.id, exc_info=True)
