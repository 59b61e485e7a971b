"""The audit trail: append-only, hash-chained events of every change to memory or review state.

Each tenant's events form one chain: an event's SHA-256 covers its own fields and the previous
event's hash, so editing, removing or reordering any stored row breaks verification there.
Events are written in the transaction of the change they record.

A change of named fields (a profile, a preference, a setting, a reviewer's edit) also records
each field's value before and after, redacted and bounded (`Change`). The values are rows of
their own (`AuditChange`), beside the chain rather than in it: the event's details name each
field with the hashes of its two values, so `audit_verify` catches an edited value, and an
erasure can remove a user's values while every chain still verifies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection, transaction
from django.utils import timezone

from memories.audit.models import AuditChange, AuditEvent
from memoryproject.redaction import Redactor, redact_json, redactor_for

if TYPE_CHECKING:  # type hints only: Layer 1 imports this module, never the reverse
    from profiles.models import ApiKey, Tenant

AUDIT_LOCK_NAMESPACE = 0x4D454D41  # distinguishes our advisory locks from other users'
# Rows per INSERT: 16 parameters a row stays far below PostgreSQL's 65,535 per statement.
AUDIT_INSERT_BATCH = 2000
# Bounds of the values an event keeps: a longer value is cut, further changes only counted.
MAX_CHANGE_VALUE_CHARS = 1000
MAX_CHANGES_PER_EVENT = 100


class Action:
    CREATE = "create"
    UPDATE = "update"
    ARCHIVE = "archive"
    MERGE = "merge"
    SUPERSEDE = "supersede"
    PROPOSE = "propose"
    PROMOTE = "promote"
    APPROVE = "approve"
    REJECT = "reject"
    REQUEST_DELETION = "request_deletion"
    DELETE = "delete"
    ERASE = "erase"
    POLICY_CHANGE = "policy_change"
    REVOKE = "revoke"
    RETARGET = "retarget"
    REDACT = "redact"


@dataclass(frozen=True)
class Actor:
    """Who made a change: an agent's API key, a staff user, or a background job."""

    type: str
    name: str

    @classmethod
    def api_key(cls, key: ApiKey) -> Actor:
        return cls(AuditEvent.ActorType.API_KEY, f"api_key:{key.pk}:{key.name}")

    @classmethod
    def staff(cls, user: AbstractBaseUser | AnonymousUser) -> Actor:
        return cls(AuditEvent.ActorType.STAFF, f"staff:{user.pk}:{user.get_username()}")

    @classmethod
    def job(cls, name: str) -> Actor:
        return cls(AuditEvent.ActorType.JOB, f"job:{name}")


