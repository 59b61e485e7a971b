from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from memories.policies.models import VocabularyEntry
from memories.stm.selectors import stm_items_for
from memories.write.extraction import session_extract, sessions_lagging
from memories.write.models import ExtractionCursor
from profiles.services.tenants import tenant_delete
from transcripts.models import Session

CONVERSATION = [
    {"id": "m-1", "role": "user", "content": "你好！"},
    {"id": "m-2", "role": "user", "content": "createOrder 在 prod-k8s 超时了。数据库已排除。"},
    {
        "id": "m-3",
        "role": "user",
        "content": "Don't restart payment-service during business hours.",
    },
    {
        "id": "m-4",
        "role": "tool",
        "tool_call_id": "call-7",
        "content": "INFO start\n" * 200
        + "ERROR TimeoutException calling payment-service HTTP 504\n",
    },
    {"id": "m-5", "role": "assistant", "content": "maybe the thread pool is saturated"},
    {"id": "m-6", "role": "user", "content": "We'll go with raising the pool size to 64."},
    {"id": "m-7", "role": "user", "content": "我的卡号是 4111 1111 1111 1111，记住这个"},
]


def append(client: APIClient, events: list[dict], session_id: str = "s-1") -> None:
    response = client.post(
        reverse("transcripts:events", kwargs={"session_id": session_id}),
        {"user_id": "u_42", "task_id": "bug_456", "events": events},
        format="json",
    )
    assert response.status_code in (200, 201), response.json()


def items(tenant) -> list:
    return stm_items_for(tenant=tenant, user_id="u_42", limit=200).items


