"""Writes of episodic history: the outbox of appended events, its drain into both indexes,
the catch-up and audit of what a lost drain missed, and how far indexing lags. Entries are
made in `memories/history/entries.py`; rebuilds, drift and removal are in
`memories/history/rebuild.py`.

An append that commits records the range of new events in the outbox (one row, no content:
the segments stay the only copy of what was said). A drain reads those events back from the
segments, turns each user or assistant turn (and a short digest of each tool result) into a
history entry readable on its own (speaker prefix, the previous turns as its context, the
tenant's redaction applied), embeds the entries in batches, writes them to Milvus and then
Elasticsearch under ids derived from (session, seq), and deletes the rows. Replays overwrite
the same entries with the same text, so every step is safe to repeat.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Min, Q, Sum
from django.db.models.functions import Greatest
from django.utils import timezone

from memories.history.documents import HistoryDocument, entry_id_for
from memories.history.entries import (
    INDEXED_ROLES,
    documents_for_range,
    embedding_input,
    indexable,
    read_events,
)
from memories.history.models import HistoryCursor, HistoryOutbox
from memories.history.search import history_search_index
from memories.history.selectors import history_enabled
from memories.history.vectors import history_vector_index
from memories.ltm.embedder import embedder
from memoryproject.errors import StoreUnavailable
from profiles.models import Tenant
from transcripts.models import Session
from transcripts.reactions import Appended

logger = logging.getLogger(__name__)

# An outbox row whose range names a segment object that is gone carries this error; after
# PARK_ATTEMPTS drains that could not read it, no drain takes it again (it is parked).
MISSING_SEGMENT = "segment missing: "
PARK_ATTEMPTS = 3
_PARKED = Q(last_error__startswith=MISSING_SEGMENT, attempts__gte=PARK_ATTEMPTS)


def index_documents(documents: Sequence[HistoryDocument]) -> None:
    """Embed the entries in batches and write them to Milvus, then Elasticsearch (an entry
    lexical search can find, the vector index holds too)."""
    if not documents:
        return
    batch = settings.HISTORY_EMBED_BATCH
    model = embedder()
    embedded: list[HistoryDocument] = []
    for start in range(0, len(documents), batch):
        chunk = documents[start : start + batch]
        vectors = model.embed_passages([embedding_input(d) for d in chunk]).tolist()
        embedded += [replace(d, vector=v) for d, v in zip(chunk, vectors, strict=True)]
    history_vector_index().upsert(documents=embedded)
    history_search_index().upsert(documents=embedded)


def advance_cursor(session_pk: int, seq: int) -> None:
    cursor, created = HistoryCursor.objects.get_or_create(
        session_id=session_pk, defaults={"indexed_seq": seq}
    )
    if not created and cursor.indexed_seq < seq:
        HistoryCursor.objects.filter(pk=session_pk).update(
            indexed_seq=Greatest(F("indexed_seq"), seq)
        )


# --- the outbox ------------------------------------------------------------------------------
def history_record_append(
    *, session_pk: int, first_seq: int, last_seq: int, roles: frozenset[str]
) -> bool:
    """Note an append's new events for indexing, inside its transaction; returns whether a
    row was added.

    Appends of system events only (such as recall records) hold nothing to index: a cursor
    that had indexed everything before them moves past them instead.
    """
    if not first_seq or not last_seq:
        return False
    session = Session.objects.filter(pk=session_pk).values("tenant_id", "erased_at").first()
    if session is None or session["erased_at"] is not None:
        return False
    if not history_enabled(tenant_id=session["tenant_id"]):
        return False
    if roles and not (roles & INDEXED_ROLES):
        moved = HistoryCursor.objects.filter(
            session_id=session_pk, indexed_seq=first_seq - 1
        ).update(indexed_seq=last_seq)
        if moved or first_seq == 1:
            if not moved:
                HistoryCursor.objects.get_or_create(
                    session_id=session_pk, defaults={"indexed_seq": last_seq}
                )
            return False
    HistoryOutbox.objects.create(session_id=session_pk, first_seq=first_seq, last_seq=last_seq)
    return True


def history_on_append(*, appended: Appended) -> None:
    """An append's reaction inside its transaction: record its range for indexing, so the two
    commit together or not at all; the drain is asked for once they have committed."""
    if history_record_append(
        session_pk=appended.session_pk,
        first_seq=appended.first_seq,
        last_seq=appended.last_seq,
        roles=appended.roles,
    ):
        transaction.on_commit(history_drain_enqueue)


def history_drain_enqueue() -> None:
    """Ask a worker to drain the outbox a moment from now; appends meanwhile share the drain."""
    from memories.history.tasks import history_outbox_drain_task
    from memoryproject import redis_keys as keys
    from memoryproject.redis_client import redis_connection

    delay = settings.HISTORY_DRAIN_DELAY_SECONDS
    try:
        fresh = redis_connection().set(
            keys.history_drain_scheduled(), "1", nx=True, ex=max(delay * 5, 5)
        )
    except Exception:  # Redis is down: enqueue anyway, one drain per append
        fresh = True
    if not fresh:
        return
    try:
        history_outbox_drain_task.apply_async(countdown=delay)
    except Exception:  # the broker is down: the beat job drains the outbox later
        logger.warning("could not enqueue the history outbox drain", exc_info=True)


def history_drain_started() -> None:
    """A drain has begun: the next append schedules another one."""
    from memoryproject import redis_keys as keys
    from memoryproject.redis_client import redis_connection

    try:
        redis_connection().delete(keys.history_drain_scheduled())
    except Exception:
        logger.warning("history drain flag not cleared", exc_info=True)


@dataclass(frozen=True)
class DrainResult:
    indexed: int  # entries written
    events: int  # events covered by the rows drained
    rows: int
    more: bool


def history_outbox_drain(*, limit_events: int | None = None) -> DrainResult:
    """Index the events of the oldest outbox rows, up to about `limit_events` events; rows are
    deleted once both indexes hold their entries. Rows of erased sessions, or of tenants that
    switched history off, are dropped without indexing."""
    limit = limit_events or settings.HISTORY_DRAIN_EVENTS
    with transaction.atomic():
        candidates = list(
            HistoryOutbox.objects.select_for_update(skip_locked=True, of=("self",))
            .exclude(_PARKED)
            .select_related("session__tenant", "session__end_user")
            .order_by("pk")[:200]
        )
        rows: list[HistoryOutbox] = []
        covered = 0
        for row in candidates:
            if rows and covered + row.events > limit:
                break
            rows.append(row)
            covered += row.events
        if not rows:
            return DrainResult(indexed=0, events=0, rows=0, more=False)
        ranges: dict[int, tuple[Session, int, int]] = {}
        for row in rows:
            session, low, high = ranges.get(row.session_id, (row.session, row.first_seq, 0))
            ranges[row.session_id] = (session, min(low, row.first_seq), max(high, row.last_seq))
        enabled: dict[int, bool] = {}
        documents: list[HistoryDocument] = []
        missing: dict[int, str] = {}  # session pk -> the segment its range could not read
        error = ""
        try:
            for session_pk, (session, low, high) in ranges.items():
                if session.erased_at is not None or session.end_user is None:
                    continue
                if session.tenant_id not in enabled:
                    enabled[session.tenant_id] = history_enabled(tenant_id=session.tenant_id)
                if not enabled[session.tenant_id]:
                    continue
                try:
                    documents += documents_for_range(session=session, first_seq=low, last_seq=high)
                except FileNotFoundError as exc:
                    # A segment object is gone: no retry brings it back, and the other
                    # sessions' rows must not wait behind it (verify_transcripts names it).
                    missing[session_pk] = str(exc.filename or exc)
            index_documents(documents)
        except StoreUnavailable as exc:
            error = str(exc)[:1000]
        else:
            for session_pk, (_, _, high) in ranges.items():
                if session_pk not in missing:
                    advance_cursor(session_pk, high)
            for session_pk, name in missing.items():
                logger.error(
                    "history: session %s lacks segment %s (parked after %d attempts)",
                    session_pk,
                    name,
                    PARK_ATTEMPTS,
                )
                HistoryOutbox.objects.filter(
                    pk__in=[r.pk for r in rows if r.session_id == session_pk]
                ).update(attempts=F("attempts") + 1, last_error=f"{MISSING_SEGMENT}{name}"[:1000])
            HistoryOutbox.objects.filter(
                pk__in=[r.pk for r in rows if r.session_id not in missing]
            ).delete()
    if error:
        HistoryOutbox.objects.filter(pk__in=[r.pk for r in rows]).update(
            attempts=F("attempts") + 1, last_error=error
        )
        raise StoreUnavailable(error)
    return DrainResult(
        indexed=len(documents),
        events=covered,
        rows=len(rows),
        more=HistoryOutbox.objects.exists(),
    )


def _unqueued(*, quiet_seconds: int) -> Any:
    """Sessions with events above their history cursor and no outbox row to index them, quiet
    for `quiet_seconds` (a lost append signal, history switched on again, rows dropped)."""
    quiet_since = timezone.now() - timedelta(seconds=quiet_seconds)
    return (
        Session.objects.filter(
            last_event_at__lte=quiet_since,
            erased_at__isnull=True,
            end_user__isnull=False,
            history_outbox__isnull=True,
        )
        .filter(
            Q(history_cursor__isnull=True, event_count__gt=0)
            | Q(event_count__gt=F("history_cursor__indexed_seq"))
        )
        .exclude(tenant__recall_policy__history_enabled=False)
    )


def history_catch_up(*, quiet_seconds: int = 60, limit: int = 500) -> int:
    """Queue the unindexed events above the cursor of sessions without a pending row (history
    switched on again, or rows dropped); returns how many sessions were queued. Gaps below a
    cursor are found by `history_audit`."""
    lagging = _unqueued(quiet_seconds=quiet_seconds).values_list(
        "pk", "event_count", "history_cursor__indexed_seq"
    )[:limit]
    rows = [
        HistoryOutbox(session_id=pk, first_seq=(indexed or 0) + 1, last_seq=count)
        for pk, count, indexed in lagging
    ]
    HistoryOutbox.objects.bulk_create(rows)
    return len(rows)


def _runs(seqs: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive runs of sorted sequence numbers, as (first, last)."""
    runs: list[tuple[int, int]] = []
    for seq in seqs:
        if runs and seq == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], seq)
        else:
            runs.append((seq, seq))
    return runs


