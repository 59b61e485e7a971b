"""Reflection: a group of related episodes becomes one proposed card, reviewed like any other."""

from __future__ import annotations

import time

import pytest

from memories.review.models import PromotionRequest
from memories.review.reflection import reflection_run
from memories.stm.items import StmItem
from memories.stm.store import stm_store
from tests.factories import EndUserFactory

NOW = time.time()
RELATED = [
    (
        "createOrder timed out on prod with a healthy database; the thread pool was saturated",
        ["createOrder", "thread pool"],
    ),
    (
        "bug501: createOrder p99 over 3s, DB fine, worker thread pool exhausted",
        ["createOrder", "bug501"],
    ),
    (
        "payment createOrder timeouts traced to thread pool saturation, not the database",
        ["createOrder", "thread pool"],
    ),
    ("createOrder latency spike: connection pool fine, request thread pool full", ["thread pool"]),
    ("Raising the createOrder thread pool size fixed the timeouts", ["createOrder"]),
]
UNRELATED = [
    ("The user prefers answers in Chinese", ["Chinese"]),
    ("Invoices are exported as PDF every Monday", ["invoices"]),
    ("The staging cluster runs Kubernetes 1.29", ["staging"]),
    ("Alice is the on-call engineer this week", ["Alice"]),
    ("Release notes must mention breaking API changes", ["release notes"]),
]


def episodes(end_user, texts, *, offset: int = 0) -> list[StmItem]:
    return [
        StmItem(
            id=f"stm_{end_user.pk}_{offset + n:04d}",
            tenant_id=end_user.tenant_id,
            end_user_id=end_user.pk,
            user_id=end_user.external_id,
            session_id=f"s_{n}",
            task_id=f"bug{500 + n}",
            memory_type="fact",
            summary=summary,
            entities=entities,
            fingerprint=f"fp{offset + n}",
            fingerprints=[f"fp{offset + n}"],
            sessions=[f"s_{n}"],
            source={"kind": "user", "message_ids": [f"m_{offset + n}"], "tool_call_ids": []},
            importance=0.8,
            confidence=0.9,
            created_at=NOW - 3600,
            updated_at=NOW - 3600 + n,
            last_access_at=NOW,
            expires_at=NOW + 86400,
        )
        for n, (summary, entities) in enumerate(texts)
    ]


@pytest.fixture
def end_user(tenant):
    return EndUserFactory(tenant=tenant, external_id="u_42")


def test_five_related_episodes_give_one_proposed_card(tenant, end_user) -> None:
    items = episodes(end_user, RELATED)
    stm_store().upsert(items=items, now=NOW)

    result = reflection_run(tenant=tenant, now=NOW, owners=10_000)

    assert result.proposed == 1
    request = PromotionRequest.objects.get(tenant=tenant)
    assert (request.origin, request.path, request.status) == ("reflection", "ltm", "pending")
    assert sorted(request.evidence["stm_item_ids"]) == sorted(i.id for i in items)
    assert sorted(request.evidence["message_ids"]) == [f"m_{n}" for n in range(5)]
    assert "createOrder" in request.proposal["entities"]
    assert "thread pool" in request.proposal["summary"]
    assert request.proposal["content"].count("\n- ") == 4  # every episode cited
    # Nothing new since: the next run proposes nothing, and nothing reached long-term memory.
    assert reflection_run(tenant=tenant, now=NOW, owners=10_000).proposed == 0
    assert not request.result_ref


def test_unrelated_episodes_give_no_card(tenant, end_user) -> None:
    stm_store().upsert(items=episodes(end_user, UNRELATED), now=NOW)

    assert reflection_run(tenant=tenant, now=NOW, owners=10_000).proposed == 0
    assert not PromotionRequest.objects.filter(tenant=tenant).exists()


def test_too_little_new_importance_waits(tenant, end_user) -> None:
    few = episodes(end_user, RELATED[:3])  # 2.4 < 3.0

    stm_store().upsert(items=few, now=NOW)
    assert reflection_run(tenant=tenant, now=NOW, owners=10_000).proposed == 0

    stm_store().upsert(items=episodes(end_user, RELATED[3:], offset=3), now=NOW)
    assert reflection_run(tenant=tenant, now=NOW, owners=10_000).proposed == 1


def test_episodes_naming_no_entity_are_grouped_by_close_vectors(tenant, end_user) -> None:
    without_entities = [(summary, []) for summary, _ in RELATED]
    stm_store().upsert(items=episodes(end_user, without_entities), now=NOW)

    assert reflection_run(tenant=tenant, now=NOW, owners=10_000).proposed == 1
    request = PromotionRequest.objects.get(tenant=tenant)
    assert len(request.evidence["stm_item_ids"]) == 5
