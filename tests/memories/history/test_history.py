"""Episodic history: appended turns become searchable entries of their own, in both stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memories.history import entries as history_entries
from memories.history import rebuild as history_rebuild
from memories.history import services as history_services
from memories.history.documents import HistoryScope
from memories.history.models import HistoryCursor, HistoryOutbox
from memories.history.search import history_search_index
from memories.history.selectors import history_search
from memories.history.vectors import history_vector_index
from memories.policies.models import RecallPolicy
from memories.review.deletion import deletion_approve
from memories.review.models import DeletionRequest
from memories.tasks import history_outbox_drain_task
from memoryproject import redis_keys as keys
from memoryproject.errors import Invalid, StoreUnavailable
from memoryproject.redaction import redactor_for
from memoryproject.redis_client import redis_connection
from tests.factories import StaffUserFactory
from tests.memories.review.test_erasure import seed_user
from transcripts.models import Session
from transcripts.storage import segment_delete

MAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
CARD_SENTENCE = "我的银行卡号是 6222 0212 3456 7890 123，帮我记住"
JUNE = datetime(2023, 6, 20, 9, 0, tzinfo=UTC)


def append(client, session: str, user: str, events: list[dict], capture) -> dict:
    with capture(execute=True):
        response = client.post(
            reverse("transcripts:events", kwargs={"session_id": session}),
            {"user_id": user, "events": events},
            format="json",
        )
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.fixture(autouse=True)
def no_drain_scheduled():
    """Each test starts without a drain pending (the flag lives in the shared Redis)."""
    redis_connection().delete(keys.history_drain_scheduled())
    yield
    redis_connection().delete(keys.history_drain_scheduled())


@pytest.fixture
def reviewer(db):
    return StaffUserFactory()


@pytest.fixture
def conversation(tenant, owner, django_capture_on_commit_callbacks):
    """Two sessions of u_1 (May and June), one of u_2, all in the owner's tenant."""
    append(
        owner,
        "s-may",
        "u_1",
        [
            {
                "id": "m-1",
                "role": "user",
                "content": "I adopted a puppy named Biscuit last week.",
                "created_at": MAY.isoformat(),
            },
            {
                "id": "m-2",
                "role": "assistant",
                "content": "Congratulations! What breed is Biscuit?",
                "created_at": (MAY + timedelta(seconds=30)).isoformat(),
            },
            {
                "id": "m-3",
                "role": "user",
                "content": "A golden retriever.",
                "created_at": (MAY + timedelta(seconds=60)).isoformat(),
            },
        ],
        django_capture_on_commit_callbacks,
    )
    append(
        owner,
        "s-june",
        "u_1",
        [
            {
                "id": "j-1",
                "role": "user",
                "content": "Our staging database is Postgres 15 now.",
                "created_at": JUNE.isoformat(),
            },
        ],
        django_capture_on_commit_callbacks,
    )
    append(
        owner,
        "s-other",
        "u_2",
        [{"id": "o-1", "role": "user", "content": "I adopted a kitten named Biscuit."}],
        django_capture_on_commit_callbacks,
    )


@pytest.mark.parametrize("mode", ["lexical", "vector", "hybrid"])
def test_appended_turns_are_searchable_with_their_time_and_role(tenant, conversation, mode) -> None:
    # Words of m-1 alone: the reply after it holds them only in its context (weighed lower), so
    # the order cannot depend on what other tests left in the shared index's BM25 statistics.
    result = history_search(tenant=tenant, user_id="u_1", query="adopted a puppy", mode=mode)

    assert result.degraded == []
    top = result.hits[0]
    assert top.event_id == "m-1" and top.session_id == "s-may" and top.role == "user"
    assert top.occurred_at == MAY
    assert top.text == "user: I adopted a puppy named Biscuit last week."
    assert top.context == ""
    assert top.score == 1.0 and all(0 < h.score <= 1 for h in result.hits)
    assert {h.event_id for h in result.hits} <= {"m-1", "m-2", "m-3", "j-1"}
    if mode == "hybrid":
        assert top.lexical_rank == 1 and top.vector_rank is not None
        assert {"history.lexical", "history.vector", "history.embed"} <= set(result.latency_ms)
    # the neighbouring turns travel with an entry as its context
    [breed] = [
        h
        for h in history_search(tenant=tenant, user_id="u_1", query="golden retriever").hits
        if h.event_id == "m-3"
    ]
    assert breed.context.splitlines() == [
        "user: I adopted a puppy named Biscuit last week.",
        "assistant: Congratulations! What breed is Biscuit?",
    ]


