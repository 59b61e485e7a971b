"""Writes of episodic history: the outbox of appended events, its drain into both indexes,
rebuilds from the transcript segments, drift checks and erasure.

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
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Min, Q, Sum
from django.db.models.functions import Greatest
from django.utils import timezone

from memories.history.documents import HistoryDocument, entry_id_for
from memories.history.models import HistoryCursor, HistoryOutbox
from memories.history.search import history_search_index
from memories.history.selectors import history_enabled
from memories.history.vectors import history_vector_index
from memories.ltm.embedder import embedder
from memories.ltm.text import bm25_text
from memories.quarantine.services import events_held
from memoryproject.errors import StoreUnavailable
from memoryproject.redaction import Redactor, redactor_for
from profiles.models import Tenant
from transcripts.models import Session
from transcripts.reactions import Appended
from transcripts.selectors import events_after

logger = logging.getLogger(__name__)

INDEXED_ROLES = frozenset({"user", "assistant", "tool"})
# An outbox row whose range names a segment object that is gone carries this error; after
# PARK_ATTEMPTS drains that could not read it, no drain takes it again (it is parked).
MISSING_SEGMENT = "segment missing: "
PARK_ATTEMPTS = 3
_PARKED = Q(last_error__startswith=MISSING_SEGMENT, attempts__gte=PARK_ATTEMPTS)
CONTEXT_TURN_CHARS = 300
_SPACES = re.compile(r"\s+")


# --- entries ---------------------------------------------------------------------------------
def _speaker(event: dict[str, Any]) -> str:
    metadata = event.get("metadata") or {}
    for name in ("speaker", "name"):
        value = metadata.get(name) if isinstance(metadata, dict) else None
        if isinstance(value, str) and value.strip() and len(value) <= 64:
            return value.strip()
    return str(event.get("role", ""))


def tool_digest(event: dict[str, Any], *, limit: int | None = None) -> str:
    """A short digest of a tool result: the tool's name, the start of its output, its size."""
    limit = limit or settings.HISTORY_TOOL_DIGEST_CHARS
    given = event.get("metadata")
    metadata: dict[str, Any] = given if isinstance(given, dict) else {}
    name = next(
        (
            str(metadata[key])
            for key in ("tool", "tool_name", "name")
            if isinstance(metadata.get(key), str) and metadata[key].strip()
        ),
        str(event.get("tool_call_id") or "tool"),
    )[:64]
    body = _SPACES.sub(" ", str(event.get("content", ""))).strip()
    if len(body) > limit:
        body = f"{body[:limit].rstrip()} … ({len(body)} chars)"
    return f"tool {name}: {body}"


def indexable(event: dict[str, Any]) -> bool:
    """Whether an event becomes a history entry (user, assistant and tool events with text)."""
    return event.get("role") in INDEXED_ROLES and bool(str(event.get("content", "")).strip())


def entry_text(event: dict[str, Any]) -> str:
    """The event as an entry states it, before redaction: who said it, then what was said."""
    if event["role"] == "tool":
        return tool_digest(event)
    content = str(event["content"]).strip()
    speaker = _speaker(event)
    text = content if content.startswith(f"{speaker}:") else f"{speaker}: {content}"
    limit = settings.HISTORY_TEXT_MAX_CHARS
    return text if len(text) <= limit else f"{text[:limit].rstrip()} …"


def _occurred_at(event: dict[str, Any]) -> datetime:
    try:
        moment = datetime.fromisoformat(str(event.get("created_at")))
    except ValueError:
        return timezone.now()
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)


def _short(text: str) -> str:
    return text if len(text) <= CONTEXT_TURN_CHARS else f"{text[:CONTEXT_TURN_CHARS].rstrip()} …"


def session_documents(
    *,
    session: Session,
    events: Sequence[dict[str, Any]],
    first_seq: int,
    redactor: Redactor,
    context_turns: int | None = None,
) -> list[HistoryDocument]:
    """The entries of the events with seq >= first_seq; earlier events serve as context only.

    An event that reads as an instruction to the model is held for review
    (`memories.quarantine`): it becomes no entry and no other entry's context.
    """
    turns = settings.HISTORY_CONTEXT_TURNS if context_turns is None else context_turns
    previous: deque[str] = deque(maxlen=max(turns, 1))
    user_id = session.end_user.external_id if session.end_user else ""
    documents = []
    held = events_held(session=session, events=[e for e in events if indexable(e)])
    for event in events:
        if not indexable(event) or int(event["seq"]) in held:
            continue
        text = redactor.text(entry_text(event)).text
        if int(event["seq"]) >= first_seq:
            context = "\n".join(previous) if turns else ""
            documents.append(
                HistoryDocument(
                    entry_id=entry_id_for(session_pk=session.pk, seq=int(event["seq"])),
                    tenant_id=str(session.tenant_id),
                    user_id=user_id,
                    session_id=session.external_id,
                    session_pk=session.pk,
                    seq=int(event["seq"]),
                    event_id=str(event.get("id", "")),
                    role=str(event["role"]),
                    occurred_at=_occurred_at(event),
                    text=text,
                    context=context,
                    bm25_text=bm25_text(text),
                    bm25_context=bm25_text(context),
                )
            )
        previous.append(_short(text))
    return documents


