from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection
from profiles.models import EndUser

PROPOSALS = reverse("memories:proposals")
LIST = reverse("memories:stm")


def item_url(item_id: str) -> str:
    return reverse("memories:item", kwargs={"item_id": item_id})


def proposal(**fields) -> dict:
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


def stm_keys() -> set[bytes]:
    pattern = f"{keys.all_keys_pattern()[:-1]}stm:*"
    return set(redis_connection().scan_iter(match=pattern, count=1000))


@pytest.mark.django_db
def test_accepted_proposals_land_and_refused_ones_say_why(owner: APIClient) -> None:
    response = owner.post(
        PROPOSALS,
        {
            "proposals": [
                proposal(),
                proposal(summary="谢谢！", memory_type="fact"),
                proposal(
                    summary="maybe the cache is stale",
                    memory_type="hypothesis",
                    verified=False,
                    confidence=0.4,
                    task_id="",
                ),
            ]
        },
        format="json",
    )

    assert response.status_code == 201, response.json()
    written, chit_chat, guess = response.json()["results"]
    assert written["outcome"] == "inserted" and written["item_id"].startswith("stm_")
    assert written["score"] >= 3 and written["threshold_breakdown"]["verified"] == 3
    assert written["write_profile"]["is_verified"] is True
    assert (chit_chat["outcome"], chit_chat["refusal"]) == ("refused", "chit_chat")
    assert (guess["outcome"], guess["refusal"]) == ("refused", "score_below_threshold")
    assert guess["item_id"] is None


