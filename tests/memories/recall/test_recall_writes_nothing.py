"""A read key creates nothing: recall (and every other read) of an unknown user or session
answers from the layers that exist and leaves no row, Redis key or segment behind; recall
naming another user than the session's is 409, as an append is."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.urls import reverse
from rest_framework.test import APIClient

from memories.ltm.models import LtmCard
from memories.ltm.services import CardInput, cards_import, outbox_drain
from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection
from profiles.models import EndUser, Tenant
from profiles.services.profile_versions import fact_set
from tests.factories import ProjectFactory
from transcripts.models import Session

RECALL = reverse("memories:recall")
# Keys that only cache what PostgreSQL holds (or count requests); any other key is a write.
CACHE_KEYS = (":ctx:doc:", ":apikey:", ":apikey-used:", ":throttle:", ":emb:")


def events_url(session_id: str) -> str:
    return reverse("transcripts:events", kwargs={"session_id": session_id})


def redis_state() -> dict[bytes, Any]:
    """Every key of this run but the caches, with its content."""
    client = redis_connection()
    state: dict[bytes, Any] = {}
    for key in client.scan_iter(match=keys.all_keys_pattern(), count=1000):
        if any(part in key.decode() for part in CACHE_KEYS):
            continue
        kind = client.type(key)
        if kind == b"hash":
            state[key] = client.hgetall(key)
        elif kind == b"zset":
            state[key] = client.zrange(key, 0, -1, withscores=True)
        elif kind == b"list":
            state[key] = client.lrange(key, 0, -1)
        elif kind == b"set":
            state[key] = client.smembers(key)
        else:
            state[key] = client.get(key)
    return state


def world() -> dict[str, Any]:
    """Row counts of every model, card access counts, Redis (but caches) and segment files."""
    counts = {
        model._meta.label: model._default_manager.count()
        for model in apps.get_models()
        if model._meta.app_label in ("profiles", "transcripts", "memories")
    }
    segments = Path(settings.STORAGES["transcripts"]["OPTIONS"]["location"])
    return {
        "rows": counts,
        "card_access": sorted(
            LtmCard.objects.values_list("memory_id", "access_count", "last_access_at")
        ),
        "redis": redis_state(),
        "segments": sorted(str(p) for p in segments.rglob("*") if p.is_file()),
    }


@pytest.fixture
def reader(tenant: Tenant, client_for: Callable[..., APIClient]) -> APIClient:
    return client_for(tenant, ("read",))


@pytest.fixture
def known(tenant: Tenant, owner: APIClient, django_capture_on_commit_callbacks) -> dict[str, str]:
    """A tenant with a project, a tenant fact, a shared card, and one known user (with a
    profile and short-term memory) whose session s_old exists."""
    ProjectFactory(tenant=tenant, key="shop", default_env="staging")
    with django_capture_on_commit_callbacks(execute=True):
        fact_set(tenant=tenant, key="config.region", value="cn-north")
        owner.patch(
            reverse("profiles:profile", kwargs={"user_id": "u_known"}),
            {"profile": {"language": "en", "answer_style": "brief"}},
            format="json",
        )
    appended = owner.post(
        events_url("s_old"),
        {"user_id": "u_known", "events": [{"role": "system", "content": "start"}]},
        format="json",
    )
    assert appended.status_code == 201
    proposal = {
        "user_id": "u_known",
        "session_id": "s_old",
        "task_id": "checkout",
        "memory_type": "fact",
        "subtype": "symptom",
        "summary": "checkout times out in staging when the payment gateway is slow",
        "entities": ["checkout", "payment gateway"],
        "canonical_fact_key": "checkout:symptom",
        "fact_value": "timeout",
        "confidence": 0.9,
        "importance": 0.8,
        "verified": True,
    }
    proposed = owner.post(reverse("memories:proposals"), {"proposals": [proposal]}, format="json")
    assert proposed.status_code == 201, proposed.json()
    [(card, _)] = cards_import(
        tenant=tenant,
        cards=[
            CardInput(
                memory_type="procedure",
                title="Checkout timeouts",
                summary="When checkout times out, check the payment gateway latency first",
                entities=["checkout", "payment gateway"],
            )
        ],
    )
    outbox_drain()
    return {"stm": proposed.json()["results"][0]["item_id"], "card": card.memory_id}


def recall(client: APIClient, user: str, session: str, **fields: Any) -> Any:
    body = {
        "user_id": user,
        "session_id": session,
        "query": "checkout times out again, what should I check?",
        "layers": ["postgres", "redis", "ltm"],
        **fields,
    }
    return client.post(RECALL, body, format="json")


@pytest.mark.django_db
def test_a_read_keys_recall_of_an_unknown_user_and_session_creates_nothing(
    tenant, owner, reader, known
) -> None:
    before = world()

    response = recall(reader, "u_new", "s_new")

    assert response.status_code == 200, response.json()
    body = response.json()
    # Answered from what exists: Layer 1 defaults and tenant blocks, long-term memory.
    assert body["profile_block"] == {}
    assert {"key": "config.region", "value": "cn-north"} in [
        {"key": f["key"], "value": f["value"]} for f in body["constraints_block"]["facts"]
    ]
    assert [i["memory_id"] for i in body["items"]] == [known["card"]]
    assert body["degraded"] == []
    assert world() == before
    assert not EndUser.objects.filter(external_id="u_new").exists()

    # The real owner's first append to that session is not refused.
    first = owner.post(
        events_url("s_new"),
        {"user_id": "u_new", "events": [{"role": "user", "content": "hello"}]},
        format="json",
    )
    assert first.status_code == 201, first.json()
    assert Session.objects.get(external_id="s_new").end_user.external_id == "u_new"


@pytest.mark.django_db
def test_a_known_users_recall_in_a_new_session_records_nothing(
    tenant, owner, reader, known
) -> None:
    before = world()

    response = recall(reader, "u_known", "s_new", task_id="checkout", explain=True)

    assert response.status_code == 200, response.json()
    body = response.json()
    assert "this recall is not recorded" in " ".join(body["explain"]["notes"])
    assert body["profile_block"]["language"] == "en"
    assert {i["memory_id"] for i in body["items"]} == {known["stm"], known["card"]}
    assert world() == before  # no session, no event, no recall count, no card access

    first = owner.post(
        events_url("s_new"),
        {"user_id": "u_known", "events": [{"role": "user", "content": "hello"}]},
        format="json",
    )
    assert first.status_code == 201


@pytest.mark.django_db
def test_a_recall_in_the_users_own_session_is_still_recorded(owner, reader, known) -> None:
    response = recall(reader, "u_known", "s_old", task_id="checkout")

    assert response.status_code == 200
    events = owner.get(events_url("s_old")).json()["events"]
    assert [e["id"] for e in events][-1] == response.json()["recall_id"]


@pytest.mark.django_db
def test_recall_naming_another_user_than_the_sessions_is_409_and_writes_nothing(
    owner, reader, known
) -> None:
    before = world()

    response = recall(reader, "u_other", "s_old")
    append = owner.post(
        events_url("s_old"),
        {"user_id": "u_other", "events": [{"role": "user", "content": "hi"}]},
        format="json",
    )

    assert response.status_code == append.status_code == 409
    assert response.json() == append.json()
    error = response.json()["error"]
    assert error["code"] == "conflict" and "user_id" in error["fields"]
    assert world() == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "url", "body", "status"),
    [
        (
            "post",
            reverse("memories:compress", kwargs={"session_id": "s_new"}),
            {"budget_tokens": 500},
            404,
        ),  # noqa: E501
        ("post", reverse("memories:ltm-search"), {"query": "checkout", "user_id": "u_new"}, 200),
        ("get", reverse("memories:promotions"), None, 200),
        ("get", reverse("memories:stm") + "?user_id=u_new&session_id=s_new", None, 404),
        ("get", reverse("profiles:profile", kwargs={"user_id": "u_new"}), None, 404),
        ("get", events_url("s_new"), None, 404),
        ("get", reverse("transcripts:verify", kwargs={"session_id": "s_new"}), None, 404),
    ],
)
def test_other_reads_of_an_unknown_user_or_session_create_nothing(
    reader, known, method: str, url: str, body: Any, status: int
) -> None:
    before = world()

    response = getattr(reader, method)(url, body, format="json") if body else reader.get(url)

    assert response.status_code == status, response.json()
    assert world() == before


@pytest.mark.django_db
def test_a_queued_record_of_a_session_not_started_creates_nothing(tenant, known) -> None:
    # e.g. queued while PostgreSQL could not say whether the session exists
    from memories.recall.effects import recall_effects_apply

    before = world()

    recall_effects_apply(
        records=[
            {
                "recall_id": "rcl_unchecked",
                "tenant_id": tenant.pk,
                "user_id": user,
                "end_user_id": end_user,
                "session_id": "s_new",
                "task_id": "",
                "at": time.time(),
                "stm": [],
                "ltm": [],
                "degraded": ["postgres"],
            }
            for user, end_user in (
                ("u_new", None),
                ("u_known", EndUser.objects.get(external_id="u_known").pk),
            )
        ]
    )

    assert world() == before
