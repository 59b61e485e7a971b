"""Rebuilding both history indexes from the transcript segments, comparing them with the
segments (drift), and removing a tenant's or an end user's entries from both."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from memories.history.documents import HistoryDocument, entry_id_for
from memories.history.entries import documents_for_range, indexable, read_events
from memories.history.search import history_search_index
from memories.history.selectors import history_enabled
from memories.history.services import advance_cursor, index_documents, live_sessions
from memories.history.vectors import history_vector_index
from memories.quarantine.services import events_held
from profiles.models import Tenant
from transcripts.models import Session


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
    sessions = live_sessions(tenant).filter(tenant_id__in=list(live_by_tenant))
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
        advance_cursor(session.pk, high)
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

    @property
    def found(self) -> dict[str, dict[str, list[str]]]:
        return {"missing": self.missing, "extra": self.extra}


def _expected_ids(tenant: Tenant | None) -> Iterator[tuple[str, Session]]:
    """Ids of the entries that should exist: indexable events of live sessions of enabled
    tenants, up to each session's cursor (later events are still in the outbox)."""
    enabled: dict[int, bool] = {}
    for session in live_sessions(tenant).select_related("history_cursor"):
        if session.tenant_id not in enabled:
            enabled[session.tenant_id] = history_enabled(tenant_id=session.tenant_id)
        cursor = getattr(session, "history_cursor", None)
        if not enabled[session.tenant_id] or cursor is None or not cursor.indexed_seq:
            continue
        events = read_events(session, after=0, last_seq=cursor.indexed_seq)
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