def test_other_users_and_other_tenants_never_come_back(
    tenant, other_tenant, stranger, conversation, django_capture_on_commit_callbacks
) -> None:
    # the stranger tenant has a user with the same external id saying the same thing
    append(
        stranger,
        "s-may",
        "u_1",
        [{"id": "x-1", "role": "user", "content": "I adopted a puppy named Biscuit last week."}],
        django_capture_on_commit_callbacks,
    )
    for mode in ("lexical", "vector", "hybrid"):
        mine = history_search(tenant=tenant, user_id="u_1", query="kitten Biscuit", mode=mode)
        assert mine.hits and {h.event_id for h in mine.hits} <= {"m-1", "m-2", "m-3", "j-1"}
        theirs = history_search(tenant=other_tenant, user_id="u_1", query="puppy", mode=mode)
        assert [h.event_id for h in theirs.hits] == ["x-1"]
        nobody = history_search(tenant=other_tenant, user_id="u_2", query="Biscuit", mode=mode)
        assert nobody.hits == []


def test_time_range_and_session_exclusion(tenant, conversation) -> None:
    june = history_search(
        tenant=tenant, user_id="u_1", query="puppy database", since=JUNE - timedelta(days=1)
    )
    assert [h.event_id for h in june.hits] == ["j-1"]
    may = history_search(
        tenant=tenant,
        user_id="u_1",
        query="puppy database",
        since=MAY,
        until=MAY + timedelta(minutes=1),
    )
    assert {h.event_id for h in may.hits} == {"m-1", "m-2", "m-3"}
    elsewhere = history_search(
        tenant=tenant, user_id="u_1", query="puppy database", exclude_session_id="s-may"
    )
    assert [h.event_id for h in elsewhere.hits] == ["j-1"]


def test_bad_mode_or_k_is_invalid(tenant) -> None:
    with pytest.raises(Invalid):
        history_search(tenant=tenant, user_id="u_1", query="x", mode="fuzzy")
    with pytest.raises(Invalid):
        history_search(tenant=tenant, user_id="u_1", query="x", k=0)


def test_card_numbers_and_secrets_never_reach_the_entries(
    tenant, owner, django_capture_on_commit_callbacks
) -> None:
    append(
        owner,
        "s-red",
        "u_1",
        [
            {
                "id": "r-1",
                "role": "user",
                "content": "我的银行卡号是 6222 0212 3456 7890 123，帮我记住",
            },
            {"id": "r-2", "role": "user", "content": "The staging password is CorrectHorse99 btw"},
            {"id": "r-3", "role": "assistant", "content": "I will not keep those."},
        ],
        django_capture_on_commit_callbacks,
    )
    stored = list(history_search_index().entries_of(tenant_id=str(tenant.pk), user_id="u_1"))
    hits = history_search(tenant=tenant, user_id="u_1", query="银行卡 password", k=10).hits
    vectors = history_vector_index().nearest(
        vector=[0.05] * history_vector_index().dim,
        scope=HistoryScope(tenant_id=str(tenant.pk), user_id="u_1"),
        limit=10,
    )
    assert len(stored) == 3 and len(vectors) == 3 and hits
    everything = str(stored) + str([(h.text, h.context) for h in hits])
    everything += str([m.fields for m in vectors])
    assert "[REDACTED:bank_card]" in everything and "[REDACTED:secret]" in everything
    for sensitive in ("6222 0212 3456 7890 123", "6222", "CorrectHorse99"):
        assert sensitive not in everything


