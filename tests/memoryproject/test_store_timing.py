"""Each store's time per request, in Server-Timing, measured on the real stores."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from memoryproject.store_timing import StoreClock, measuring, timed
from tests.memories.recall.test_recall_api import PAST_CASE, UNRELATED, import_cards

RECALL = reverse("memories:recall")


def server_timing(response) -> dict[str, float]:
    parts = {}
    for part in (response.get("Server-Timing") or "").split(","):
        if ";dur=" in part:
            name, value = part.strip().split(";dur=")
            parts[name] = float(value)
    return parts


def test_exclusive_time_leaves_out_what_another_store_overlapped() -> None:
    clock = StoreClock()
    clock.add("elasticsearch", 0.000, 0.100)
    clock.add("milvus", 0.050, 0.080)
    clock.add("embedding", 0.090, 0.150)
    clock.add("elasticsearch", 0.200, 0.210)

    assert clock.totals_ms() == {"elasticsearch": 110.0, "milvus": 30.0, "embedding": 60.0}
    # 0-50 alone, 50-80 with milvus, 80-90 alone, 90-100 with embedding, 200-210 alone
    assert clock.exclusive_ms("elasticsearch") == pytest.approx(70.0)


def test_outside_a_clock_timing_costs_nothing_and_records_nothing() -> None:
    with timed("redis"):
        pass
    with measuring() as clock, timed("redis"):
        pass
    assert list(clock.totals_ms()) == ["redis"]


@pytest.mark.django_db
def test_a_long_term_recall_reports_each_store_it_waited_on(tenant, owner) -> None:
    import_cards(tenant, [PAST_CASE, UNRELATED])
    response = owner.post(
        RECALL,
        {
            "user_id": "u_42",
            "session_id": "s_timing",
            "query": "以前有没有 createOrder 线程池超时的类似案例",
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    timing = server_timing(response)

    for store in ("postgresql", "redis", "elasticsearch", "milvus", "embedding"):
        assert timing.get(f"store.{store}", 0) > 0, (store, timing)
    assert 0 <= timing["store.elasticsearch_exclusive"] <= timing["store.elasticsearch"]
    assert timing["store.milvus"] < timing["total"] + 50  # branches may overlap, not wildly


@pytest.mark.django_db
def test_a_request_that_reaches_no_outside_store_reports_none(client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert "store." not in (response.get("Server-Timing") or "")


def test_a_call_still_in_flight_counts_up_to_the_moment_read() -> None:
    clock = StoreClock()
    clock.add("elasticsearch", time.perf_counter() - 0.2)  # not finished
    assert clock.totals_ms()["elasticsearch"] >= 200
    assert clock.exclusive_ms("elasticsearch") >= 200
