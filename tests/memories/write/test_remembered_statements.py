"""A remembered statement reads as the statement, from the transcript to the long-term card:
"Please remember that I deploy with Terraform." is the fact "I deploy with Terraform", with
the sentence as said and the request kept in the item's detail."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.ltm.models import LtmCard
from memories.review.models import PromotionRequest
from memories.review.promotion import promotion_approve
from memories.review.promotion_scan import promotion_scan
from memories.stm.items import StmItem
from memories.stm.selectors import stm_items_for
from tests.factories import StaffUserFactory

PROPOSALS = reverse("memories:proposals")


def append(client: APIClient, events: list[dict[str, Any]], session_id: str = "s-1") -> None:
    response = client.post(
        reverse("transcripts:events", kwargs={"session_id": session_id}),
        {"user_id": "u_42", "events": events},
        format="json",
    )
    assert response.status_code in (200, 201), response.json()


def said(message_id: str, content: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": content}


def items(tenant) -> list[StmItem]:
    return stm_items_for(tenant=tenant, user_id="u_42", limit=50).items


@pytest.mark.django_db
def test_from_the_events_api_to_the_card_it_reads_as_the_statement(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    # given: the README's example, said once
    with django_capture_on_commit_callbacks(execute=True):
        append(owner, [said("m-1", "Please remember that I deploy with Terraform.")])

    # then: the short-term item is the statement, the request is in its detail
    (item,) = items(tenant)
    assert item.summary == "I deploy with Terraform"
    assert item.detail["text"] == "Please remember that I deploy with Terraform"
    assert item.detail["request"] == "Please remember that"
    assert item.remember is True and item.message_ids == ["m-1"]

    # when: the scan proposes it (a remember request needs no age) and a reviewer approves
    assert promotion_scan(tenant=tenant, owners=10_000).proposed == 1
    proposal = PromotionRequest.objects.get(tenant=tenant)
    assert proposal.path == PromotionRequest.Path.LTM
    assert proposal.proposal["title"] == proposal.proposal["summary"] == "I deploy with Terraform"
    assert proposal.proposal["content"] == ""
    assert proposal.evidence["message_ids"] == ["m-1"]
    with django_capture_on_commit_callbacks(execute=True):
        approved = promotion_approve(request=proposal, reviewer=StaffUserFactory())

    # then: so is the card
    card = LtmCard.objects.get(tenant=tenant, memory_id=approved.result_ref)
    assert (card.title, card.summary, card.content) == (
        "I deploy with Terraform",
        "I deploy with Terraform",
        "",
    )
    assert "remember" not in card.text.lower()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("first", "then"),
    [
        ("Please remember that I deploy with Terraform.", "I deploy with Terraform."),
        ("I deploy with Terraform.", "Don't forget that I deploy with Terraform."),
        ("请记住我用 Terraform 部署", "我用 Terraform 部署"),
        ("我用 Terraform 部署", "记住：我用 Terraform 部署"),
    ],
)
def test_the_same_fact_with_and_without_the_request_is_one_item(
    tenant, owner: APIClient, django_capture_on_commit_callbacks, first: str, then: str
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        append(owner, [said("m-1", first)])
    with django_capture_on_commit_callbacks(execute=True):
        append(owner, [said("m-2", then)])

    (item,) = items(tenant)
    assert item.summary in ("I deploy with Terraform", "我用 Terraform 部署")
    assert (item.version, item.hit_count) == (2, 2)  # the second saying is a hit
    assert item.remember is True  # asked once is enough
    assert item.detail["request"]  # and the request it was asked with stays named
    assert item.message_ids == ["m-1", "m-2"]


@pytest.mark.django_db
def test_the_clauses_of_a_remembered_sentence_stay_apart(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        append(
            owner,
            [said("m-1", "Remember that I deploy with Terraform and I like short answers.")],
        )

    by_type = {item.memory_type: item for item in items(tenant)}
    assert set(by_type) == {"fact", "preference"}
    fact, preference = by_type["fact"], by_type["preference"]
    assert (fact.summary, preference.summary) == ("I deploy with Terraform", "I like short answers")
    assert fact.detail["request"] == preference.detail["request"] == "Remember that"
    assert preference.canonical_fact_key == "preference.answer_style"
    assert fact.remember and preference.remember


@pytest.mark.django_db
def test_a_proposal_through_the_api_is_read_as_its_statement(tenant, owner: APIClient) -> None:
    body = {
        "user_id": "u_42",
        "session_id": "s-1",
        "memory_type": "fact",
        "summary": "Please remember that I deploy with Terraform.",
        "detail": {"note": "from the chat"},
    }

    first = owner.post(PROPOSALS, {"proposals": [body]}, format="json")

    assert first.status_code == 201, first.json()
    (result,) = first.json()["results"]
    assert result["outcome"] == "inserted"
    item_url = reverse("memories:item", kwargs={"item_id": result["item_id"]})
    item = owner.get(item_url).json()
    assert item["summary"] == "I deploy with Terraform."
    assert item["detail"] == {
        "note": "from the chat",
        "text": "Please remember that I deploy with Terraform.",
        "request": "Please remember that",
    }
    assert item["remember"] is True

    # the same statement proposed plainly is a repeat of that item, not a second one
    plain = owner.post(
        PROPOSALS,
        {"proposals": [{**body, "summary": "I deploy with Terraform.", "detail": {}}]},
        format="json",
    )
    (again,) = plain.json()["results"]
    assert (again["outcome"], again["item_id"]) == ("merged", result["item_id"])
    assert len(items(tenant)) == 1
    merged = owner.get(item_url).json()
    assert (merged["remember"], merged["detail"]["request"]) == (True, "Please remember that")