@pytest.mark.django_db
def test_an_append_triggers_extraction_of_what_matters(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        append(owner, CONVERSATION)

    found = {(i.memory_type, i.subtype): i for i in items(tenant)}
    assert set(found) >= {
        ("fact", "exclusion"),
        ("constraint", "user_constraint"),
        ("observation", "tool_result"),
        ("decision", "decision"),
    }
    observation = found[("observation", "tool_result")]
    assert len(observation.summary) < 300 and "INFO start" not in str(observation.detail)
    assert observation.source["tool_call_ids"] == ["call-7"]
    assert found[("fact", "exclusion")].message_ids == ["m-2"]
    everything = " ".join(i.summary + str(i.detail) for i in items(tenant))
    assert "你好" not in everything  # chit-chat
    assert "thread pool is saturated" not in everything  # an unverified guess
    assert "4111" not in everything  # a card number
    cursor = ExtractionCursor.objects.get(session__external_id="s-1")
    assert cursor.extracted_seq == len(CONVERSATION)


@pytest.mark.django_db
def test_replaying_the_same_events_creates_nothing_new(tenant, owner: APIClient) -> None:
    append(owner, CONVERSATION)
    session = Session.objects.get(external_id="s-1")
    session_extract(session_pk=session.pk)
    first = {(i.id, i.version) for i in items(tenant)}

    assert session_extract(session_pk=session.pk) == "up_to_date"
    # even with the watermark lost, the same evidence leaves every item as it was
    ExtractionCursor.objects.filter(session=session).update(extracted_seq=0)
    session_extract(session_pk=session.pk)

    assert {(i.id, i.version) for i in items(tenant)} == first


@pytest.mark.django_db
def test_new_events_are_extracted_from_the_watermark_on(tenant, owner: APIClient) -> None:
    append(owner, CONVERSATION[:2])
    session = Session.objects.get(external_id="s-1")
    session_extract(session_pk=session.pk)
    append(owner, [{"id": "m-9", "role": "user", "content": "必须先在 staging 验证。"}])

    status = session_extract(session_pk=session.pk)

    assert status == "extracted 3-3"
    constraints = [i for i in items(tenant) if i.memory_type == "constraint"]
    assert [i.message_ids for i in constraints] == [["m-9"]]


@pytest.mark.django_db
def test_a_tenant_vocabulary_extends_the_extractor(tenant, owner: APIClient) -> None:
    VocabularyEntry.objects.create(tenant=tenant, kind="constraint", value="严禁")
    VocabularyEntry.objects.create(tenant=tenant, kind="entity", value="订单中心")
    append(owner, [{"id": "m-1", "role": "user", "content": "严禁改动订单中心的表"}])

    session_extract(session_pk=Session.objects.get(external_id="s-1").pk)

    (item,) = items(tenant)
    assert item.memory_type == "constraint" and "订单中心" in item.entities


@pytest.mark.django_db
def test_catch_up_finds_sessions_whose_watermark_lags(tenant, owner: APIClient) -> None:
    append(owner, CONVERSATION[:2], session_id="lagging")
    append(owner, CONVERSATION[:2], session_id="done")
    session_extract(session_pk=Session.objects.get(external_id="done").pk)
    Session.objects.update(last_event_at=timezone.now() - timedelta(minutes=5))

    lagging = sessions_lagging()

    assert lagging == [Session.objects.get(external_id="lagging").pk]


@pytest.mark.django_db(transaction=True)
def test_a_session_erased_during_extraction_ends_as_gone(tenant, owner: APIClient, monkeypatch):
    import memories.write.extraction as extraction

    append(owner, CONVERSATION)
    session = Session.objects.get(external_id="s-1")
    ExtractionCursor.objects.filter(session=session).delete()  # as if not yet extracted
    submit = extraction.proposals_submit

    def erase_first(**kwargs):
        tenant_delete(tenant=tenant)  # what an erasure running at the same moment does
        return submit(**kwargs)

    monkeypatch.setattr(extraction, "proposals_submit", erase_first)

    assert session_extract(session_pk=session.pk) == "gone"


@pytest.mark.django_db
def test_system_events_move_a_caught_up_cursor_without_a_task(
    owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    import redis
    from celery import current_app
    from django.conf import settings

    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queue = settings.CELERY_TASK_DEFAULT_QUEUE

    def extraction_tasks() -> int:  # other layers (history indexing) queue tasks of their own
        queued = [json.loads(raw)["headers"]["task"] for raw in broker.lrange(queue, 0, -1)]
        return queued.count("memories.tasks.stm_extract_task")

    current_app.conf.task_always_eager = False
    try:
        with django_capture_on_commit_callbacks(execute=True):
            append(owner, [{"role": "system", "content": "recall rcl_1: injected nothing"}])
        session = Session.objects.get(external_id="s-1")
        assert ExtractionCursor.objects.get(session=session).extracted_seq == 1
        assert extraction_tasks() == 0  # no extraction task was queued

        with django_capture_on_commit_callbacks(execute=True):
            append(owner, [{"role": "user", "content": "createOrder 还是超时"}])
        assert extraction_tasks() == 1  # a user event is extracted as always
        with django_capture_on_commit_callbacks(execute=True):
            append(owner, [{"role": "system", "content": "recall rcl_2: injected nothing"}])
        assert extraction_tasks() == 2  # the cursor lags behind the user event: a task again
    finally:
        current_app.conf.task_always_eager = True
        broker.delete(queue)


@pytest.mark.django_db
def test_a_run_that_lost_its_lease_commits_nothing_once_another_took_over(
    tenant, owner: APIClient, monkeypatch
) -> None:
    from memories.tasks import stm_extract_task
    from memories.write import extraction
    from memoryproject import redis_keys as keys
    from memoryproject.redis_client import redis_connection

    append(owner, CONVERSATION)  # on_commit not run: nothing extracted yet
    session = Session.objects.get(external_id="s-1")
    taken_over: list[str] = []

    class SlowModel:
        """The LLM extractor of a page during which the first run's lease lapsed."""

        def extract(self, *, events, context):  # noqa: ANN001, ANN201
            if not taken_over:
                taken_over.append("")
                redis_connection().delete(keys.lock(f"extract:{session.pk}"))  # lapsed
                taken_over[0] = session_extract(session_pk=session.pk)  # the run taking over
            return []

    monkeypatch.setattr(extraction, "llm_extractor", lambda: SlowModel())
    status = stm_extract_task.apply(kwargs={"session_pk": session.pk}).get()

    assert taken_over == ["extracted 1-7"]
    assert status == "lease lost"  # the first run stopped before submitting or advancing
    cursor = ExtractionCursor.objects.get(pk=session.pk)
    assert (cursor.extracted_seq, cursor.fence) == (7, 2)
    assert items(tenant)  # what the run that took over wrote
    assert stm_extract_task.apply(kwargs={"session_pk": session.pk}).get() == "up_to_date"
    assert ExtractionCursor.objects.get(pk=session.pk).fence == 3
