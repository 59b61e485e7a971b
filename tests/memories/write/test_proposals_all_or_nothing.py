"""A submit lands whole or leaves no trace: end users, short-term items and their audit events
are written together, and a failure at any step (Redis, the audit, the commit) undoes the
others; a retried submit returns what the first one created."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from memories.audit.models import AuditEvent
from memories.audit.services import AUDIT_LOCK_NAMESPACE
from memories.stm import store as stm_store_module
from memories.write.candidates import Candidate
from memories.write.services import proposals_submit
from memoryproject import redis_client
from memoryproject import redis_keys as keys
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_client import redis_connection
from profiles.models import EndUser
from tests.outages import free_port

PROPOSALS = reverse("memories:proposals")


def proposal(**fields: Any) -> dict[str, Any]:
    values = {
        "user_id": "u_42",
        "session_id": "s_1",
        "task_id": "bug_456",
        "memory_type": "fact",
        "subtype": "diagnosis",
        "summary": "createOrder 在 prod-k8s 超时，数据库已排除",
        "entities": ["createOrder", "prod-k8s"],
        "confidence": 0.9,
        "verified": True,
    }
    values.update(fields)
    return values


def redis_state() -> dict[str, Any]:
    """Every key of this run's short-term memory with its content (and the expiry registry)."""
    client = redis_connection()
    state: dict[str, Any] = {}
    for raw in client.scan_iter(match=keys.all_keys_pattern(), count=1000):
        key = raw.decode()
        kind = client.type(raw).decode()
        if kind == "hash":
            state[key] = client.hgetall(raw)
        elif kind == "zset":
            state[key] = client.zrange(raw, 0, -1, withscores=True)
        elif ":stm" in key or key.endswith("expiring"):
            state[key] = (kind, client.dump(raw))
    return {k: v for k, v in state.items() if ":throttle:" not in k and ":apikey" not in k}