def test_tool_results_are_digested_and_system_events_left_out(
    tenant, owner, django_capture_on_commit_callbacks
) -> None:
    log = "ERROR connection refused to payments-db:5432\n" + "retrying ...\n" * 400
    append(
        owner,
        "s-tool",
        "u_1",
        [
            {"id": "t-1", "role": "user", "content": "Why does checkout fail?"},
            {
                "id": "t-2",
                "role": "tool",
                "tool_call_id": "call_1",
                "content": log,
                "metadata": {"tool": "kubectl_logs"},
            },
            {"id": "t-3", "role": "system", "content": "You are a helpful agent."},
        ],
        django_capture_on_commit_callbacks,
    )
    stored = {
        e["event_id"]: e
        for e in history_search_index().entries_of(tenant_id=str(tenant.pk), user_id="u_1")
    }
    assert set(stored) == {"t-1", "t-2"}
    digest = stored["t-2"]["text"]
    assert digest.startswith("tool kubectl_logs: ERROR connection refused to payments-db:5432")
    assert digest.endswith(f"({len(' '.join(log.split()))} chars)") and len(digest) < 400
    [hit] = history_search(tenant=tenant, user_id="u_1", query="payments-db refused", k=1).hits
    assert hit.role == "tool" and hit.event_id == "t-2"
    # the cursor covers the whole session, system event included
    assert HistoryCursor.objects.get(session__external_id="s-tool").indexed_seq == 3


class CountingEmbedder:
    """The real embedder, recording how many passages each call embedded."""

    def __init__(self, real) -> None:
        self.real, self.calls = real, []
        self.dim, self.model_name = real.dim, real.model_name

    def embed_passages(self, texts):
        self.calls.append(len(texts))
        return self.real.embed_passages(texts)

    def embed_query(self, text):
        return self.real.embed_query(text)