def _read_events(session: Session, *, after: int, last_seq: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while after < last_seq:
        page = events_after(session=session, after=after, limit=500)
        events.extend(e for e in page.events if e["seq"] <= last_seq)
        if not page.events or not page.has_more:
            break
        after = page.next_after
    return events


def documents_for_range(
    *, session: Session, first_seq: int, last_seq: int, redactor: Redactor | None = None
) -> list[HistoryDocument]:
    """The entries of events first_seq..last_seq of a session, read from its segments."""
    # A few events more than the context needs, since system events do not count as turns.
    lead = settings.HISTORY_CONTEXT_TURNS + 4 if settings.HISTORY_CONTEXT_TURNS else 0
    events = _read_events(session, after=max(0, first_seq - 1 - lead), last_seq=last_seq)
    return session_documents(
        session=session,
        events=events,
        first_seq=first_seq,
        redactor=redactor or redactor_for(session.tenant),
    )


def embedding_input(document: HistoryDocument) -> str:
    """What is embedded of an entry: its text, with its context when so configured."""
    if settings.HISTORY_EMBED_CONTEXT and document.context:
        return f"{document.context}\n{document.text}"
    return document.text


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


def _advance_cursor(session_pk: int, seq: int) -> None:
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
                    _advance_cursor(session_pk, high)
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
    for event in _read_events(session, after=0, last_seq=indexed_seq):
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
        _live_sessions(None).filter(pk__gt=after, history_cursor__indexed_seq__gt=0)[:limit]
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
            logger.error("history audit: session %s lacks segment %s", session.pk, exc.filename)
            continue
        for low, high in gaps:
            logger.warning("history of session %s lacks events %d-%d", session.pk, low, high)
            rows.append(HistoryOutbox(session=session, first_seq=low, last_seq=high))
    HistoryOutbox.objects.bulk_create(rows)
    return len(rows)


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


# --- rebuilds, drift, erasure -----------------------------------------------------------------
def _live_sessions(tenant: Tenant | None) -> Any:
    sessions = Session.objects.filter(erased_at__isnull=True, end_user__isnull=False)
    if tenant is not None:
        sessions = sessions.filter(tenant=tenant)
    return sessions.select_related("tenant", "end_user").order_by("pk")


def _tenants(tenant: Tenant | None) -> list[Tenant]:
    return [tenant] if tenant is not None else list(Tenant.objects.order_by("pk"))


def remove_tenant_entries(*, tenant_id: int, keep_sessions: Sequence[int] | None = None) -> int:
    """Delete a tenant's entries from both indexes (all, or all but these sessions')."""
    search, vectors = history_search_index(), history_vector_index()
    stored = [
        entry_id
        for entry_id, session_pk in vectors.stored(tenant_id=str(tenant_id))
        if keep_sessions is None or session_pk not in keep_sessions
    ]
    removed = search.remove_tenant(tenant_id=str(tenant_id), keep_sessions=keep_sessions)
    for start in range(0, len(stored), 1000):
        vectors.remove_ids(ids=stored[start : start + 1000])
    vectors.flush()
    return max(removed, len(stored))


@dataclass(frozen=True)
class ReindexResult:
    sessions: int
    events: int
    entries: int
    removed: int
    switched_off: list[str] = field(default_factory=list)


def history_reindex(
    *,
    tenant: Tenant | None = None,
    batch_size: int = 256,
    progress: Callable[[int, int], None] | None = None,
) -> ReindexResult:
    """Rebuild both history indexes from the transcript segments (of one tenant or all).

    Entries keep their ids, so a rerun overwrites rather than duplicates; entries of erased
    sessions, and every entry of a tenant that switched history off, are removed.
    """
    search, vectors = history_search_index(), history_vector_index()
    search.ensure()
    vectors.ensure()
    removed = 0
    switched_off = []
    live_by_tenant: dict[int, list[int]] = {}
    for each in _tenants(tenant):
        if not history_enabled(tenant_id=each.pk):
            removed += remove_tenant_entries(tenant_id=each.pk)
            switched_off.append(each.slug)
        else:
            live_by_tenant[each.pk] = []
    sessions = _live_sessions(tenant).filter(tenant_id__in=list(live_by_tenant))
    total = sum(sessions.values_list("event_count", flat=True))
    done = entries = count = 0
    pending: list[HistoryDocument] = []
    for session in sessions.iterator(chunk_size=200):
        count += 1
        live_by_tenant[session.tenant_id].append(session.pk)
        high = session.event_count
        if high:
            pending += documents_for_range(session=session, first_seq=1, last_seq=high)
        while len(pending) >= batch_size:
            index_documents(pending[:batch_size])
            entries += batch_size
            pending = pending[batch_size:]
        _advance_cursor(session.pk, high)
        done += high
        if progress:
            progress(done, total)
    index_documents(pending)
    entries += len(pending)
    for tenant_id, keep in live_by_tenant.items():
        removed += remove_tenant_entries(tenant_id=tenant_id, keep_sessions=keep)
    vectors.flush()
    return ReindexResult(
        sessions=count, events=done, entries=entries, removed=removed, switched_off=switched_off
    )


@dataclass(frozen=True)
class HistoryDriftReport:
    missing: dict[str, list[str]]  # index -> entries the transcripts call for that it lacks
    extra: dict[str, list[str]]  # index -> entries no live, indexed transcript event backs

    @property
    def clean(self) -> bool:
        return not any([*self.missing.values(), *self.extra.values()])


def _expected_ids(tenant: Tenant | None) -> Iterator[tuple[str, Session]]:
    """Ids of the entries that should exist: indexable events of live sessions of enabled
    tenants, up to each session's cursor (later events are still in the outbox)."""
    enabled: dict[int, bool] = {}
    for session in _live_sessions(tenant).select_related("history_cursor"):
        if session.tenant_id not in enabled:
            enabled[session.tenant_id] = history_enabled(tenant_id=session.tenant_id)
        cursor = getattr(session, "history_cursor", None)
        if not enabled[session.tenant_id] or cursor is None or not cursor.indexed_seq:
            continue
        events = _read_events(session, after=0, last_seq=cursor.indexed_seq)
        held = events_held(session=session, events=[e for e in events if indexable(e)])
        for event in events:
            if indexable(event) and int(event["seq"]) not in held:
                yield entry_id_for(session_pk=session.pk, seq=int(event["seq"])), session


def history_drift(*, tenant: Tenant | None = None, repair: bool = False) -> HistoryDriftReport:
    """Compare the entries the transcripts call for with both indexes; optionally repair."""
    expected: dict[str, Session] = dict(_expected_ids(tenant))
    tenant_id = str(tenant.pk) if tenant is not None else None
    held = {
        "elasticsearch": {i for i, _ in history_search_index().stored(tenant_id=tenant_id)},
        "milvus": {i for i, _ in history_vector_index().stored(tenant_id=tenant_id)},
    }
    report = HistoryDriftReport(
        missing={name: sorted(expected.keys() - ids) for name, ids in held.items()},
        extra={name: sorted(ids - expected.keys()) for name, ids in held.items()},
    )
    if repair and not report.clean:
        wanted = {i for ids in report.missing.values() for i in ids}
        by_session: dict[int, tuple[Session, set[int]]] = {}
        for entry_id in wanted:
            session = expected[entry_id]
            by_session.setdefault(session.pk, (session, set()))[1].add(
                int(entry_id.rsplit("_", 1)[1])
            )
        for session, seqs in by_session.values():
            documents = documents_for_range(
                session=session, first_seq=min(seqs), last_seq=max(seqs)
            )
            index_documents([d for d in documents if d.seq in seqs])
        history_search_index().remove_ids(ids=report.extra["elasticsearch"])
        history_vector_index().remove_ids(ids=report.extra["milvus"])
        history_vector_index().flush()
    return report


def history_erase_user(*, tenant_id: int, user_id: str) -> dict[str, int]:
    """Delete every history entry of one end user from both indexes; returns the counts."""
    documents = history_search_index().remove_user(tenant_id=str(tenant_id), user_id=user_id)
    index, vectors = history_vector_index(), 0
    # Counted by id (a delete by filter does not say how many it removed on every server).
    while held := index.ids_where(tenant_id=str(tenant_id), user_id=user_id):
        index.remove_ids(ids=held)
        index.flush()
        vectors += len(held)
    index.remove_user(tenant_id=str(tenant_id), user_id=user_id)
    index.flush()
    return {"history_documents": documents, "history_vectors": vectors}
