"""/metrics: Prometheus text for loopback clients or the token's bearer, 404 for anyone else."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client import values
from prometheus_client.parser import text_string_to_metric_families

from memories.ltm.models import LtmOutbox
from memories.ltm.services import CardInput, cards_import
from memoryproject.metrics import API_ERRORS, count_error
from tests.factories import EndUserFactory
from transcripts.models import Session

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def _scrape(client, **extra) -> dict:
    answer = client.get("/metrics", **extra)
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/plain")
    return _samples(answer.content.decode())


def test_requests_recall_layers_refusals_and_errors_are_counted(
    owner, tenant, client, stranger
) -> None:
    before = _scrape(client)
    appended = owner.post(
        "/v1/sessions/s-metrics/events",
        {"user_id": "u-m", "events": [{"role": "user", "content": "I deploy with Terraform."}]},
        format="json",
    )
    assert appended.status_code == 201
    recall = owner.post(
        "/v1/recall",
        {"user_id": "u-m", "session_id": "s-metrics", "query": "deploy", "layers": ["redis"]},
        format="json",
    )
    assert recall.status_code == 200
    refused = owner.post(
        "/v1/memories/proposals",
        {
            "proposals": [
                {
                    "user_id": "u-m",
                    "session_id": "s-metrics",
                    "memory_type": "fact",
                    "summary": "ok thanks",
                }
            ]
        },
        format="json",
    )
    assert refused.json()["results"][0]["outcome"] == "refused"
    reason = refused.json()["results"][0]["refusal"]
    assert stranger.get("/v1/ltm/cards/ltm_nope").status_code == 404

    after = _scrape(client)
    route = "/v1/sessions/<extid:session_id>/events"
    count = "memory_http_request_duration_seconds_count"
    assert _value(after, count, route=route, method="POST", status="201") == 1 + _value(
        before, count, route=route, method="POST", status="201"
    )
    for layer, store in (("redis", "redis"), ("total", "total")):
        name = "memory_recall_layer_duration_seconds_count"
        assert _value(after, name, layer=layer, store=store) > _value(
            before, name, layer=layer, store=store
        )
    stores = "memory_store_duration_seconds_count"
    for store in ("redis", "postgresql"):
        assert _value(after, stores, route="/v1/recall", store=store) == 1 + _value(
            before, stores, route="/v1/recall", store=store
        )
    refusals = "memory_write_refused_total"
    assert _value(after, refusals, source="proposal", reason=reason) == 1 + _value(
        before, refusals, source="proposal", reason=reason
    )
    errors = "memory_api_errors_total"
    assert _value(after, errors, status="404", code="not_found") >= 1 + _value(
        before, errors, status="404", code="not_found"
    )


def test_backlogs_are_read_when_scraped(tenant, client) -> None:
    user = EndUserFactory(tenant=tenant)
    Session.objects.create(tenant=tenant, end_user=user, external_id="s-lag", event_count=3)
    # The test's transaction never commits, so the drain queued on commit never runs.
    cards_import(tenant=tenant, cards=[CardInput(memory_type="knowledge", summary="eu-1.")])
    assert LtmOutbox.objects.count() >= 1
    samples = _scrape(client)
    assert _value(samples, "memory_outbox_rows", outbox="ltm") >= 1
    assert _value(samples, "memory_outbox_lag_seconds", outbox="ltm") >= 0
    assert _value(samples, "memory_extraction_lag_sessions") >= 1
    assert _value(samples, "memory_extraction_lag_events") >= 3
    assert _value(samples, "memory_metrics_source_up", source="postgres") == 1
    assert _value(samples, "memory_metrics_source_up", source="broker") == 1


def test_only_loopback_or_the_token_may_read(client, settings) -> None:
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 404
    assert client.get("/metrics", REMOTE_ADDR="::1").status_code == 200
    settings.METRICS_TOKEN = "scrape-secret"
    assert client.get("/metrics").status_code == 404  # loopback is not enough with a token
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope", REMOTE_ADDR="10.1.2.3")
    assert wrong.status_code == 404
    right = client.get(
        "/metrics", HTTP_AUTHORIZATION="Bearer scrape-secret", REMOTE_ADDR="10.1.2.3"
    )
    assert right.status_code == 200
    assert b"memory_http_request_duration_seconds" in right.content


# A label value no other test counts, so the processes simulated below start from nothing.
MULTIPROCESS_CODE = "multiprocess_check"


def _errors_counted_by(pid: int, times: int, monkeypatch) -> None:
    """What web process `pid` counts in multiprocess mode: `times` errors, in its own file."""
    with monkeypatch.context() as patch:
        patch.setattr(values, "ValueClass", values.MultiProcessValue(lambda: pid))
        for _ in range(times):
            count_error(status=503, code=MULTIPROCESS_CODE)
        # The next process starts without it (prometheus-client warns of any removal while
        # the variable is set, meaning removal from the sum, which this is not).
        patch.delenv("PROMETHEUS_MULTIPROC_DIR")
        API_ERRORS.remove("503", MULTIPROCESS_CODE)


def test_multiprocess_mode_sums_the_processes_and_never_goes_down(
    client, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    errors = "memory_api_errors_total"
    labels = {"status": "503", "code": MULTIPROCESS_CODE}

    # given two web processes that counted 3 and 2 errors
    _errors_counted_by(101, 3, monkeypatch)
    _errors_counted_by(202, 2, monkeypatch)
    first = _scrape(client)
    assert _value(first, errors, **labels) == 5
    assert _value(first, "memory_metrics_source_up", source="postgres") == 1  # backlogs too

    # when gunicorn replaces the first (its child_exit hook) and the new one counts once more
    (tmp_path / "gauge_livesum_101.db").write_bytes(b"")
    hooks = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    hooks["child_exit"](None, SimpleNamespace(pid=101))
    assert not (tmp_path / "gauge_livesum_101.db").exists()  # its live gauges left the sum
    after_exit = _scrape(client)
    _errors_counted_by(303, 1, monkeypatch)
    later = _scrape(client)

    # then the dead process's counts stay in the sum, which only grows
    assert _value(after_exit, errors, **labels) == 5
    assert _value(later, errors, **labels) == 6
