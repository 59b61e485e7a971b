"""Reads of Layer 0: sessions by tenant, replay in order, and verification of the hash chain."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoryproject.errors import Conflict, NotFound
from memoryproject.redaction import Redactor, Report
from profiles.models import Tenant
from transcripts.models import EventRef, Segment, Session
from transcripts.segments import decode_segment, sha256_hex
from transcripts.storage import StoredObject, segment_read, stored_objects


def session_for(*, tenant: Tenant, session_id: str) -> Session:
    """The tenant's session with this id; NotFound otherwise (also for other tenants')."""
    try:
        return Session.objects.select_related("end_user").get(tenant=tenant, external_id=session_id)
    except Session.DoesNotExist:
        raise NotFound(f"No session {session_id!r}.") from None


@dataclass(frozen=True)
class EventPage:
    events: list[dict[str, Any]]
    next_after: int
    has_more: bool


def events_after(*, session: Session, after: int = 0, limit: int = 100) -> EventPage:
    """Up to `limit` events with seq > `after`, in order, read from the segment objects."""
    events: list[dict[str, Any]] = []
    segments = Segment.objects.filter(session=session, last_seq__gt=after).order_by("number")
    for segment in segments.iterator():
        _, stored = decode_segment(segment_read(name=segment.path))
        events.extend(e for e in stored if e["seq"] > after)
        if len(events) >= limit:
            break
    events = events[:limit]
    next_after = events[-1]["seq"] if events else after
    # An erased session's segments are tombstones: nothing more will ever come.
    has_more = session.erased_at is None and next_after < session.event_count
    return EventPage(events=events, next_after=next_after, has_more=has_more)


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    segments_checked: int
    events_checked: int
    problems: list[dict[str, Any]] = field(default_factory=list)


def transcript_verify(*, session: Session) -> VerifyReport:
    """Re-hash every segment and check each links to its predecessor and to the session head."""
    problems: list[dict[str, Any]] = []
    previous_hash = ""
    events_checked = 0
    segments = list(Segment.objects.filter(session=session).order_by("number"))

    def problem(segment: Segment, reason: str) -> None:
        problems.append({"segment": segment.number, "path": segment.path, "reason": reason})

    for expected_number, segment in enumerate(segments, start=1):
        if segment.number != expected_number:
            problem(segment, f"segment {expected_number} is missing before this one")
        try:
            data = segment_read(name=segment.path)
        except FileNotFoundError:
            problem(segment, "segment object is missing from storage")
            previous_hash = segment.sha256
            continue
        if segment.tombstone_sha256:
            for reason in _tombstone_problems(segment, data):
                problem(segment, reason)
            if segment.prev_sha256 != previous_hash:
                problem(segment, "does not link to the previous segment's hash")
            previous_hash = segment.sha256
            continue
        # Links are checked against the recorded hashes, so a modified segment is reported
        # once, at itself; a forged record shows up at the next segment's stored header.
        actual_hash = sha256_hex(data)
        if actual_hash != segment.sha256:
            problem(segment, "content does not match its recorded SHA-256 (modified)")
        if segment.prev_sha256 != previous_hash:
            problem(segment, "does not link to the previous segment's hash")
        try:
            header, events = decode_segment(data)
        except ValueError as exc:
            problem(segment, f"not a readable segment ({exc})")
        else:
            if header.get("prev_sha256") != segment.prev_sha256:
                problem(segment, "header's previous hash differs from the recorded one")
            seqs = [e.get("seq") for e in events]
            if seqs != list(range(segment.first_seq, segment.last_seq + 1)):
                problem(segment, "event sequence numbers are not the recorded range")
            events_checked += len(events)
        previous_hash = segment.sha256
    if segments and session.head_hash != segments[-1].sha256:
        problem(segments[-1], "the session head does not point at the last segment")
    if segments and segments[-1].last_seq != session.event_count:
        problem(segments[-1], "the session's event count differs from the stored events")
    return VerifyReport(
        ok=not problems,
        segments_checked=len(segments),
        events_checked=events_checked,
        problems=problems,
    )


def _tombstone_problems(segment: Segment, data: bytes) -> list[str]:
    """A tombstone must hash as recorded and name the erased segment's hash and its link."""
    if sha256_hex(data) != segment.tombstone_sha256:
        return ["tombstone does not match its recorded SHA-256 (modified)"]
    try:
        header, events = decode_segment(data)
    except ValueError as exc:
        return [f"not a readable tombstone ({exc})"]
    problems = []
    if not header.get("tombstone") or events:
        problems.append("a tombstone must hold no events")
    if header.get("erased_sha256") != segment.sha256:
        problems.append("tombstone does not name the erased segment's hash")
    if header.get("prev_sha256") != segment.prev_sha256:
        problems.append("header's previous hash differs from the recorded one")
    return problems


