"""The history outbox row commits with its append, and gaps below a cursor are found."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError
from django.urls import reverse

from memories.history import rebuild as history_rebuild
from memories.history import services as history_services
from memories.history.models import HistoryCursor, HistoryOutbox
from memories.history.search import history_search_index
from memories.history.selectors import history_search
from memories.history.vectors import history_vector_index
from memories.tasks import history_outbox_drain_task
from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection
from tests.memories.history.test_history import append
from transcripts.models import EventRef, Segment, Session
from transcripts.storage import segments_under


@pytest.fixture(autouse=True)
def fresh_flags():
    """No drain pending and the audit at the start of its round (both live in Redis)."""
    names = (keys.history_drain_scheduled(), keys.history_audit_position())
    redis_connection().delete(*names)
    yield
    redis_connection().delete(*names)


def post(client, session: str, events: list[dict]):
    return client.post(
        reverse("transcripts:events", kwargs={"session_id": session}),
        {"user_id": "u_1", "events": events},
        format="json",
    )


def test_the_outbox_row_is_written_in_the_appends_transaction(tenant, owner) -> None:
    # No commit callback runs here: whatever exists was written inside the append's transaction.
    response = post(owner, "s-1", [{"role": "user", "content": "The fjord trip is in June"}])

    assert response.status_code == 201, response.json()
    [row] = HistoryOutbox.objects.all()
    assert (row.session.external_id, row.first_seq, row.last_seq) == ("s-1", 1, 1)


def test_an_append_whose_outbox_row_fails_is_not_stored(tenant, owner, monkeypatch) -> None:
    # Given a first append, stored with its row
    assert post(owner, "s-1", [{"role": "user", "content": "first"}]).status_code == 201
    segments = Segment.objects.count()
    objects = segments_under(prefix=f"{tenant.pk}/")

    # When PostgreSQL drops the connection as the next append's outbox row is inserted
    def cut(**_):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(history_services, "history_record_append", cut)
    response = post(owner, "s-1", [{"id": "m-2", "role": "user", "content": "second"}])

    # Then the append is refused as an outage and nothing of it is stored
    assert response.status_code == 503, response.content
    assert response.json()["error"]["code"] == "store_unavailable"
    assert Segment.objects.count() == segments
    assert not EventRef.objects.filter(message_id="m-2").exists()
    assert Session.objects.get(tenant=tenant, external_id="s-1").event_count == 1
    assert HistoryOutbox.objects.count() == 1
    assert sorted(segments_under(prefix=f"{tenant.pk}/")) == sorted(objects)


def _lose_first_append(owner, capture) -> Session:
    """Two appends; the first one's outbox row lost (as a failed after-commit receiver lost
    it before), the second indexed: the cursor stands above the first append's events."""
    redis_connection().set(keys.history_drain_scheduled(), "1", ex=60)
    append(
        owner,
        "s-gap",
        "u_1",
        [
            {"id": "g-1", "role": "user", "content": "My sister lives in Tromsø"},
            {"id": "g-2", "role": "assistant", "content": "Tromsø has long winters."},
        ],
        capture,
    )
    HistoryOutbox.objects.all().delete()
    append(owner, "s-gap", "u_1", [{"id": "g-3", "role": "user", "content": "Thanks"}], capture)
    history_services.history_outbox_drain()
    session = Session.objects.get(external_id="s-gap")
    assert HistoryCursor.objects.get(session=session).indexed_seq == 3
    assert history_search_index().session_ids(
        tenant_id=str(session.tenant_id), session_pk=session.pk
    ) == [f"hist_{session.pk}_3"]
    return session


def test_the_catch_up_job_finds_a_gap_below_the_cursor(
    tenant, owner, settings, django_capture_on_commit_callbacks
) -> None:
    session = _lose_first_append(owner, django_capture_on_commit_callbacks)
    assert history_services.history_catch_up(quiet_seconds=0) == 0  # the cursor hides it
    assert history_services.session_gaps(session=session) == [(1, 2)]
    settings.HISTORY_AUDIT_SESSIONS = 50

    history_outbox_drain_task.delay(catch_up=True)  # the beat job (eager here)

    hits = history_search(tenant=tenant, user_id="u_1", query="sister Tromsø").hits
    assert "g-1" in {hit.event_id for hit in hits}
    for index in (history_search_index(), history_vector_index()):
        ids = index.session_ids(tenant_id=str(tenant.pk), session_pk=session.pk)
        assert sorted(ids) == [f"hist_{session.pk}_{seq}" for seq in (1, 2, 3)]
    assert not HistoryOutbox.objects.exists()
    assert history_services.session_gaps(session=session) == []
    assert history_services.history_audit(sessions=50) == 0  # nothing left to queue


def test_the_audit_leaves_ranges_a_pending_row_covers(
    tenant, owner, django_capture_on_commit_callbacks
) -> None:
    session = _lose_first_append(owner, django_capture_on_commit_callbacks)
    HistoryOutbox.objects.create(session=session, first_seq=1, last_seq=2)  # a drain behind

    assert history_services.session_gaps(session=session) == []
    assert history_services.history_audit(sessions=50) == 0


def test_drift_finds_and_repairs_a_gap_below_the_cursor(
    tenant, owner, django_capture_on_commit_callbacks
) -> None:
    session = _lose_first_append(owner, django_capture_on_commit_callbacks)
    gap = [f"hist_{session.pk}_1", f"hist_{session.pk}_2"]

    report = history_rebuild.history_drift(tenant=tenant)

    assert report.missing == {"elasticsearch": gap, "milvus": gap}
    with pytest.raises(CommandError):
        call_command("check_history_drift", tenant=tenant.slug, stdout=StringIO())
    out = StringIO()
    call_command("check_history_drift", tenant=tenant.slug, repair=True, stdout=out)
    assert "repaired" in out.getvalue()
    assert history_rebuild.history_drift(tenant=tenant).clean
    assert history_services.session_gaps(session=session) == []


def test_a_lost_segment_is_reported_once_a_day_not_on_every_round(
    tenant, owner, django_capture_on_commit_callbacks, caplog
) -> None:
    from transcripts.storage import segment_delete

    session = _lose_first_append(owner, django_capture_on_commit_callbacks)
    for name in segments_under(prefix=f"{tenant.pk}/{session.pk}/"):
        segment_delete(name=name)  # the transcript's object is gone
    reported = keys.history_audit_lacking(session.pk)
    redis_connection().delete(reported)
    try:
        with caplog.at_level("ERROR", logger="memories.history.services"):
            for _ in range(3):  # three rounds of the audit
                assert history_services.history_audit(sessions=50) == 0
        lines = [r.getMessage() for r in caplog.records if "lacks segment" in r.getMessage()]
        assert len(lines) == 1 and f"session {session.pk} " in lines[0]
        assert 0 < redis_connection().ttl(reported) <= history_services.LACKING_REPORT_SECONDS
    finally:
        redis_connection().delete(reported)