def _position() -> int:
    from memoryproject import redis_keys as keys
    from memoryproject.redis_client import redis_connection

    try:
        return int(redis_connection().get(keys.history_audit_position()) or 0)
    except Exception:  # Redis is down: start the round again
        logger.warning("history audit position not read", exc_info=True)
        return 0


def _set_position(pk: int) -> None:
    from memoryproject import redis_keys as keys
    from memoryproject.redis_client import redis_connection

    try:
        redis_connection().set(keys.history_audit_position(), str(pk))
    except Exception:
        logger.warning("history audit position not kept", exc_info=True)


def session_gaps(*, session: Session) -> list[tuple[int, int]]:
    """Ranges of a session's events below its cursor whose entries neither index holds and no
    pending outbox row covers (an append whose outbox row was lost, entries lost by a store)."""
    cursor = HistoryCursor.objects.filter(session=session).values_list("indexed_seq", flat=True)
    indexed_seq = cursor.first() or 0
    if not indexed_seq:
        return []
    tenant_id = str(session.tenant_id)
    held = set(history_search_index().session_ids(tenant_id=tenant_id, session_pk=session.pk))
    held &= set(history_vector_index().session_ids(tenant_id=tenant_id, session_pk=session.pk))
    pending = list(
        HistoryOutbox.objects.filter(session=session).values_list("first_seq", "last_seq")
    )
    missing = []
    for event in read_events(session, after=0, last_seq=indexed_seq):
        seq = int(event["seq"])
        if not indexable(event) or any(low <= seq <= high for low, high in pending):
            continue
        if entry_id_for(session_pk=session.pk, seq=seq) not in held:
            missing.append(seq)
    return _runs(missing)


