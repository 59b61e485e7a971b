"""Appending to Layer 0: batches of events become one immutable, hash-chained segment."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from memoryproject.errors import Conflict, ErrorCode, Gone, NotFound
from profiles.models import Tenant
from profiles.services.end_users import end_user_get_or_create
from transcripts.models import EventRef, Segment, Session
from transcripts.reactions import Appended, react_after_commit, react_within
from transcripts.segments import encode_segment, event_digest, sha256_hex
from transcripts.selectors import session_owner_conflict
from transcripts.storage import segment_delete, segment_write, segments_delete


class Role:
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"
    ALL = (USER, ASSISTANT, TOOL, SYSTEM)


@dataclass(frozen=True)
class EventIn:
    """One event as a client sends it; `message_id` is the client's own id, if it has one."""

    role: str
    content: str
    message_id: str = ""
    tool_call_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    occurred_at: datetime | None = None

    @property
    def digest(self) -> str:
        return event_digest(
            role=self.role,
            content=self.content,
            tool_call_id=self.tool_call_id,
            metadata=self.metadata,
        )


@dataclass(frozen=True)
class AppendResult:
    session: Session
    ids: list[tuple[int, str]]  # (seq, message_id) in the order sent
    created: bool  # False when this was a retry of an append already stored


def events_append(
    *,
    tenant: Tenant,
    session_id: str,
    user_id: str,
    events: Sequence[EventIn],
    task_id: str = "",
    create_session: bool = True,
) -> AppendResult:
    """Append a validated batch to a session as one segment, all or nothing.

    Appends to one session are serialised by a row lock, so they never interleave. A retry
    that carries the same client ids and content returns the original ids and writes nothing;
    the same ids with other content is a Conflict. Without `create_session` only an existing
    session of the user is appended to (NotFound otherwise), and no user is created.
    """
    stored_name = ""
    try:
        with transaction.atomic():
            session = _locked_session(
                tenant=tenant,
                session_id=session_id,
                user_id=user_id,
                task_id=task_id,
                create=create_session,
            )
            replay = _replayed_ids(session=session, events=events)
            if replay is not None:
                return AppendResult(session=session, ids=replay, created=False)
            result, stored_name = _write_segment(session=session, events=events, task_id=task_id)
            appended = Appended(
                session_pk=session.pk,
                first_seq=result.ids[0][0],
                last_seq=result.ids[-1][0],
                roles=frozenset(event.role for event in events),
            )
            # The layers above react through transcripts.reactions (their table is in
            # memories/apps.py): here, what must commit with the append or not at all (the
            # history outbox row); after the commit, what a job catches up if it fails
            # (queuing extraction), which never fails the committed append.
            react_within(appended=appended)
            transaction.on_commit(lambda: react_after_commit(appended=appended))
            return result
    except BaseException:
        if stored_name:  # the metadata did not commit: remove the orphan object
            segment_delete(name=stored_name)
        raise


def _locked_session(
    *, tenant: Tenant, session_id: str, user_id: str, task_id: str, create: bool = True
) -> Session:
    """The session row, locked for this transaction; created (with its user) on first append
    unless `create` is off (then an unknown session is NotFound)."""
    lookup = Session.objects.select_for_update(of=("self",)).select_related("end_user")
    session = lookup.filter(tenant=tenant, external_id=session_id).first()
    if session is None and not create:
        raise NotFound(f"No session {session_id!r}.")
    if session is None:
        end_user = end_user_get_or_create(tenant=tenant, external_id=user_id)
        try:
            with transaction.atomic():
                Session.objects.create(
                    tenant=tenant, external_id=session_id, end_user=end_user, task_id=task_id
                )
        except IntegrityError:  # created concurrently; the lock below waits for that append
            pass
        session = lookup.get(tenant=tenant, external_id=session_id)
    if session.erased_at is not None or session.end_user is None:
        raise Gone(f"Session {session_id!r} was erased.")
    if session.end_user.external_id != user_id:
        raise session_owner_conflict(session_id)
    return session


def _replayed_ids(*, session: Session, events: Sequence[EventIn]) -> list[tuple[int, str]] | None:
    """The stored ids if this batch repeats an earlier append exactly; None if it is new."""
    positions = {e.message_id: i for i, e in enumerate(events) if e.message_id}
    if not positions:
        return None
    known = list(EventRef.objects.filter(session=session, message_id__in=positions))
    if not known:
        return None
    anchor = known[0]
    base = anchor.seq - positions[anchor.message_id]
    stored = {
        ref.seq: ref
        for ref in EventRef.objects.filter(
            session=session, seq__gte=base, seq__lt=base + len(events)
        )
    }
    already = ", ".join(sorted(ref.message_id for ref in known))
    same_batch = len(stored) == len(events) and all(
        (ref := stored.get(base + i)) is not None
        and ref.digest == event.digest
        and (not event.message_id or ref.message_id == event.message_id)
        for i, event in enumerate(events)
    )
    if not same_batch:
        raise Conflict(
            "Some event ids are already stored in this session with other content or in another "
            "batch.",
            fields={"events": [f"Already stored: {already}."]},
            code=ErrorCode.DUPLICATE_EVENT_ID,
        )
    return [(base + i, stored[base + i].message_id) for i in range(len(events))]


