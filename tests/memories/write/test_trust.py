"""Every memory knows whose word it is: the source kind and the trust the policy derives from
it and from the API key, visible on items and recall answers; confidence follows the source."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.stm.items import StmItem, Trust, primary_source_kind
from memories.write.candidates import Candidate, SourceKind
from memories.write.services import proposals_submit
from memories.write.trust import HoldReason, hold_reason, trust_of
from profiles.models import ApiKey, Tenant
from profiles.services.api_keys import api_key_update

PROPOSALS = reverse("memories:proposals")
RECALL = reverse("memories:recall")


def item_url(item_id: str) -> str:
    return reverse("memories:item", kwargs={"item_id": item_id})


def fact(**fields: object) -> dict:
    values = {
        "user_id": "u_1",
        "session_id": "s_1",
        "task_id": "bug_9",
        "memory_type": "fact",
        "summary": "billing-api runs on prod-k8s",
        "entities": ["billing-api"],
        "confidence": 1.0,
        "verified": True,
    }
    values.update(fields)
    return values


@pytest.mark.django_db
def test_an_agents_proposal_is_untrusted_and_claims_no_more_than_its_source_allows(
    owner: APIClient, stranger: APIClient
) -> None:
    # When an agent proposes a fact, claiming full confidence and that the user said it
    response = owner.post(PROPOSALS, {"proposals": [fact(source={"kind": "user"})]}, format="json")

    # Then it is an agent's proposal, untrusted, with a proposal's confidence at most
    assert response.status_code == 201, response.json()
    (result,) = response.json()["results"]
    assert (result["source_kind"], result["trust"]) == ("proposal", "untrusted")
    assert result["write_profile"]["confidence"] == 0.7
    item = owner.get(item_url(result["item_id"])).json()
    assert (item["source_kind"], item["trust"], item["confidence"]) == (
        "proposal",
        "untrusted",
        0.7,
    )
    assert item["source"]["kind"] == "proposal"
    # and another tenant cannot read it
    assert stranger.get(item_url(result["item_id"])).status_code == 404


@pytest.mark.django_db
def test_a_trusted_writer_keys_proposal_is_trusted(trusted_owner: APIClient) -> None:
    (result,) = trusted_owner.post(PROPOSALS, {"proposals": [fact()]}, format="json").json()[
        "results"
    ]

    assert (result["source_kind"], result["trust"]) == ("proposal", "trusted")
    item = trusted_owner.get(item_url(result["item_id"])).json()
    assert (item["trust"], item["confidence"]) == ("trusted", 1.0)


@pytest.mark.django_db
def test_marking_a_key_a_trusted_writer_holds_from_its_next_request(
    tenant: Tenant, owner: APIClient, django_capture_on_commit_callbacks: Callable
) -> None:
    # Given a key used once (so its row is cached)
    first = owner.post(PROPOSALS, {"proposals": [fact()]}, format="json").json()["results"][0]
    key = ApiKey.objects.get(tenant=tenant)

    # When the tenant marks it a trusted writer
    with django_capture_on_commit_callbacks(execute=True):
        api_key_update(api_key=key, name=key.name, scopes=key.scopes, trusted_writer=True)
    second = owner.post(
        PROPOSALS, {"proposals": [fact(summary="billing-api pages the SRE rota")]}, format="json"
    ).json()["results"][0]

    assert first["trust"] == "untrusted"
    assert second["trust"] == "trusted"


@pytest.mark.django_db
def test_extracted_and_tool_sources_keep_their_kind_and_confidence_order(tenant: Tenant) -> None:
    def candidate(kind: str, summary: str) -> Candidate:
        return Candidate(
            user_id="u_1",
            session_id="s_1",
            task_id="bug_9",
            memory_type="fact",
            summary=summary,
            source_kind=kind,
            message_ids=(f"m_{kind}",),
            confidence=0.95,
            verified=True,
        )

    results = proposals_submit(
        tenant=tenant,
        candidates=[
            candidate(SourceKind.USER, "the invoices live in s3 bucket inv-2024"),
            candidate(SourceKind.TOOL, "billing-api (psql_stats): db pool 48/50 in use"),
            candidate(SourceKind.ASSISTANT, "the invoices job retries three times"),
        ],
        strict=False,
    )

    kinds = [(r.source_kind, r.trust, r.decision.profile.confidence) for r in results]
    assert kinds == [
        ("user", "trusted", 0.95),
        ("tool", "untrusted", 0.9),
        ("assistant", "untrusted", 0.6),
    ]


def test_trust_is_the_users_or_a_reviewers_or_a_trusted_keys() -> None:
    assert trust_of(source_kind="user", trusted_writer=False) == Trust.TRUSTED
    assert trust_of(source_kind="reviewer", trusted_writer=False) == Trust.TRUSTED
    assert trust_of(source_kind="proposal", trusted_writer=True) == Trust.TRUSTED
    assert trust_of(source_kind="proposal", trusted_writer=False) == Trust.UNTRUSTED
    # a trusted key does not make a tool's output or the assistant's words the user's
    assert trust_of(source_kind="assistant", trusted_writer=True) == Trust.UNTRUSTED
    assert trust_of(source_kind="tool", trusted_writer=True) == Trust.UNTRUSTED


def test_items_written_before_trust_was_recorded_get_their_sources_trust() -> None:
    def legacy(kind: str) -> StmItem:
        return StmItem(
            id="stm_1_0",
            tenant_id=1,
            end_user_id=1,
            user_id="u",
            session_id="s",
            memory_type="constraint",
            summary="x",
            fingerprint="f",
            source={"kind": kind},
        )

    assert legacy("user").trust == Trust.TRUSTED
    assert legacy("proposal+user").trust == Trust.TRUSTED
    assert legacy("proposal").trust == Trust.UNTRUSTED
    assert legacy("").trust == Trust.UNTRUSTED
    assert primary_source_kind("assistant+user") == "user"
    assert primary_source_kind("tool+proposal") == "tool"


def test_only_untrusted_rules_are_held() -> None:
    base = Candidate(user_id="u", session_id="s", memory_type="fact", summary="x")
    profile_fact = Candidate(
        user_id="u",
        session_id="s",
        memory_type="fact",
        summary="I live in Berlin",
        canonical_fact_key="profile.location",
        fact_value="Berlin",
    )
    task_fact = Candidate(
        user_id="u",
        session_id="s",
        memory_type="fact",
        summary="root cause is the pool",
        canonical_fact_key="bug9:root_cause",
        fact_value="pool",
    )
    constraint = Candidate(user_id="u", session_id="s", memory_type="constraint", summary="x")
    preference = Candidate(user_id="u", session_id="s", memory_type="preference", summary="x")

    untrusted = Trust.UNTRUSTED
    assert hold_reason(constraint, trust=untrusted) == HoldReason.CONSTRAINT
    assert hold_reason(preference, trust=untrusted) == HoldReason.PREFERENCE
    assert hold_reason(profile_fact, trust=untrusted) == HoldReason.PROFILE_FACT
    assert hold_reason(task_fact, trust=untrusted) == ""
    assert hold_reason(base, trust=untrusted) == ""
    assert hold_reason(constraint, trust=Trust.TRUSTED) == ""


@pytest.mark.django_db
def test_recall_items_say_whose_word_they_are(
    tenant: Tenant, client_for: Callable[..., APIClient]
) -> None:
    agent = client_for(tenant)
    agent.post(
        PROPOSALS,
        {"proposals": [fact(summary="billing-api deploys from the release branch")]},
        format="json",
    )

    body = agent.post(
        RECALL,
        {
            "user_id": "u_1",
            "session_id": "s_1",
            "task_id": "bug_9",
            "query": "how does billing-api deploy?",
        },
        format="json",
    ).json()

    (item,) = [i for i in body["items"] if "release branch" in i["text"]]
    assert (item["source_kind"], item["trust"]) == ("proposal", "untrusted")