def history_audit(*, sessions: int | None = None) -> int:
    """Check the next few live sessions (round-robin by primary key) for gaps below their
    cursor and queue each gap in the outbox; returns how many ranges were queued."""
    limit = settings.HISTORY_AUDIT_SESSIONS if sessions is None else sessions
    if not limit:
        return 0
    after = _position()
    batch = list(
        live_sessions(None).filter(pk__gt=after, history_cursor__indexed_seq__gt=0)[:limit]
    )
    _set_position(batch[-1].pk if len(batch) == limit else 0)
    enabled: dict[int, bool] = {}
    rows = []
    for session in batch:
        if session.tenant_id not in enabled:
            enabled[session.tenant_id] = history_enabled(tenant_id=session.tenant_id)
        if not enabled[session.tenant_id]:
            continue
        try:
            gaps = session_gaps(session=session)
        except FileNotFoundError as exc:  # a lost segment: verify_transcripts reports it
            if _first_report_today(session.pk):
                logger.error("history audit: session %s lacks segment %s", session.pk, exc.filename)
            continue
        for low, high in gaps:
            logger.warning("history of session %s lacks events %d-%d", session.pk, low, high)
            rows.append(HistoryOutbox(session=session, first_seq=low, last_seq=high))
    HistoryOutbox.objects.bulk_create(rows)
    return len(rows)