@pytest.mark.django_db
def test_dry_run_decides_the_same_and_writes_nothing(owner: APIClient) -> None:
    before_keys, before_users = stm_keys(), EndUser.objects.count()

    response = owner.post(f"{PROPOSALS}?dry_run=1", {"proposals": [proposal()]}, format="json")

    (result,) = response.json()["results"]
    assert response.status_code == 200 and response.json()["dry_run"] is True
    assert (result["outcome"], result["accepted"]) == ("would_write", True)
    assert stm_keys() == before_keys
    assert EndUser.objects.count() == before_users


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["null", "maybe", "2"])
def test_a_dry_run_flag_that_is_no_boolean_is_400_and_writes_nothing(
    owner: APIClient, value: str
) -> None:
    before_keys, before_users = stm_keys(), EndUser.objects.count()

    response = owner.post(
        f"{PROPOSALS}?dry_run={value}", {"proposals": [proposal()]}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert "dry_run" in response.json()["error"]["fields"]
    assert stm_keys() == before_keys
    assert EndUser.objects.count() == before_users


@pytest.mark.django_db
def test_repeating_a_fact_merges_it_and_a_new_value_supersedes(owner: APIClient) -> None:
    first = proposal(canonical_fact_key="bug456:root_cause", fact_value="database")
    again = {**first, "source": {"message_ids": ["m2"]}}
    changed = proposal(
        summary="root cause is the thread pool",
        canonical_fact_key="bug456:root_cause",
        fact_value="thread_pool",
    )

    created = owner.post(PROPOSALS, {"proposals": [first]}, format="json").json()["results"][0]
    merged = owner.post(PROPOSALS, {"proposals": [again]}, format="json").json()["results"][0]
    replaced = owner.post(PROPOSALS, {"proposals": [changed]}, format="json").json()["results"][0]

    assert (merged["outcome"], merged["item_id"], merged["version"]) == (
        "merged",
        created["item_id"],
        2,
    )
    assert merged["write_profile"]["duplicate"] is True
    assert replaced["outcome"] == "superseded"
    assert replaced["superseded_id"] == created["item_id"]
    old = owner.get(item_url(created["item_id"])).json()
    assert (old["status"], old["superseded_by"]) == ("superseded", replaced["item_id"])


@pytest.mark.django_db
def test_card_and_id_numbers_are_redacted_before_writing(trusted_owner: APIClient) -> None:
    owner = trusted_owner  # a trusted writer: its rules are the user's word
    result = owner.post(
        PROPOSALS,
        {
            "proposals": [
                proposal(
                    memory_type="constraint",
                    summary="refunds go to card 4111 1111 1111 1111 of 11010519491231002X only",
                    detail={"note": "refund to 4111-1111-1111-1111"},
                )
            ]
        },
        format="json",
    ).json()["results"][0]

    item = owner.get(item_url(result["item_id"])).json()
    assert sorted(result["redacted"]) == ["bank_card", "id_card"]
    assert "4111" not in str(item) and "11010519491231002X" not in str(item)
    assert "[REDACTED:bank_card]" in item["summary"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "proposals"),
        ({"proposals": []}, "proposals"),
        ({"proposals": [proposal(memory_type="rumour")]}, "proposals.0.memory_type"),
        ({"proposals": [proposal(confidence=1.5)]}, "proposals.0.confidence"),
        ({"proposals": [proposal(summary=None)]}, "proposals.0.summary"),
        ({"proposals": [proposal(), proposal(user_id="bad id")]}, "proposals.1.user_id"),
        ({"proposals": [proposal(entities="createOrder")]}, "proposals.0.entities"),
        ({"proposals": [proposal()] * 101}, "proposals"),
    ],
)
def test_bad_proposals_are_400_and_write_nothing(owner: APIClient, body, field) -> None:
    before_keys, before_users = stm_keys(), EndUser.objects.count()

    response = owner.post(PROPOSALS, body, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert field in response.json()["error"]["fields"], response.json()
    assert stm_keys() == before_keys
    assert EndUser.objects.count() == before_users


@pytest.mark.django_db
def test_list_filters_and_pages_newest_first(trusted_owner: APIClient) -> None:
    owner = trusted_owner  # a trusted writer: its rules are the user's word
    owner.post(
        PROPOSALS,
        {
            "proposals": [
                proposal(
                    summary=f"fact number {n} about payment-service",
                    memory_type=kind,
                    entities=["payment-service"] if n % 2 else ["createOrder"],
                    session_id=f"s_{n % 2}",
                )
                for n, kind in enumerate(["fact", "decision", "constraint", "fact", "decision"])
            ]
        },
        format="json",
    )

    everything = owner.get(LIST, {"user_id": "u_42"}).json()["items"]
    decisions = owner.get(LIST, {"user_id": "u_42", "type": "decision"}).json()["items"]
    by_entity = owner.get(LIST, {"user_id": "u_42", "entity": "Payment-Service"}).json()["items"]
    by_session = owner.get(LIST, {"user_id": "u_42", "session_id": "s_0"}).json()["items"]
    first = owner.get(LIST, {"user_id": "u_42", "limit": 2}).json()
    second = owner.get(LIST, {"user_id": "u_42", "limit": 2, "before": first["next_before"]}).json()

    assert [i["summary"][12] for i in everything] == ["4", "3", "2", "1", "0"]
    assert {i["memory_type"] for i in decisions} == {"decision"} and len(decisions) == 2
    assert len(by_entity) == 2 and len(by_session) == 3
    assert [i["id"] for i in first["items"] + second["items"]] == [i["id"] for i in everything[:4]]


@pytest.mark.django_db
def test_an_item_shows_the_transcript_events_it_came_from(owner: APIClient) -> None:
    owner.post(
        reverse("transcripts:events", kwargs={"session_id": "s_1"}),
        {
            "user_id": "u_42",
            "events": [
                {"id": "m-1", "role": "user", "content": "数据库已排除，别再查了"},
                {"id": "m-2", "role": "assistant", "content": "好的"},
            ],
        },
        format="json",
    )
    created = owner.post(
        PROPOSALS, {"proposals": [proposal(source={"message_ids": ["m-1"]})]}, format="json"
    ).json()["results"][0]

    item = owner.get(item_url(created["item_id"])).json()

    assert item["source"]["message_ids"] == ["m-1"]
    assert [(e["id"], e["content"]) for e in item["provenance"]] == [
        ("m-1", "数据库已排除，别再查了")
    ]


@pytest.mark.django_db
def test_delete_removes_an_item_at_once(owner: APIClient) -> None:
    created = owner.post(PROPOSALS, {"proposals": [proposal()]}, format="json").json()
    item_id = created["results"][0]["item_id"]

    assert owner.delete(item_url(item_id)).status_code == 204
    assert owner.get(item_url(item_id)).status_code == 404
    assert owner.delete(item_url(item_id)).status_code == 404
    assert owner.get(LIST, {"user_id": "u_42"}).json()["items"] == []


@pytest.mark.django_db
def test_another_tenant_sees_none_of_it(owner: APIClient, stranger: APIClient) -> None:
    created = owner.post(PROPOSALS, {"proposals": [proposal()]}, format="json").json()
    item_id = created["results"][0]["item_id"]
    stranger.post(PROPOSALS, {"proposals": [proposal(user_id="u_other")]}, format="json")

    assert stranger.get(item_url(item_id)).status_code == 404
    assert stranger.delete(item_url(item_id)).status_code == 404
    assert stranger.get(LIST, {"user_id": "u_42"}).status_code == 404
    assert stranger.get(item_url("stm_1_0123456789abcdef")).status_code == 404
    assert owner.get(item_url(item_id)).status_code == 200


@pytest.mark.django_db
def test_scopes_apply(tenant, client_for) -> None:
    reader = client_for(tenant, ("read",))
    response = reader.post(PROPOSALS, {"proposals": [proposal()]}, format="json")
    assert response.status_code == 403