def _write_segment(
    *, session: Session, events: Sequence[EventIn], task_id: str
) -> tuple[AppendResult, str]:
    now = timezone.now()
    first_seq = session.event_count + 1
    number = session.segment_count + 1
    records: list[dict[str, Any]] = []
    for offset, event in enumerate(events):
        records.append(
            {
                "seq": first_seq + offset,
                "id": event.message_id or f"msg_{uuid.uuid4().hex}",
                "role": event.role,
                "content": event.content,
                "tool_call_id": event.tool_call_id,
                "metadata": event.metadata,
                "created_at": (event.occurred_at or now).isoformat(),
                "received_at": now.isoformat(),
            }
        )
    last_seq = first_seq + len(records) - 1
    data = encode_segment(
        header={
            "session": session.external_id,
            "segment": number,
            "first_seq": first_seq,
            "last_seq": last_seq,
            "prev_sha256": session.head_hash,
            "created_at": now.isoformat(),
        },
        events=records,
    )
    digest = sha256_hex(data)
    name = segment_write(
        name=f"{session.tenant_id}/{session.pk}/{number:08d}-{uuid.uuid4().hex[:8]}.jsonl",
        data=data,
    )
    Segment.objects.create(
        session=session,
        number=number,
        first_seq=first_seq,
        last_seq=last_seq,
        path=name,
        sha256=digest,
        prev_sha256=session.head_hash,
        size_bytes=len(data),
    )
    EventRef.objects.bulk_create(
        EventRef(session=session, message_id=r["id"], seq=r["seq"], digest=e.digest)
        for r, e in zip(records, events, strict=True)
    )
    session.event_count = last_seq
    session.segment_count = number
    session.last_event_at = now
    session.head_hash = digest
    if task_id:
        session.task_id = task_id
    session.save(
        update_fields=[
            "event_count",
            "segment_count",
            "last_event_at",
            "head_hash",
            "task_id",
            "updated_at",
        ]
    )
    ids = [(r["seq"], r["id"]) for r in records]
    return AppendResult(session=session, ids=ids, created=True), name


def session_erase(*, session: Session, request_id: str) -> dict[str, int]:
    """Replace every segment of a session by a tombstone and forget its event ids and digests.

    The tombstone keeps the segment's number, range, recorded hash and link, so the chain of
    the session still verifies; the events themselves are gone. Safe to repeat: tombstoned
    segments are skipped. Returns counts of segments and events erased.
    """
    counts = {"segments": 0, "events": 0}
    for segment in Segment.objects.filter(session=session, tombstone_sha256="").order_by("number"):
        now = timezone.now()
        data = encode_segment(
            header={
                "session": session.external_id,
                "segment": segment.number,
                "first_seq": segment.first_seq,
                "last_seq": segment.last_seq,
                "prev_sha256": segment.prev_sha256,
                "tombstone": True,
                "erased_sha256": segment.sha256,
                "erased_at": now.isoformat(),
                "deletion_request": request_id,
            },
            events=[],
        )
        old_path = segment.path
        new_path = segment_write(name=f"{old_path.rsplit('.', 1)[0]}-erased.jsonl", data=data)
        with transaction.atomic():
            Segment.objects.filter(pk=segment.pk).update(
                path=new_path, tombstone_sha256=sha256_hex(data), size_bytes=len(data)
            )
        segment_delete(name=old_path)
        counts["segments"] += 1
        counts["events"] += segment.last_seq - segment.first_seq + 1
    with transaction.atomic():
        EventRef.objects.filter(session=session).delete()
        Session.objects.filter(pk=session.pk, erased_at__isnull=True).update(
            erased_at=timezone.now(), task_id=""
        )
    return counts


def sessions_erase(
    *, sessions: Iterable[Session], request_id: str, erased: list[int]
) -> dict[str, int]:
    """Erase each session (`session_erase`) and add its pk to `erased` (the erasure's record of
    the sessions it erased); returns the counts summed over them."""
    counts = {"sessions": 0, "segments": 0, "events": 0}
    for session in sessions:
        done = session_erase(session=session, request_id=request_id)
        counts["sessions"] += 1
        counts["segments"] += done["segments"]
        counts["events"] += done["events"]
        if session.pk not in erased:
            erased.append(session.pk)
    return counts


def orphan_objects_remove(*, names: Sequence[str]) -> list[str]:
    """Delete stored objects that no Segment row names (checked again right before); returns
    the names removed. Only for objects older than any append in flight (the caller's age
    bound): an append writes its object before its row commits."""
    named = set(Segment.objects.filter(path__in=list(names)).values_list("path", flat=True))
    removed = [name for name in names if name not in named]
    segments_delete(names=removed)
    return removed