LACKING_REPORT_SECONDS = 24 * 3600


def _first_report_today(session_pk: int) -> bool:
    """Whether a session's lost segment is reported now: once a day, not on every pass of the
    audit (it goes round every few minutes); always when Redis cannot say."""
    from memoryproject import redis_keys as keys
    from memoryproject.redis_client import redis_connection

    try:
        return bool(
            redis_connection().set(
                keys.history_audit_lacking(session_pk), "1", nx=True, ex=LACKING_REPORT_SECONDS
            )
        )
    except Exception:
        return True


def live_sessions(tenant: Tenant | None) -> Any:
    """Sessions not erased whose end user is known (of one tenant or all), by primary key."""
    sessions = Session.objects.filter(erased_at__isnull=True, end_user__isnull=False)
    if tenant is not None:
        sessions = sessions.filter(tenant=tenant)
    return sessions.select_related("tenant", "end_user").order_by("pk")


# --- lag ---------------------------------------------------------------------------------
UNQUEUED_COUNT_LIMIT = 1000


def history_lag() -> dict[str, Any]:
    """How far indexing is behind: pending rows and events, the oldest row's age, the bound,
    and sessions with unindexed events that no outbox row covers (counted up to 1000; the
    catch-up job queues them); rows parked for a missing segment apart."""
    parked = HistoryOutbox.objects.filter(_PARKED).count()
    pending = HistoryOutbox.objects.exclude(_PARKED).aggregate(
        rows=Count("pk"),
        events=Sum(F("last_seq") - F("first_seq") + 1),
        oldest=Min("created_at"),
        failing=Count("pk", filter=Q(attempts__gt=0)),
    )
    oldest = pending["oldest"]
    age = round((timezone.now() - oldest).total_seconds(), 1) if oldest else 0.0
    bound = settings.HISTORY_MAX_LAG_SECONDS
    return {
        "pending_rows": int(pending["rows"] or 0),
        "pending_events": int(pending["events"] or 0),
        "failing_rows": int(pending["failing"] or 0),
        # Rows whose segment object is gone: no drain indexes them (verify_transcripts).
        "parked_rows": parked,
        "lag_seconds": age,
        "bound_seconds": bound,
        "within_bound": age <= bound,
        "unqueued_sessions": _unqueued(quiet_seconds=60)[:UNQUEUED_COUNT_LIMIT].count(),
    }
