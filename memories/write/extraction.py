"""Extraction from transcripts: propose candidates from new events, then submit them.

Idempotent: a per-session cursor records the last extracted sequence number, and re-upserting
the same evidence leaves items unchanged, so a retried or duplicated run writes nothing twice.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError
from django.db.models import F, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from memories.policies.selectors import vocabulary_for
from memories.quarantine.services import events_held
from memories.write.extractors import ExtractionContext, RuleExtractor
from memories.write.llm import llm_extractor
from memories.write.models import ExtractionCursor
from memories.write.services import proposals_submit
from memoryproject.errors import StoreUnavailable
from memoryproject.locks import LeaseLost, redis_lock
from transcripts.models import Session
from transcripts.reactions import Appended
from transcripts.selectors import events_after

logger = logging.getLogger(__name__)

PAGE_SIZE = 200
LOCK_SECONDS = 300
# Roles that hold nothing to extract (recall records are system events).
NOT_EXTRACTED = frozenset({"system"})


class ExtractionBusy(Exception):
    """Another worker is extracting this session right now."""


def extraction_on_append(*, appended: Appended) -> None:
    """An append's reaction once it has committed: queue extraction of its session.

    System events hold nothing to extract: when the cursor had read everything before them, it
    is moved past them instead of running a task (the append of every recall's record costs no
    task). A queue that fails (the broker is down) is left to the catch-up beat job.
    """
    from memories.write.tasks import stm_extract_task

    roles, first_seq, last_seq = appended.roles, appended.first_seq, appended.last_seq
    if roles and roles <= NOT_EXTRACTED and first_seq:
        caught_up = ExtractionCursor.objects.filter(
            session_id=appended.session_pk, extracted_seq=first_seq - 1
        ).update(extracted_seq=last_seq)
        if caught_up:
            return
        if first_seq == 1:
            ExtractionCursor.objects.get_or_create(
                session_id=appended.session_pk, defaults={"extracted_seq": last_seq}
            )
            return
    stm_extract_task.delay(session_pk=appended.session_pk)


def session_extract(*, session_pk: int) -> str:
    """Extract every event after the session's cursor; returns a short status.

    Under the session's lease, fenced: taking the lease bumps the cursor's `fence`, and each
    page is submitted and its cursor advanced only while the cursor still carries this run's
    fence, so a run that lost its lease (its worker paused past it, Redis frozen) commits
    nothing once another run took over.
    """
    with redis_lock(f"extract:{session_pk}", ttl_seconds=LOCK_SECONDS) as lease:
        if lease is None:
            raise ExtractionBusy(session_pk)
        session = Session.objects.select_related("tenant", "end_user").filter(pk=session_pk).first()
        if session is None or session.end_user is None:  # deleted, or its user erased
            return "gone"
        ExtractionCursor.objects.get_or_create(session=session)
        ExtractionCursor.objects.filter(pk=session.pk).update(fence=F("fence") + 1)
        cursor = ExtractionCursor.objects.get(pk=session.pk)
        fence = cursor.fence
        start = cursor.extracted_seq
        context = ExtractionContext(
            user_id=session.end_user.external_id,
            session_id=session.external_id,
            task_id=session.task_id,
            vocabulary=vocabulary_for(tenant=session.tenant),
        )
        rules = RuleExtractor()
        llm = llm_extractor()
        while cursor.extracted_seq < session.event_count:
            page = events_after(session=session, after=cursor.extracted_seq, limit=PAGE_SIZE)
            if not page.events:
                break
            # An event that reads as an instruction to the model is held for review and
            # read by no extractor (the transcript keeps it).
            held = events_held(session=session, events=page.events)
            events = [e for e in page.events if int(e["seq"]) not in held]
            candidates = rules.extract(events=events, context=context) if events else []
            if llm is not None and events:
                try:
                    candidates += llm.extract(events=events, context=context)
                except StoreUnavailable:
                    logger.warning("LLM extractor unavailable; rules only", exc_info=True)
            lease.ensure()
            _fenced(session_pk=session.pk, fence=fence)
            if candidates:
                try:
                    proposals_submit(tenant=session.tenant, candidates=candidates, strict=False)
                except (ObjectDoesNotExist, IntegrityError):
                    if not Session.objects.filter(pk=session_pk).exists():
                        return "gone"  # erased (with its user or tenant) while we read it
                    raise
            advanced = ExtractionCursor.objects.filter(pk=session.pk, fence=fence).update(
                extracted_seq=Greatest(F("extracted_seq"), page.next_after)
            )
            if not advanced:
                _fenced(session_pk=session.pk, fence=fence)
                return "gone"  # the cursor went with its session
            cursor.extracted_seq = page.next_after
            session.refresh_from_db(fields=["event_count"])
        status = (
            "up_to_date"
            if cursor.extracted_seq == start
            else f"extracted {start + 1}-{cursor.extracted_seq}"
        )
        logger.info("session %s: %s", session.external_id, status, extra={"session_pk": session.pk})
        return status


def _fenced(*, session_pk: int, fence: int) -> None:
    """Raise LeaseLost when a later run has taken the session's cursor over."""
    current = ExtractionCursor.objects.filter(pk=session_pk).values_list("fence", flat=True).first()
    if current is not None and current != fence:
        raise LeaseLost(f"extraction of session {session_pk} was taken over (fence {current})")


def sessions_lagging(*, quiet_seconds: int = 30, limit: int = 500) -> list[int]:
    """Sessions whose cursor is behind their transcript, quiet for a while (missed runs)."""
    quiet_since = timezone.now() - timedelta(seconds=quiet_seconds)
    lagging = Session.objects.filter(last_event_at__lte=quiet_since).filter(
        Q(extraction_cursor__isnull=True, event_count__gt=0)
        | Q(event_count__gt=F("extraction_cursor__extracted_seq"))
    )
    return list(lagging.order_by("last_event_at").values_list("pk", flat=True)[:limit])