def events_by_ids(
    *, tenant: Tenant, session_ids: list[str], message_ids: list[str]
) -> list[dict[str, Any]]:
    """The stored events with these ids in these sessions of the tenant, in session order."""
    refs = (
        EventRef.objects.filter(
            session__tenant=tenant,
            session__external_id__in=session_ids,
            message_id__in=message_ids,
        )
        .select_related("session")
        .order_by("session_id", "seq")
    )
    wanted: dict[int, set[int]] = {}
    sessions: dict[int, Session] = {}
    for ref in refs:
        wanted.setdefault(ref.session_id, set()).add(ref.seq)
        sessions[ref.session_id] = ref.session
    events: list[dict[str, Any]] = []
    for session_pk, seqs in wanted.items():
        segments = Segment.objects.filter(
            session_id=session_pk, first_seq__lte=max(seqs), last_seq__gte=min(seqs)
        ).order_by("number")
        for segment in segments:
            _, stored = decode_segment(segment_read(name=segment.path))
            for event in stored:
                if event["seq"] in seqs:
                    events.append({"session_id": sessions[session_pk].external_id, **event})
    return events


def redacted_events(
    events: Sequence[dict[str, Any]], *, redactor: Redactor
) -> list[dict[str, Any]]:
    """Events as every view but the replay of the raw record shows them: content (text,
    content parts or JSON alike) and metadata redacted; ids, roles and times as stored."""
    shown = []
    for event in events:
        event = dict(event)
        for name in ("content", "metadata"):
            if event.get(name):
                event[name] = redactor.value(event[name], path=name, report=Report())
        shown.append(event)
    return shown


def session_owner_conflict(session_id: str) -> Conflict:
    """What an operation on a session answers when it names another user than the session's."""
    return Conflict(
        f"Session {session_id!r} belongs to another user.",
        fields={"user_id": ["Does not match the user this session was started for."]},
    )


def session_is_users(*, tenant: Tenant, session_id: str, user_id: str) -> bool:
    """Whether the tenant's session exists and is this user's (False for an unknown or erased
    session); Conflict when it belongs to another user, as an append to it would answer."""
    row = (
        Session.objects.filter(tenant=tenant, external_id=session_id, erased_at__isnull=True)
        .values_list("end_user__external_id", flat=True)
        .first()
    )
    if row is None:  # unknown, erased, or its user erased
        return False
    if row != user_id:
        raise session_owner_conflict(session_id)
    return True


def task_session_ids(*, tenant: Tenant, user_id: str, task_id: str, limit: int = 20) -> list[str]:
    """The ids of the user's newest sessions of one task (none without a task)."""
    if not task_id or not user_id:
        return []
    rows = (
        Session.objects.filter(
            tenant=tenant, end_user__external_id=user_id, task_id=task_id, erased_at__isnull=True
        )
        .order_by("-last_event_at")
        .values_list("external_id", flat=True)[:limit]
    )
    return list(rows)


def message_ids_stored(*, tenant: Tenant, session_id: str, message_ids: list[str]) -> set[str]:
    """Which of these event ids the tenant's session already holds."""
    return set(
        EventRef.objects.filter(
            session__tenant=tenant, session__external_id=session_id, message_id__in=message_ids
        ).values_list("message_id", flat=True)
    )


def orphan_objects(
    *, tenant_id: int | None = None, session: Session | None = None
) -> Iterator[StoredObject]:
    """Objects in transcript storage that no Segment row names: left by an append that failed
    after writing (a full disk leaves them empty), or by anything else writing there. All of
    storage, one tenant's folder (`<tenant id>/`) or one session's (`<tenant id>/<session pk>/`).
    """
    if session is not None:
        folder = f"{session.tenant_id}/{session.pk}"
    else:
        folder = "" if tenant_id is None else str(tenant_id)
    batch: list[StoredObject] = []
    for stored in stored_objects(folder=folder):
        batch.append(stored)
        if len(batch) >= ORPHAN_BATCH:
            yield from _unnamed(batch)
            batch = []
    yield from _unnamed(batch)


ORPHAN_BATCH = 500


def _unnamed(batch: list[StoredObject]) -> list[StoredObject]:
    named = set(
        Segment.objects.filter(path__in=[o.name for o in batch]).values_list("path", flat=True)
    )
    return [o for o in batch if o.name not in named]
