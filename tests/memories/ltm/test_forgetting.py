"""Forgetting: unused cards fade, often recalled ones gain weight, old unimportant ones are
archived out of default retrieval but stay readable."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from memories.ltm.forgetting import ltm_forget
from memories.ltm.models import LtmCard
from memories.ltm.selectors import ltm_search
from memories.ltm.services import CardInput, cards_import, outbox_drain
from memories.policies.models import ForgettingPolicy

CARDS = [
    CardInput(
        external_id="old-trivia",
        memory_type="semantic_fact",
        summary="The createOrder dashboard once used a blue theme",
        entities=["createOrder"],
        importance=0.1,
    ),
    CardInput(
        external_id="old-lesson",
        memory_type="episodic_case",
        summary="createOrder timeouts with a healthy database were thread-pool saturation",
        entities=["createOrder"],
        importance=0.9,
    ),
    CardInput(
        external_id="favourite",
        memory_type="procedure",
        summary="Restart createOrder workers one at a time to keep the pool warm",
        entities=["createOrder"],
        importance=0.5,
    ),
]


def import_cards(tenant) -> dict[str, str]:
    results = cards_import(tenant=tenant, cards=CARDS)
    outbox_drain()
    return {card.external_id: card.memory_id for card, _ in results}


@pytest.mark.django_db
def test_old_unused_cards_fade_or_are_archived_and_used_ones_gain_weight(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    ids = import_cards(tenant)
    now = timezone.now()
    year_ago = now - timedelta(days=365)
    LtmCard.objects.filter(tenant=tenant).update(created_at=year_ago)
    LtmCard.objects.filter(memory_id=ids["favourite"]).update(
        access_count=12, last_access_at=now - timedelta(days=1)
    )

    with django_capture_on_commit_callbacks(execute=True):
        result = ltm_forget(now=now)
    outbox_drain()

    cards = {c.external_id: c for c in LtmCard.objects.filter(tenant=tenant)}
    assert (result.archived, result.decayed, result.boosted) == (1, 1, 1)
    assert cards["old-trivia"].status == "archived"
    assert cards["old-lesson"].status == "active" and cards["old-lesson"].weight == pytest.approx(
        0.8
    )
    assert cards["favourite"].weight == pytest.approx(1.25)

    # Out of default retrieval and recall...
    found = ltm_search(tenant=tenant, query="createOrder dashboard theme", mode="lexical", k=5)
    assert ids["old-trivia"] not in [h.memory_id for h in found.hits]
    body = owner.post(
        reverse("memories:recall"),
        {"user_id": "u_42", "session_id": "s_1", "query": "以前 createOrder 有类似的吗", "k": 10},
        format="json",
    ).json()
    recalled = {i["memory_id"]: i for i in body["items"]}
    assert ids["old-trivia"] not in recalled
    assert recalled[ids["favourite"]]["weight"] == pytest.approx(1.25)
    # ...but still readable (and so exportable and erasable).
    archived = ltm_search(
        tenant=tenant, query="createOrder dashboard theme", mode="lexical", statuses=["archived"]
    )
    assert [h.memory_id for h in archived.hits] == [ids["old-trivia"]]
    card = owner.get(reverse("memories:ltm-card", kwargs={"memory_id": ids["old-trivia"]}))
    assert card.status_code == 200 and card.json()["status"] == "archived"


@pytest.mark.django_db
def test_the_tenant_policy_sets_the_thresholds(tenant) -> None:
    ids = import_cards(tenant)
    now = timezone.now()
    LtmCard.objects.filter(tenant=tenant).update(created_at=now - timedelta(days=40))
    ForgettingPolicy.objects.create(
        tenant=tenant, decay_after_days=60, archive_after_days=30, archive_below_importance=0.2
    )

    result = ltm_forget(now=now)

    assert (result.archived, result.decayed) == (1, 0)
    assert LtmCard.objects.get(memory_id=ids["old-trivia"]).status == "archived"
    # Run again: nothing more to archive, weights floor at the minimum and never go below.
    assert ltm_forget(now=now).archived == 0
    for day in range(20):
        ltm_forget(now=now + timedelta(days=400 + day))
    assert LtmCard.objects.get(memory_id=ids["old-lesson"]).weight == pytest.approx(0.2)