def test_the_outbox_is_drained_in_batches(
    tenant, owner, settings, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    # A drain is already scheduled: the appends meanwhile only add rows and share it.
    redis_connection().set(keys.history_drain_scheduled(), "1", ex=60)
    for n in range(5):
        append(
            owner,
            "s-batch",
            "u_1",
            [
                {"id": f"b-{n}-a", "role": "user", "content": f"Question number {n} about rockets"},
                {"id": f"b-{n}-b", "role": "assistant", "content": f"Answer number {n}"},
            ],
            django_capture_on_commit_callbacks,
        )
    assert HistoryOutbox.objects.count() == 5
    assert history_search(tenant=tenant, user_id="u_1", query="rockets").hits == []
    counting = CountingEmbedder(history_services.embedder())
    monkeypatch.setattr(history_services, "embedder", lambda: counting)
    settings.HISTORY_DRAIN_EVENTS = 6
    settings.HISTORY_EMBED_BATCH = 4

    history_outbox_drain_task.delay()  # eager: drains, then requeues itself while rows remain

    assert HistoryOutbox.objects.count() == 0
    assert not redis_connection().exists(keys.history_drain_scheduled())
    # 3 + 2 rows (6 and 4 events), each run embedding in batches of at most 4
    assert counting.calls == [4, 2, 4]
    found = history_search(tenant=tenant, user_id="u_1", query="rockets", k=20).hits
    assert len({h.event_id for h in found}) == 10
    assert HistoryCursor.objects.get(session__external_id="s-batch").indexed_seq == 10


def test_a_store_outage_keeps_the_rows_for_a_later_drain(
    tenant, owner, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    redis_connection().set(keys.history_drain_scheduled(), "1", ex=60)
    append(
        owner,
        "s-down",
        "u_1",
        [{"id": "d-1", "role": "user", "content": "Remember the lighthouse trip"}],
        django_capture_on_commit_callbacks,
    )

    def down(*, documents):
        raise StoreUnavailable("Milvus (history): down")

    monkeypatch.setattr(history_vector_index(), "upsert", down)
    with pytest.raises(StoreUnavailable):
        history_services.history_outbox_drain()
    [row] = HistoryOutbox.objects.all()
    assert row.attempts == 1 and "down" in row.last_error
    assert history_services.history_lag()["failing_rows"] == 1
    monkeypatch.undo()

    assert history_services.history_outbox_drain().indexed == 1
    assert not HistoryOutbox.objects.exists()
    assert history_search(tenant=tenant, user_id="u_1", query="lighthouse").hits


def test_a_session_whose_segment_is_gone_is_parked_and_others_still_index(
    tenant, owner, django_capture_on_commit_callbacks
) -> None:
    redis_connection().set(keys.history_drain_scheduled(), "1", ex=60)
    lost = [{"id": "g-1", "role": "user", "content": "The harbour trip was cancelled"}]
    kept = [{"id": "k-1", "role": "user", "content": "Remember the lighthouse trip"}]
    append(owner, "s-gone", "u_1", lost, django_capture_on_commit_callbacks)
    append(owner, "s-kept", "u_1", kept, django_capture_on_commit_callbacks)
    # the storage lost the first session's segment object
    gone = Session.objects.get(tenant=tenant, external_id="s-gone").segments.get()
    segment_delete(name=gone.path)

    drained = history_services.history_outbox_drain()

    assert drained.indexed == 1
    assert history_search(tenant=tenant, user_id="u_1", query="lighthouse").hits
    [row] = HistoryOutbox.objects.all()
    assert row.session.external_id == "s-gone" and row.attempts == 1
    assert row.last_error.startswith(history_services.MISSING_SEGMENT)
    # tried again a few times (the object may be on its way), then parked
    for _ in range(history_services.PARK_ATTEMPTS - 1):
        assert history_services.history_outbox_drain().indexed == 0
    lag = history_services.history_lag()
    assert lag["parked_rows"] == 1 and lag["pending_rows"] == 0
    # a later drain does not read it again, nor fail on it
    assert history_services.history_outbox_drain().rows == 0


def test_a_tenant_can_switch_history_off(tenant, owner, django_capture_on_commit_callbacks) -> None:
    append(
        owner,
        "s-on",
        "u_1",
        [{"id": "on-1", "role": "user", "content": "We moved the office to Lisbon"}],
        django_capture_on_commit_callbacks,
    )
    assert history_search(tenant=tenant, user_id="u_1", query="Lisbon office").hits
    RecallPolicy.objects.update_or_create(tenant=tenant, defaults={"history_enabled": False})

    append(
        owner,
        "s-off",
        "u_1",
        [{"id": "off-1", "role": "user", "content": "The Lisbon office has a rooftop"}],
        django_capture_on_commit_callbacks,
    )

    assert not HistoryOutbox.objects.exists()  # nothing new is queued
    assert history_search(tenant=tenant, user_id="u_1", query="Lisbon office").hits == []
    held = history_search_index().ids_where(tenant_id=str(tenant.pk))
    assert len(held) == 1  # the entry from before stays until a rebuild...
    out = StringIO()
    call_command("reindex_history", tenant=tenant.slug, stdout=out)
    assert "switched off" in out.getvalue()
    assert history_search_index().ids_where(tenant_id=str(tenant.pk)) == []  # ...removes it
    assert history_vector_index().ids_where(tenant_id=str(tenant.pk)) == []

    RecallPolicy.objects.filter(tenant=tenant).update(history_enabled=True)
    call_command("reindex_history", tenant=tenant.slug, stdout=StringIO())
    found = history_search(tenant=tenant, user_id="u_1", query="Lisbon office").hits
    assert {h.event_id for h in found} == {"on-1", "off-1"}


def test_a_caller_holding_the_switch_saves_the_policy_read(
    tenant, owner, django_capture_on_commit_callbacks
) -> None:
    append(
        owner,
        "s-on",
        "u_1",
        [{"id": "on-1", "role": "user", "content": "We moved the office to Lisbon"}],
        django_capture_on_commit_callbacks,
    )
    RecallPolicy.objects.update_or_create(tenant=tenant, defaults={"history_enabled": False})
    ask = {"tenant": tenant, "user_id": "u_1", "query": "Lisbon office", "mode": "lexical"}

    with CaptureQueriesContext(connection) as told:
        passed_on = history_search(**ask, enabled=True)
        passed_off = history_search(**ask, enabled=False)
    with CaptureQueriesContext(connection) as read:
        looked_up = history_search(**ask)

    # the caller's flag decides, without a query; left out, the policy's switch is read
    assert [h.event_id for h in passed_on.hits] == ["on-1"] and passed_off.hits == []
    assert told.captured_queries == []
    assert looked_up.hits == []
    assert any("history_enabled" in q["sql"] for q in read.captured_queries)


def test_recall_passes_the_switch_of_its_cached_policy(owner, conversation, monkeypatch) -> None:
    from memories.recall import branches

    flags: list[bool | None] = []
    real = branches.history_search

    def spy(**kwargs):
        flags.append(kwargs.get("enabled"))
        return real(**kwargs)

    monkeypatch.setattr(branches, "history_search", spy)
    body = {"user_id": "u_1", "session_id": "s-x", "query": "What breed is the puppy Biscuit?"}
    response = owner.post(reverse("memories:recall"), body, format="json")

    assert response.status_code == 200, response.json()
    assert flags and set(flags) == {True}


def test_entries_vanish_with_erasure_and_come_back_with_reindex_history(
    tenant, owner, reviewer, django_capture_on_commit_callbacks
) -> None:
    seed_user(owner, tenant, django_capture_on_commit_callbacks)
    seed_user(owner, tenant, django_capture_on_commit_callbacks, "u_7", "s_7")
    tenant_id = str(tenant.pk)
    erased_ids = history_search_index().ids_where(tenant_id=tenant_id, user_id="u_42")
    kept_ids = history_search_index().ids_where(tenant_id=tenant_id, user_id="u_7")
    assert len(erased_ids) == 3 and len(kept_ids) == 3
    assert sorted(history_vector_index().ids_where(tenant_id=tenant_id, user_id="u_42")) == sorted(
        erased_ids
    )
    request = deletion_request(owner, "u_42")

    with django_capture_on_commit_callbacks(execute=True):
        deletion_approve(request=request, reviewer=reviewer)

    request.refresh_from_db()
    assert request.status == "done", request.last_error
    assert request.receipt["stores"]["history"]["documents"] == 3
    assert request.receipt["stores"]["history"]["vectors"] == 3
    by_id = request.receipt["checks"]["by_id"]
    assert by_id["history_elasticsearch"] == 0 and by_id["history_milvus"] == 0
    for index in (history_search_index(), history_vector_index()):
        assert index.ids_where(tenant_id=tenant_id, ids=erased_ids) == []
        assert index.ids_where(tenant_id=tenant_id, user_id="u_42") == []
        assert sorted(index.ids_where(tenant_id=tenant_id, user_id="u_7")) == sorted(kept_ids)
    assert history_search(tenant=tenant, user_id="u_42", query="locker code").hits == []

    # The unerased user's entries are dropped from both stores, then rebuilt from the segments.
    history_rebuild.history_erase_user(tenant_id=tenant.pk, user_id="u_7")
    assert history_search(tenant=tenant, user_id="u_7", query="locker code").hits == []
    out = StringIO()
    call_command("reindex_history", tenant=tenant.slug, stdout=out)
    assert "events" in out.getvalue() and "reindexed 3 history entries" in out.getvalue()
    for index in (history_search_index(), history_vector_index()):
        assert sorted(index.ids_where(tenant_id=tenant_id)) == sorted(kept_ids)
    assert history_search(tenant=tenant, user_id="u_7", query="locker code").hits
    # a second run changes nothing
    call_command("reindex_history", tenant=tenant.slug, stdout=StringIO())
    assert sorted(history_search_index().ids_where(tenant_id=tenant_id)) == sorted(kept_ids)
    assert history_rebuild.history_drift(tenant=tenant).clean


def deletion_request(owner, user: str) -> DeletionRequest:
    asked = owner.post(reverse("memories:forget", kwargs={"user_id": user}))
    assert asked.status_code == 202, asked.json()
    return DeletionRequest.objects.get(request_id=asked.json()["request_id"])


def test_drift_is_found_and_repaired(tenant, conversation) -> None:
    assert history_rebuild.history_drift(tenant=tenant).clean
    session_pk = HistoryCursor.objects.get(session__external_id="s-may").pk
    lost = f"hist_{session_pk}_2"
    history_vector_index().remove_ids(ids=[lost])
    history_vector_index().flush()
    ghost = history_entries.session_documents(
        session=Session.objects.get(external_id="s-june", tenant=tenant),
        events=[{"seq": 99, "id": "ghost", "role": "user", "content": "never said"}],
        first_seq=1,
        redactor=redactor_for(tenant),
    )
    history_services.index_documents(ghost)

    report = history_rebuild.history_drift(tenant=tenant)
    assert report.missing == {"elasticsearch": [], "milvus": [lost]}
    assert report.extra == {"elasticsearch": [ghost[0].entry_id], "milvus": [ghost[0].entry_id]}
    with pytest.raises(CommandError):
        call_command("check_history_drift", tenant=tenant.slug, stdout=StringIO())

    call_command("check_history_drift", tenant=tenant.slug, repair=True, stdout=StringIO())

    assert history_rebuild.history_drift(tenant=tenant).clean
    assert history_vector_index().ids_where(tenant_id=str(tenant.pk), ids=[lost]) == [lost]


def test_export_lists_the_history_entries(tenant, owner, stranger, conversation) -> None:
    response = owner.get(reverse("memories:export", kwargs={"user_id": "u_1"}))

    assert response.status_code == 200
    history = response.json()["history"]
    assert history["count"] == 4
    assert [e["event_id"] for e in history["entries"]] == ["m-1", "m-2", "m-3", "j-1"]
    assert history["entries"][0]["text"] == "user: I adopted a puppy named Biscuit last week."
    assert stranger.get(reverse("memories:export", kwargs={"user_id": "u_1"})).status_code == 404


@pytest.mark.django_db(transaction=True)  # readiness reads PostgreSQL from its own threads
def test_lag_is_visible_in_readyz_and_the_admin(
    tenant, owner, client, django_capture_on_commit_callbacks
) -> None:
    redis_connection().set(keys.history_drain_scheduled(), "1", ex=60)
    append(
        owner,
        "s-lag",
        "u_1",
        [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}],
        django_capture_on_commit_callbacks,
    )
    HistoryOutbox.objects.update(created_at=timezone.now() - timedelta(minutes=10))

    lag = client.get("/readyz").json()["checks"]["history_index"]

    assert lag["ok"] is True and lag["pending_events"] == 2 and lag["pending_rows"] == 1
    assert lag["lag_seconds"] >= 600 and lag["within_bound"] is False
    staff = StaffUserFactory(is_superuser=True)
    client.force_login(staff)
    page = client.get(reverse("admin:memories_historyoutbox_changelist"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "History index lag: 2 events in 1 rows" in text and "s-lag" in text
    # the tenant switch is a field of the recall policy's admin form
    form = client.get(reverse("admin:memories_recallpolicy_add")).content.decode()
    assert 'name="history_enabled"' in form


def test_the_beat_job_catches_up_on_a_missed_append(
    tenant, owner, django_capture_on_commit_callbacks
) -> None:
    redis_connection().set(keys.history_drain_scheduled(), "1", ex=60)
    append(
        owner,
        "s-missed",
        "u_1",
        [{"id": "c-1", "role": "user", "content": "The quarterly audit is in Porto"}],
        django_capture_on_commit_callbacks,
    )
    HistoryOutbox.objects.all().delete()  # as if the process died before recording the row
    Session.objects.filter(external_id="s-missed").update(
        last_event_at=timezone.now() - timedelta(minutes=5)
    )

    history_outbox_drain_task.delay(catch_up=True)

    [hit] = history_search(tenant=tenant, user_id="u_1", query="audit Porto").hits
    assert hit.event_id == "c-1"
    assert HistoryCursor.objects.get(session__external_id="s-missed").indexed_seq == 1
    assert history_services.history_catch_up() == 0  # nothing left behind