def audit_holder(tenant_id: int) -> Iterator[threading.Event]:
    """Another transaction holding the tenant's audit chain until the event is set."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        from django.db import connection as own
        from django.db import transaction

        try:
            with transaction.atomic(), own.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_advisory_xact_lock(%s, %s)", [AUDIT_LOCK_NAMESPACE, tenant_id]
                )
                held.set()
                release.wait(30)
        finally:
            own.close()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert held.wait(10)
        yield release
    finally:
        release.set()
        thread.join(30)


@pytest.fixture
def audit_fails(tenant) -> Iterator[None]:
    """The audit step fails: its lock is held elsewhere and this connection waits 300 ms."""
    holder = audit_holder(tenant.pk)
    next(holder)
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '300ms'")
    yield
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = 0")
    next(holder, None)


@pytest.fixture
def redis_down(settings) -> Iterator[None]:
    """Redis at a closed port, as in an outage."""
    saved = settings.CACHES
    settings.CACHES = {
        **saved,
        "default": {**saved["default"], "LOCATION": f"redis://127.0.0.1:{free_port()}/0"},
    }
    stm_store_module.stm_store.cache_clear()
    yield
    settings.CACHES = saved
    stm_store_module.stm_store.cache_clear()
    redis_client._failed_until.clear()


# The audit lock must be free between requests, so these tests commit for real.
@pytest.mark.django_db(transaction=True)
def test_a_failed_audit_undoes_the_items_and_the_end_users(tenant, owner: APIClient, request):
    # Given an item to merge into and one to supersede,
    merged = proposal(canonical_fact_key="bug456:symptom", fact_value="timeout")
    superseded = proposal(
        summary="root cause is the database", canonical_fact_key="bug456:cause", fact_value="db"
    )
    first = owner.post(PROPOSALS, {"proposals": [merged, superseded]}, format="json")
    assert first.status_code == 201, first.json()
    before = redis_state()
    users, events = EndUser.objects.count(), AuditEvent.objects.count()

    # when a submit that merges, supersedes and inserts for a new user fails at the audit,
    request.getfixturevalue("audit_fails")
    batch = [
        {**merged, "source": {"message_ids": ["m2"]}},
        proposal(
            summary="root cause is the thread pool",
            canonical_fact_key="bug456:cause",
            fact_value="thread_pool",
        ),
        proposal(user_id="u_new", summary="prefers terse answers about createOrder"),
    ]
    response = owner.post(PROPOSALS, {"proposals": batch}, format="json")

    # then it answers 503 and leaves Redis as it was, and no end user or audit event behind.
    assert response.status_code == 503, response.content
    assert response.json()["error"]["code"] == "store_unavailable"
    assert redis_state() == before
    assert EndUser.objects.count() == users and not EndUser.objects.filter(external_id="u_new")
    assert AuditEvent.objects.count() == events


@pytest.mark.django_db(transaction=True)
def test_the_undone_submit_retried_lands_whole(tenant, owner: APIClient, request):
    merged = proposal(canonical_fact_key="bug456:symptom", fact_value="timeout")
    created = owner.post(PROPOSALS, {"proposals": [merged]}, format="json").json()["results"]
    batch = [
        {**merged, "source": {"message_ids": ["m2"]}},
        proposal(user_id="u_new", summary="prefers terse answers about createOrder"),
    ]
    holder = audit_holder(tenant.pk)
    next(holder)
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '300ms'")
    failed = owner.post(PROPOSALS, {"proposals": batch}, format="json")
    next(holder, None)
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = 0")
    assert failed.status_code == 503

    landed = owner.post(PROPOSALS, {"proposals": batch}, format="json")

    assert landed.status_code == 201, landed.json()
    again, new = landed.json()["results"]
    # The merge counts once (version 2, not 3): the failed attempt left nothing to merge into.
    assert (again["outcome"], again["item_id"], again["version"]) == (
        "merged",
        created[0]["item_id"],
        2,
    )
    assert new["outcome"] == "inserted"
    assert EndUser.objects.filter(external_id="u_new").count() == 1
    assert AuditEvent.objects.filter(object_id__contains=new["item_id"]).count() == 1


@pytest.mark.django_db
def test_redis_unreachable_leaves_no_end_user_or_audit_event(tenant, redis_down) -> None:
    users, events = EndUser.objects.count(), AuditEvent.objects.count()
    candidate = Candidate(
        user_id="u_unseen",
        session_id="s_1",
        memory_type="fact",
        summary="createOrder 在 prod-k8s 超时",
        verified=True,
        confidence=0.9,
    )

    with pytest.raises(StoreUnavailable):
        proposals_submit(tenant=tenant, candidates=[candidate])

    assert EndUser.objects.count() == users
    assert not EndUser.objects.filter(external_id="u_unseen").exists()
    assert AuditEvent.objects.count() == events


@pytest.mark.django_db
def test_a_retried_submit_with_the_same_ids_returns_what_it_created(owner: APIClient) -> None:
    body = {
        "proposals": [
            proposal(
                user_id="u_retry",
                canonical_fact_key="bug456:symptom",
                fact_value="timeout",
                source={"message_ids": ["m1"]},
            )
        ]
    }
    first = owner.post(PROPOSALS, body, format="json")
    state, users = redis_state(), EndUser.objects.count()
    events = AuditEvent.objects.count()

    retried = owner.post(PROPOSALS, body, format="json")

    (created,), (again,) = first.json()["results"], retried.json()["results"]
    assert first.status_code == 201 and created["outcome"] == "inserted"
    assert (again["outcome"], again["item_id"], again["version"]) == (
        "unchanged",
        created["item_id"],
        created["version"],
    )
    assert EndUser.objects.count() == users and AuditEvent.objects.count() == events
    assert redis_state() == state


@pytest.mark.django_db
def test_proposals_of_many_users_land_in_a_few_statements_one_event_per_user(
    tenant, owner: APIClient, django_assert_max_num_queries
) -> None:
    # given 40 proposals of 20 users none of whom the service knows yet
    body = {
        "proposals": [
            proposal(user_id=f"u_many_{n % 20}", summary=f"order-exec pool set to {n + 1} threads")
            for n in range(40)
        ]
    }

    with django_assert_max_num_queries(20):
        response = owner.post(PROPOSALS, body, format="json")

    assert response.status_code == 201
    assert {r["outcome"] for r in response.json()["results"]} == {"inserted"}
    assert EndUser.objects.filter(tenant=tenant, external_id__startswith="u_many_").count() == 20
    events = list(AuditEvent.objects.filter(tenant=tenant).order_by("seq"))
    users = {u.pk: u.external_id for u in EndUser.objects.filter(tenant=tenant)}
    assert sorted(users[e.end_user_pk] for e in events) == sorted(f"u_many_{n}" for n in range(20))
    assert all(len(e.details["items"]) == 2 for e in events)
    assert [e.seq for e in events] == list(range(1, 21))