def state_sha256(state: Any) -> str:
    """Hash of a state as canonical JSON; '' for no state (before a create, after an erase)."""
    if state is None:
        return ""
    return hashlib.sha256(orjson.dumps(state, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()


def _event_sha256(fields: Mapping[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(dict(fields), option=orjson.OPT_SORT_KEYS)).hexdigest()


def _chained_fields(event: AuditEvent) -> dict[str, Any]:
    return {
        "tenant": event.tenant_id,
        "seq": event.seq,
        "action": event.action,
        "actor_type": event.actor_type,
        "actor": event.actor,
        "object_type": event.object_type,
        "object_id": event.object_id,
        "end_user_pk": event.end_user_pk,
        "before": event.before_sha256,
        "after": event.after_sha256,
        "reason": event.reason,
        "details": event.details,
        "created_at": _timestamp(event.created_at),
        "prev": event.prev_sha256,
    }


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Change:
    """One field's value before and after a change (None: it had none, or has none now).

    `context` says what the value is, for its redaction (a setting's key, `db_password`);
    the field's name by default."""

    field: str
    before: Any = None
    after: Any = None
    context: str = ""


def changes_between(
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    *,
    contexts: Mapping[str, str] | None = None,
) -> list[Change]:
    """The fields whose values differ between two states (a missing state has no values);
    `contexts` names what a field's value is, for its redaction."""
    before, after, contexts = before or {}, after or {}, contexts or {}
    names = [*before, *(name for name in after if name not in before)]
    return [
        Change(name, before.get(name), after.get(name), contexts.get(name, ""))
        for name in names
        if before.get(name) != after.get(name)
    ]


def _bounded(value: Any) -> Any:
    """`value` as it round-trips through JSON; cut to a string when its JSON is too long."""
    text = orjson.dumps(value, default=str).decode()
    if len(text) <= MAX_CHANGE_VALUE_CHARS:
        return orjson.loads(text)
    shown = value if isinstance(value, str) else text
    return shown[: MAX_CHANGE_VALUE_CHARS - 1] + "…"


def _prepared_changes(
    changes: Sequence[Change], redactor: Redactor
) -> tuple[list[Change], list[dict[str, str]], int]:
    """The changes to keep (redacted, bounded, unchanged ones left out), their hashes for
    the event's details, and how many were left out past the bound. A secret replaced by
    another stays, though both read `[REDACTED:secret]`: the reader sees that it changed."""
    kept: list[Change] = []
    for change in changes:
        if change.before == change.after:
            continue
        context = change.context or change.field
        before = _bounded(redact_json(change.before, redactor, context=context))
        after = _bounded(redact_json(change.after, redactor, context=context))
        kept.append(Change(change.field[:300], before, after))
    omitted = max(0, len(kept) - MAX_CHANGES_PER_EVENT)
    kept = kept[:MAX_CHANGES_PER_EVENT]
    hashes = [
        {
            "field": change.field,
            "before_sha256": state_sha256(change.before),
            "after_sha256": state_sha256(change.after),
        }
        for change in kept
    ]
    return kept, hashes, omitted


@dataclass(frozen=True)
class AuditEntry:
    """One change to record, as `audit_record_many` takes it; `changes` are the values of
    the fields it changed (redacted and bounded when recorded)."""

    action: str
    object_type: str
    object_id: str
    before: Any = None
    after: Any = None
    reason: str = ""
    end_user_pk: int | None = None
    details: Mapping[str, Any] | None = None
    changes: Sequence[Change] = ()


def audit_record(
    *,
    tenant: Tenant | int,
    action: str,
    actor: Actor,
    object_type: str,
    object_id: str,
    before: Any = None,
    after: Any = None,
    reason: str = "",
    end_user_pk: int | None = None,
    details: Mapping[str, Any] | None = None,
    changes: Sequence[Change] = (),
) -> AuditEvent:
    """Append one event to the tenant's chain (in the caller's transaction, if any)."""
    entry = AuditEntry(
        action=action,
        object_type=object_type,
        object_id=object_id,
        before=before,
        after=after,
        reason=reason,
        end_user_pk=end_user_pk,
        details=details,
        changes=changes,
    )
    [event] = audit_record_many(tenant=tenant, actor=actor, entries=[entry])
    return event


def audit_record_many(
    *, tenant: Tenant | int, actor: Actor, entries: Sequence[AuditEntry]
) -> list[AuditEvent]:
    """Append events to the tenant's chain in the order given (in the caller's transaction,
    if any): one lock, one read of the chain's head, one INSERT per `AUDIT_INSERT_BATCH` rows.

    Everything but the chain links is prepared before the lock is taken, so a large batch
    keeps the tenant's other writers waiting only for the hashing and the insert.
    """
    if not entries:
        return []
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    redactor = redactor_for(tenant_id) if any(entry.changes for entry in entries) else None
    events, values = [], []
    for entry in entries:
        details = dict(entry.details or {})
        kept: list[Change] = []
        if entry.changes and redactor is not None:
            kept, hashes, omitted = _prepared_changes(entry.changes, redactor)
            details["changes"] = hashes
            if omitted:
                details["changes_omitted"] = omitted
        event = AuditEvent(
            tenant_id=tenant_id,
            action=entry.action,
            actor_type=actor.type,
            actor=actor.name[:200],
            object_type=entry.object_type,
            object_id=str(entry.object_id)[:200],
            end_user_pk=entry.end_user_pk,
            before_sha256=state_sha256(entry.before),
            after_sha256=state_sha256(entry.after),
            reason=entry.reason,
            # Round-trip through JSON so the hash covers exactly what PostgreSQL gives back.
            details=orjson.loads(orjson.dumps(details, default=str)),
        )
        events.append(event)
        values.append(kept)
    with transaction.atomic():
        # Appends of one tenant are serialised until commit, so the chain never forks.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)", [AUDIT_LOCK_NAMESPACE, tenant_id]
            )
        last = (
            AuditEvent.objects.filter(tenant_id=tenant_id)
            .order_by("-seq")
            .values_list("seq", "sha256")
            .first()
        )
        seq, previous = last if last else (0, "")
        now = timezone.now()
        for event in events:
            seq += 1
            event.seq, event.prev_sha256, event.created_at = seq, previous, now
            event.sha256 = previous = _event_sha256(_chained_fields(event))
        AuditEvent.objects.bulk_create(events, batch_size=AUDIT_INSERT_BATCH)
        AuditChange.objects.bulk_create(
            [
                AuditChange(
                    event=event,
                    position=position,
                    end_user_id=event.end_user_pk,
                    field=change.field,
                    before=change.before,
                    after=change.after,
                )
                for event, kept in zip(events, values, strict=True)
                for position, change in enumerate(kept)
            ],
            batch_size=AUDIT_INSERT_BATCH,
        )
    return events


@dataclass(frozen=True)
class ChainReport:
    events: int
    broken_at: int | None  # seq of the first event that does not verify
    problem: str

    @property
    def ok(self) -> bool:
        return self.broken_at is None


def audit_verify(*, tenant: Tenant) -> ChainReport:
    """Recompute the tenant's chain from the stored rows; names the first event that fails."""
    previous, expected_seq, count = "", 1, 0
    for event in AuditEvent.objects.filter(tenant=tenant).order_by("seq").iterator(2000):
        count += 1
        if event.seq != expected_seq:
            return ChainReport(count, event.seq, f"expected event #{expected_seq}")
        if event.prev_sha256 != previous:
            return ChainReport(count, event.seq, "does not link to the previous event")
        if _event_sha256(_chained_fields(event)) != event.sha256:
            return ChainReport(count, event.seq, "content does not match its hash")
        previous, expected_seq = event.sha256, expected_seq + 1
    altered = _altered_change(tenant)
    if altered is not None:
        return ChainReport(count, altered, "a recorded value does not match its hash")
    return ChainReport(count, None, "")


def _altered_change(tenant: Tenant) -> int | None:
    """The seq of the first event whose kept values differ from the hashes its chained
    details hold (a value erased with its user is gone, not altered)."""
    rows = (
        AuditChange.objects.filter(event__tenant=tenant)
        .order_by("event__seq", "position")
        .values_list("event__seq", "event__details", "position", "field", "before", "after")
    )
    for seq, details, position, name, before, after in rows.iterator(2000):
        recorded = (details or {}).get("changes") or []
        expected = recorded[position] if position < len(recorded) else {}
        kept = {
            "field": name,
            "before_sha256": state_sha256(before),
            "after_sha256": state_sha256(after),
        }
        if expected != kept:
            return int(seq)
    return None
