"""Transcript storage (the segment objects) as the registry knows it (`memoryproject.stores`):
what an erasure, a tenant purge and `/readyz` do with it. A session's rows are PostgreSQL's;
erasing its segments tombstones them, so the chain of the session still verifies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Q

from memoryproject.stores import (
    PROBE_SAMPLE,
    Counts,
    Erasure,
    Findings,
    ReadyCheck,
    Step,
    Store,
    TenantPurge,
)
from transcripts.models import EventRef, Segment, Session
from transcripts.segments import decode_segment, event_digest
from transcripts.selectors import transcript_verify
from transcripts.services import sessions_erase
from transcripts.storage import (
    segment_read,
    segments_delete,
    segments_under,
    storage_probe,
    transcript_storage,
)


# --- erasure ---------------------------------------------------------------------------------
def _inventory(erasure: Erasure) -> dict[str, Any]:
    """The user's sessions, and a sample of their events' digests to look for afterwards."""
    if not erasure.of_user:
        return {}
    sessions = list(
        Session.objects.filter(end_user_id=erasure.end_user_pk).values_list("pk", flat=True)
    )
    digests = EventRef.objects.filter(session_id__in=sessions).values_list("digest", flat=True)
    return {"session_pks": sessions, "event_digests": list(digests[:PROBE_SAMPLE])}


def _erase(erasure: Erasure) -> Counts:
    if not erasure.of_user:
        # a card, fact or preference is erased, not the user's conversations
        return {"sessions": 0, "segments": 0, "events": 0}
    # Sessions started since the inventory are the user's too.
    sessions = Session.objects.filter(
        Q(pk__in=erasure.inventory.get("session_pks", [])) | Q(end_user_id=erasure.end_user_pk)
    )
    return sessions_erase(
        sessions=sessions,
        request_id=erasure.request_id,
        erased=erasure.inventory.setdefault("session_pks", []),
    )


def _stored_event_digests(session_pks: Sequence[int]) -> set[str]:
    """Digests of every event still readable in these sessions' transcript objects."""
    digests = set()
    for segment in Segment.objects.filter(session_id__in=session_pks):
        try:
            _, events = decode_segment(segment_read(name=segment.path))
        except (FileNotFoundError, ValueError):
            continue
        for event in events:
            digests.add(
                event_digest(
                    role=event.get("role", ""),
                    content=event.get("content", ""),
                    tool_call_id=event.get("tool_call_id", ""),
                    metadata=event.get("metadata", {}),
                )
            )
    return digests


def _verify(erasure: Erasure, findings: Findings) -> None:
    """The user's event ids and digests, events still readable, and every erased session's
    segments tombstoned with its chain intact."""
    session_pks = erasure.inventory.get("session_pks", [])
    if erasure.of_user:
        findings.by_id["event_refs"] = EventRef.objects.filter(session_id__in=session_pks).count()
        digests = set(erasure.inventory.get("event_digests", []))
        findings.by_hash["transcript_events"] = len(digests & _stored_event_digests(session_pks))
        findings.elsewhere["transcript_events"] = EventRef.objects.filter(
            session__tenant_id=erasure.tenant_id, digest__in=digests
        ).count()
    check = _transcript_check(session_pks)
    findings.add_section("transcripts", check, ok=check["ok"])


def _transcript_check(session_pks: Sequence[int]) -> dict[str, Any]:
    sessions = list(Session.objects.filter(pk__in=session_pks))
    storage = transcript_storage()
    live_segments = Segment.objects.filter(session__in=sessions, tombstone_sha256="").count()
    reports = [transcript_verify(session=s) for s in sessions]
    objects_left = 0
    for segment in Segment.objects.filter(session__in=sessions):
        original = f"{segment.path.removesuffix('-erased.jsonl')}.jsonl"
        objects_left += original != segment.path and storage.exists(original)
    return {
        "ok": live_segments == 0 and objects_left == 0 and all(r.ok for r in reports),
        "sessions": len(sessions),
        "segments_not_tombstoned": live_segments,
        "erased_objects_left": objects_left,
        "chains_verified": sum(r.ok for r in reports),
    }


# --- tenant purge ----------------------------------------------------------------------------
def _purge(purge: TenantPurge) -> Counts:
    """The segment objects of every session, stored under `<tenant id>/`."""
    return {"segments": segments_delete(names=segments_under(prefix=f"{purge.tenant_id}/"))}


def _leftovers(purge: TenantPurge) -> Counts:
    return {"transcript_segments": len(segments_under(prefix=f"{purge.tenant_id}/"))}


TRANSCRIPTS = Store(
    name="transcripts",
    inventory=_inventory,
    erase=[Step("transcripts", _erase)],
    verify=_verify,
    purge=[Step("transcripts", _purge)],
    leftovers=_leftovers,
    # A small write and delete, so a full disk shows before the appends fail.
    ready={"transcript_storage": ReadyCheck(storage_probe, reused=True)},
)
