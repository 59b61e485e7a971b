"""Reads for reviewers: the transcript around a proposal's evidence (redacted: the transcript
keeps what was said, a reviewer sees it without card numbers, secrets and the like)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memoryproject.redaction import redactor_for
from profiles.models import Tenant
from transcripts.models import EventRef, Session
from transcripts.selectors import events_after


@dataclass(frozen=True)
class ExcerptEvent:
    session_id: str
    seq: int
    message_id: str
    role: str
    content: str
    created_at: str
    evidence: bool


@dataclass(frozen=True)
class Excerpt:
    events: list[ExcerptEvent]
    missing: list[str]  # evidence message ids no longer (or never) in the transcript


def _windows(seqs: Sequence[int], around: int) -> list[tuple[int, int]]:
    """Merged [first, last] seq ranges covering `around` events on each side of each seq."""
    windows: list[tuple[int, int]] = []
    for seq in sorted(seqs):
        first, last = max(1, seq - around), seq + around
        if windows and first <= windows[-1][1] + 1:
            windows[-1] = (windows[-1][0], max(windows[-1][1], last))
        else:
            windows.append((first, last))
    return windows


def evidence_excerpt(
    *,
    tenant: Tenant,
    session_ids: Sequence[str],
    message_ids: Sequence[str],
    around: int = 2,
    limit: int = 60,
) -> Excerpt:
    """The tenant's transcript events with these ids plus `around` neighbours on each side.

    Erased or unreadable sessions contribute nothing; their ids are listed as missing. The
    content is redacted with the tenant's redactor.
    """
    redactor = redactor_for(tenant)
    refs = EventRef.objects.filter(
        session__tenant=tenant,
        session__external_id__in=list(session_ids),
        message_id__in=list(message_ids),
    ).values_list("session_id", "seq")
    wanted: dict[int, set[int]] = {}
    for session_pk, seq in refs:
        wanted.setdefault(session_pk, set()).add(seq)
    sessions = Session.objects.in_bulk(list(wanted))
    events: list[ExcerptEvent] = []
    for session_pk in sorted(wanted, key=lambda pk: sessions[pk].external_id):
        session, seqs = sessions[session_pk], wanted[session_pk]
        for first, last in _windows(sorted(seqs), around):
            try:
                page = events_after(session=session, after=first - 1, limit=last - first + 1)
            except (OSError, ValueError):  # the segment object is gone or unreadable
                continue
            for event in page.events:
                events.append(
                    ExcerptEvent(
                        session_id=session.external_id,
                        seq=event["seq"],
                        message_id=str(event.get("id", "")),
                        role=str(event.get("role", "")),
                        content=redactor.text(str(event.get("content", ""))).text,
                        created_at=str(event.get("created_at", "")),
                        evidence=event["seq"] in seqs,
                    )
                )
    events = events[:limit]
    shown = {event.message_id for event in events if event.evidence}
    missing = [m for m in dict.fromkeys(message_ids) if m not in shown]
    return Excerpt(events=events, missing=missing)
