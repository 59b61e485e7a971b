"""Recall records survive transcript storage refusing writes, and land once it accepts again."""

from __future__ import annotations

import logging
import time

import pytest
from django.urls import reverse

from memories.ltm.models import LtmCard
from memories.recall.cache import recall_log
from memories.recall.effects import recall_effects_apply
from memories.recall.models import RecallEffectOutbox
from profiles.models import EndUser
from tests.memories.recall.test_recall_api import recall, seeded, start_session
from transcripts.models import Segment

pytestmark = pytest.mark.django_db
__all__ = ["seeded"]  # the fixture, used by name
EVENTS = reverse("transcripts:events", kwargs={"session_id": "s_1"})


@pytest.fixture
def full_disk(settings):
    """Switch transcript storage to a full disk (same folder); `restore()` switches back."""
    real = settings.STORAGES

    def refuse() -> None:
        transcripts = {**real["transcripts"], "BACKEND": "tests.storages.FullDiskStorage"}
        settings.STORAGES = {**real, "transcripts": transcripts}

    def restore() -> None:
        settings.STORAGES = real

    refuse.restore = restore  # type: ignore[attr-defined]
    return refuse


def recall_events(owner) -> list[dict]:
    events = owner.get(EVENTS, {"limit": 500}).json()["events"]
    return [e for e in events if e["metadata"].get("kind") == "recall"]


def drain() -> int:
    applied = 0
    while True:
        result = recall_effects_apply()
        applied += result.applied
        if not result.more:
            return applied


def test_recalls_acknowledged_while_storage_is_full_land_once_it_accepts(
    tenant, owner, seeded, full_disk
) -> None:
    # Given a session, and transcript storage that then refuses every write
    start_session(owner)
    log_before = len(recall_log().peek(limit=10000))
    segments_before = Segment.objects.count()
    full_disk()

    # When three recalls are answered (their effects are tried at once, and refused)
    bodies = [recall(owner, task_id="bug456") for _ in range(3)]
    recall_ids = [body["recall_id"] for body in bodies]
    assert all(recall_ids)

    # Then nothing was trimmed from the log and nothing was recorded
    queued = [r["recall_id"] for r in recall_log().peek(limit=10000)[log_before:]]
    assert queued == recall_ids
    with pytest.raises(Exception, match="refused a write"):
        recall_effects_apply()  # the beat job's run, while the disk is still full
    assert [r["recall_id"] for r in recall_log().peek(limit=10000)[log_before:]] == recall_ids
    assert Segment.objects.count() == segments_before
    pool_case = LtmCard.objects.get(memory_id=seeded["cards"]["pool-case"])
    assert pool_case.access_count == 0  # counted only with the recall's event

    # When storage accepts writes again and the queue is drained
    full_disk.restore()
    assert drain() >= 3

    # Then every recall is in the transcript exactly once, and counted once
    assert [e["id"] for e in recall_events(owner)] == recall_ids
    assert recall_log().peek(limit=10000)[log_before:] == []
    injected = sum(
        seeded["cards"]["pool-case"] in [i["memory_id"] for i in body["items"]] for body in bodies
    )
    pool_case.refresh_from_db()
    assert injected and pool_case.access_count == injected
    drain()  # a second run changes nothing
    assert [e["id"] for e in recall_events(owner)] == recall_ids


def _record(tenant, *, recall_id: str, session_id: str) -> dict:
    return {
        "recall_id": recall_id,
        "tenant_id": tenant.pk,
        "user_id": "u_42",
        "end_user_id": EndUser.objects.get(tenant=tenant, external_id="u_42").pk,
        "session_id": session_id,
        "task_id": "",
        "at": time.time(),
        "stm": [],
        "ltm": [],
        "degraded": [],
    }


def test_records_handed_to_the_task_are_kept_in_postgres_while_storage_refuses(
    tenant, owner, seeded, full_disk
) -> None:
    start_session(owner)
    records = [_record(tenant, recall_id=f"rcl_kept{i}", session_id="s_1") for i in range(2)]
    full_disk()

    result = recall_effects_apply(records=records)  # Redis was down when these were made

    assert result.applied == 0
    kept = RecallEffectOutbox.objects.filter(tenant=tenant).values_list("record", flat=True)
    assert [r["recall_id"] for r in kept] == ["rcl_kept0", "rcl_kept1"]
    full_disk.restore()
    drain()
    assert [e["id"] for e in recall_events(owner)] == ["rcl_kept0", "rcl_kept1"]
    assert not RecallEffectOutbox.objects.filter(tenant=tenant).exists()


def test_only_a_record_that_can_never_land_is_dropped_and_logged(
    tenant, owner, seeded, caplog
) -> None:
    start_session(owner)
    log_before = len(recall_log().peek(limit=10000))
    for record in (
        _record(tenant, recall_id="rcl_lands", session_id="s_1"),
        _record(tenant, recall_id="rcl_nowhere", session_id="s_unknown"),
    ):
        recall_log().push(record=record)

    with caplog.at_level(logging.WARNING, logger="memories.recall.effects"):
        drain()

    assert [e["id"] for e in recall_events(owner)] == ["rcl_lands"]
    assert recall_log().peek(limit=10000)[log_before:] == []
    assert "rcl_nowhere" in caplog.text and "s_unknown" in caplog.text
