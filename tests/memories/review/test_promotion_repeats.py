"""A card proposal that repeats a live card of its user offers to merge into it: approving it as
shown makes no second card without a word, merging makes none at all."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from memories.audit.models import AuditEvent
from memories.audit.services import Action
from memories.ltm.models import LtmCard
from memories.ltm.services import CardInput, cards_import
from memories.review.models import PromotionRequest, ReviewStatus
from memories.review.promotion import promotion_approve, promotion_merge, promotion_repeats
from memories.review.promotion_scan import promotion_scan
from memories.review.repeats import Rule, repeat_between
from memoryproject.errors import Conflict, ErrorCode, Invalid, NotFound
from profiles.models import EndUser, Tenant, TenantMembership
from tests.factories import EndUserFactory, MembershipFactory, StaffUserFactory, TenantFactory

QUEUE = "admin:memories_promotionrequest_changelist"


def promotion_url(promotion: PromotionRequest) -> str:
    return reverse("admin:memories_promotionrequest_change", args=[promotion.pk])


def card_of(tenant: Tenant, end_user: EndUser | None, summary: str, **fields: Any) -> LtmCard:
    [(card, _)] = cards_import(
        tenant=tenant,
        cards=[
            CardInput(
                memory_type=LtmCard.Type.SEMANTIC_FACT,
                title=summary[:80],
                summary=summary,
                user_id=end_user.external_id if end_user else "",
                source_refs={"stm_item_ids": ["stm_old"], "message_ids": ["m-old"]},
                **fields,
            )
        ],
    )
    return card


def proposal_of(tenant: Tenant, end_user: EndUser, summary: str) -> PromotionRequest:
    """A pending card proposal as the scan records it, from one item and one message."""
    return PromotionRequest.objects.create(
        request_id=f"prm_{uuid.uuid4().hex[:20]}",
        tenant=tenant,
        end_user=end_user,
        path=PromotionRequest.Path.LTM,
        memory_type="fact",
        proposal={
            "memory_type": LtmCard.Type.SEMANTIC_FACT,
            "title": summary[:80],
            "summary": summary,
            "content": "",
            "entities": ["Terraform"],
            "tags": ["promoted"],
            "importance": 0.9,
            "confidence": 0.8,
        },
        evidence={
            "stm_item_ids": [f"stm_{uuid.uuid4().hex[:8]}"],
            "message_ids": [f"m-{uuid.uuid4().hex[:6]}"],
            "sessions": ["s-2"],
            "triggers": {"remember": "the user asked to remember it"},
        },
        existing={"similar": []},
        confidence=0.8,
        fingerprint=uuid.uuid4().hex,
    )


def cards(tenant: Tenant) -> int:
    return LtmCard.objects.filter(tenant=tenant).count()


# --- the rule ---------------------------------------------------------------------------------
# The examples behind the rule and its threshold (docs/review.md): a repeat keeps every term of
# one side within the other and shares at least 2/3 of all their terms.
@pytest.mark.parametrize(
    ("proposal", "card", "rule"),
    [
        ("I deploy with Terraform", "I DEPLOY WITH TERRAFORM!", Rule.SAME_TEXT),
        ("I deploy with Terraform", "Deploys with Terraform", Rule.NEAR_TEXT),
        ("I deploy with Terraform", "I deploy everything with Terraform", Rule.NEAR_TEXT),
        ("I'm allergic to peanuts", "I am allergic to peanuts", Rule.NEAR_TEXT),
        ("我用 Terraform 部署", "我用 Terraform 来部署", Rule.NEAR_TEXT),
        ("订单服务部署在 prod-k8s 集群", "订单服务部署在 prod-k8s", Rule.NEAR_TEXT),
        ("我女儿的生日是五月三号", "我女儿生日是五月三号", Rule.NEAR_TEXT),
    ],
)
def test_a_statement_said_again_repeats_the_card(proposal: str, card: str, rule: str) -> None:
    found, why, _ = repeat_between(proposal, [("summary", card)])

    assert found == rule and "card's summary" in why


@pytest.mark.parametrize(
    ("proposal", "card"),
    [
        # another value, however much else is shared
        ("I deploy with Terraform", "I deploy with Helm"),
        ("我用 Terraform 部署", "我用 Helm 部署"),
        ("The staging DB is restored at 02:00 UTC", "The staging DB is restored at 03:00 UTC"),
        (
            "The staging database is restored from the nightly snapshot at 02:00 UTC",
            "The production database is restored from the nightly snapshot at 02:00 UTC",
        ),
        ("My sister's birthday is on May 3", "My brother's birthday is on May 3"),
        ("我女儿的生日是五月三号", "我儿子的生日是五月三号"),
        ("我们的发版窗口是周二晚上", "我们的发版窗口是周四晚上"),
        # one denies what the other states
        ("I deploy with Terraform", "I don't deploy with Terraform"),
        ("我用 Terraform 部署", "我不用 Terraform 部署"),
        # what is added outweighs what is shared, or there is too little to compare
        ("I deploy with Terraform", "I deploy with Terraform and Helm, and the DBs with Ansible"),
        ("Terraform", "I deploy with Terraform"),
    ],
)
def test_another_fact_is_no_repeat(proposal: str, card: str) -> None:
    assert repeat_between(proposal, [("summary", card)])[0] == ""


def test_a_line_a_merge_added_to_the_content_counts_as_the_cards() -> None:
    statements = [("summary", "Deploys infrastructure"), ("content", "I deploy with Terraform")]

    rule, why, _ = repeat_between("Deploys with Terraform", statements)

    assert (rule, why) == (Rule.NEAR_TEXT, "the same terms as the card's content")


# --- the services -----------------------------------------------------------------------------
@pytest.fixture
def alice(tenant) -> EndUser:
    return EndUserFactory(tenant=tenant, external_id="alice")


@pytest.fixture
def reviewer(db) -> Any:
    return StaffUserFactory(username="rita")


def test_approving_a_repeat_as_shown_is_refused_and_changes_nothing(
    tenant, alice, reviewer
) -> None:
    card = card_of(tenant, alice, "I deploy with Terraform")
    proposal = proposal_of(tenant, alice, "Deploys with Terraform")

    with pytest.raises(Conflict) as refused:
        promotion_approve(request=proposal, reviewer=reviewer)

    assert refused.value.code == ErrorCode.REPEATS_CARD
    assert card.memory_id in refused.value.message and "same terms" in refused.value.message
    proposal.refresh_from_db()
    assert proposal.status == ReviewStatus.PENDING and proposal.decided_by is None
    assert cards(tenant) == 1
    assert not AuditEvent.objects.filter(tenant=tenant, action=Action.APPROVE).exists()


def test_a_new_card_beside_the_repeated_one_needs_a_reason(tenant, alice, reviewer) -> None:
    card = card_of(tenant, alice, "I deploy with Terraform")
    proposal = proposal_of(tenant, alice, "I deploy with Terraform")

    with pytest.raises(Invalid) as no_reason:
        promotion_approve(request=proposal, reviewer=reviewer, as_new_card=True, reason=" ")
    assert no_reason.value.fields == {"reason": ["Required for a new card."]}
    assert cards(tenant) == 1

    approved = promotion_approve(
        request=proposal, reviewer=reviewer, as_new_card=True, reason="one card per project"
    )

    assert approved.result_ref != card.memory_id and cards(tenant) == 2
    event = AuditEvent.objects.get(tenant=tenant, action=Action.APPROVE)
    assert event.details["as_new_card"] is True
    assert [r["memory_id"] for r in event.details["repeats"]] == [card.memory_id]
    assert event.details["repeats"][0]["rule"] == Rule.SAME_TEXT
    assert event.reason == "one card per project"


def test_merging_into_the_repeated_card_makes_no_second_card_and_is_safe_to_repeat(
    tenant, alice, reviewer
) -> None:
    card = card_of(tenant, alice, "I deploy with Terraform")
    proposal = proposal_of(tenant, alice, "Deploys with Terraform")
    assert [r.memory_id for r in promotion_repeats(proposal, proposal.proposal)] == [card.memory_id]

    merged = promotion_merge(request=proposal, reviewer=reviewer, memory_id=card.memory_id)

    card.refresh_from_db()
    assert cards(tenant) == 1
    assert (merged.status, merged.result_ref) == (ReviewStatus.APPROVED, card.memory_id)
    assert card.version == 2 and card.summary == "I deploy with Terraform"
    assert card.source_refs["promotion_ids"] == [proposal.request_id]
    assert card.source_refs["stm_item_ids"] == ["stm_old", *proposal.evidence["stm_item_ids"]]
    assert card.source_refs["message_ids"] == ["m-old", *proposal.evidence["message_ids"]]
    event = AuditEvent.objects.get(tenant=tenant, action=Action.MERGE)
    assert event.object_id == card.memory_id
    assert event.details["repeat"]["rule"] == Rule.NEAR_TEXT
    # a second click, or a retried request, finds it decided and writes nothing
    with pytest.raises(Conflict) as again:
        promotion_merge(request=proposal, reviewer=reviewer, memory_id=card.memory_id)
    assert again.value.code == ErrorCode.ALREADY_DECIDED
    card.refresh_from_db()
    assert card.version == 2 and cards(tenant) == 1


def test_two_proposals_of_the_same_fact_end_in_one_card(tenant, alice, reviewer) -> None:
    first = proposal_of(tenant, alice, "I deploy with Terraform")
    second = proposal_of(tenant, alice, "I deploy everything with Terraform")
    assert promotion_repeats(second, second.proposal) == []  # nothing approved yet

    approved = promotion_approve(request=first, reviewer=reviewer)
    (repeat,) = promotion_repeats(second, second.proposal)
    assert repeat.memory_id == approved.result_ref
    with pytest.raises(Conflict):
        promotion_approve(request=second, reviewer=reviewer)
    promotion_merge(request=second, reviewer=reviewer, memory_id=repeat.memory_id)

    (card,) = LtmCard.objects.filter(tenant=tenant)
    assert card.version == 2
    assert card.source_refs["promotion_ids"] == [first.request_id, second.request_id]
    assert "I deploy everything with Terraform" in card.content


def test_other_users_and_other_tenants_cards_and_dead_cards_are_no_repeats(
    tenant, other_tenant, alice, reviewer
) -> None:
    bob = EndUserFactory(tenant=tenant, external_id="bob")
    stranger = EndUserFactory(tenant=other_tenant, external_id="alice")
    bobs = card_of(tenant, bob, "I deploy with Terraform")
    theirs = card_of(other_tenant, stranger, "I deploy with Terraform")
    archived = card_of(tenant, alice, "I deploy with Terraform")
    LtmCard.objects.filter(pk=archived.pk).update(status=LtmCard.Status.ARCHIVED)
    proposal = proposal_of(tenant, alice, "I deploy with Terraform")

    assert promotion_repeats(proposal, proposal.proposal) == []
    # nor can the proposal be merged into another user's or another tenant's card
    for card in (bobs, theirs):
        with pytest.raises(NotFound):
            promotion_merge(request=proposal, reviewer=reviewer, memory_id=card.memory_id)
    approved = promotion_approve(request=proposal, reviewer=reviewer)

    assert approved.result_ref not in (bobs.memory_id, theirs.memory_id, archived.memory_id)
    bobs.refresh_from_db()
    theirs.refresh_from_db()
    assert bobs.version == theirs.version == 1


def test_from_the_events_api_a_second_remember_request_is_offered_as_a_merge(
    tenant, owner, reviewer, django_capture_on_commit_callbacks
) -> None:
    # given: the fact remembered in one session, promoted and approved
    def remembered(session_id: str, message_id: str, text: str) -> PromotionRequest:
        with django_capture_on_commit_callbacks(execute=True):
            response = owner.post(
                reverse("transcripts:events", kwargs={"session_id": session_id}),
                {
                    "user_id": "alice",
                    "task_id": session_id,
                    "events": [{"id": message_id, "role": "user", "content": text}],
                },
                format="json",
            )
        assert response.status_code == 201, response.json()
        assert promotion_scan(tenant=tenant, owners=10_000).proposed == 1
        return PromotionRequest.objects.filter(tenant=tenant).latest("created_at")

    first = remembered("s-1", "m-1", "Please remember that I deploy with Terraform.")
    with django_capture_on_commit_callbacks(execute=True):
        approved = promotion_approve(request=first, reviewer=reviewer)

    # when: another task's session asks the same (another item: another task, another fingerprint)
    second = remembered("s-2", "m-2", "Don't forget: I deploy with Terraform.")

    # then: it is proposed, repeats the card, and merging it keeps one card
    assert second.proposal["summary"] == "I deploy with Terraform"
    (repeat,) = promotion_repeats(second, second.proposal)
    assert (repeat.memory_id, repeat.rule) == (approved.result_ref, Rule.SAME_TEXT)
    with django_capture_on_commit_callbacks(execute=True):
        promotion_merge(request=second, reviewer=reviewer, memory_id=repeat.memory_id)
    (card,) = LtmCard.objects.filter(tenant=tenant)
    assert card.summary == "I deploy with Terraform" and card.version == 2
    assert card.source_refs["message_ids"] == ["m-1", "m-2"]


# --- the review screen ------------------------------------------------------------------------
@pytest.fixture
def screen(db) -> dict[str, Any]:
    """A reviewer of `mine` with a card and a proposal repeating it; the same in `theirs`."""
    mine, theirs = TenantFactory(slug="mine"), TenantFactory(slug="theirs")
    rita = StaffUserFactory(username="rita")
    MembershipFactory(user=rita, tenant=mine, role=TenantMembership.Role.REVIEWER)
    tess = StaffUserFactory(username="tess")
    MembershipFactory(user=tess, tenant=theirs, role=TenantMembership.Role.REVIEWER)
    alice = EndUserFactory(tenant=mine, external_id="alice")
    bob = EndUserFactory(tenant=theirs, external_id="bob")
    client, stranger = Client(), Client()
    client.force_login(rita)
    stranger.force_login(tess)
    return {
        "client": client,
        "stranger": stranger,
        "mine": mine,
        "theirs": theirs,
        "card": card_of(mine, alice, "我用 Terraform 部署"),
        "promotion": proposal_of(mine, alice, "我用 Terraform 来部署"),
        "their_card": card_of(theirs, bob, "I deploy with Helm"),
    }


def test_the_review_page_offers_to_merge_into_the_repeated_card(screen) -> None:
    card, promotion = screen["card"], screen["promotion"]

    page = screen["client"].get(promotion_url(promotion)).content.decode()

    assert 'id="repeat-offer"' in page and "It repeats a live card of alice" in page
    assert f'name="_merge_into" value="{card.memory_id}"' in page
    assert "the card&#x27;s summary with 来 added (3 of 4 terms shared)" in page
    assert 'name="_approve_new"' in page
    assert f'<option value="{card.memory_id}" selected>' in page  # the merge picks it already
    assert page.index('name="_approve"') < page.index('id="repeat-offer"')


def test_a_proposal_repeating_nothing_shows_no_offer(screen) -> None:
    other = proposal_of(screen["mine"], screen["card"].end_user, "我用 Helm 部署")

    page = screen["client"].get(promotion_url(other)).content.decode()

    assert 'id="repeat-offer"' not in page and 'name="_approve_new"' not in page


def test_approve_as_shown_is_refused_and_the_offer_merges(screen) -> None:
    client, card, promotion, mine = (
        screen["client"],
        screen["card"],
        screen["promotion"],
        screen["mine"],
    )

    refused = client.post(promotion_url(promotion), {"_approve": "1"})

    assert refused.status_code == 200
    assert "Nothing was decided: This proposal repeats the live card" in refused.content.decode()
    assert cards(mine) == 1
    promotion.refresh_from_db()
    assert promotion.status == ReviewStatus.PENDING

    merged = client.post(promotion_url(promotion), {"_merge_into": card.memory_id}, follow=True)

    assert f"Merged {promotion.request_id} → {card.memory_id}" in merged.content.decode()
    card.refresh_from_db()
    promotion.refresh_from_db()
    assert cards(mine) == 1 and card.version == 2
    assert (promotion.status, promotion.result_ref) == (ReviewStatus.APPROVED, card.memory_id)
    assert card.source_refs["promotion_ids"] == [promotion.request_id]
    # the page shown again (a browser's back and resubmit) decides nothing twice
    again = client.post(promotion_url(promotion), {"_merge_into": card.memory_id})
    assert "was already approved" in again.content.decode()
    card.refresh_from_db()
    assert card.version == 2


def test_approve_as_a_new_card_needs_a_reason(screen) -> None:
    client, promotion, mine = screen["client"], screen["promotion"], screen["mine"]

    without = client.post(promotion_url(promotion), {"_approve_new": "1", "reason": ""})

    assert "Say why it should be a new card beside the one it repeats." in without.content.decode()
    assert cards(mine) == 1
    done = client.post(
        promotion_url(promotion),
        {"_approve_new": "1", "reason": "the wording matters here"},
        follow=True,
    )

    assert f"Approved as a new card {promotion.request_id}" in done.content.decode()
    assert cards(mine) == 2


def test_bulk_approve_leaves_a_repeat_for_the_reviewer(screen) -> None:
    promotion = screen["promotion"]

    response = screen["client"].post(
        reverse(QUEUE),
        {"action": "approve_selected", "_selected_action": [promotion.pk], "index": 0},
        follow=True,
    )

    page = response.content.decode()
    assert "Not approved:" in page and screen["card"].memory_id in page
    promotion.refresh_from_db()
    assert promotion.status == ReviewStatus.PENDING and cards(screen["mine"]) == 1


def test_a_reviewer_of_another_tenant_can_neither_see_nor_merge(screen) -> None:
    stranger, card, promotion = screen["stranger"], screen["card"], screen["promotion"]

    page = stranger.get(promotion_url(promotion))
    merge = stranger.post(promotion_url(promotion), {"_merge_into": card.memory_id})
    into_theirs = screen["client"].post(
        promotion_url(promotion), {"_merge_into": screen["their_card"].memory_id}
    )

    assert page.status_code == merge.status_code == 404
    assert card.memory_id not in page.content.decode()
    # nor can my reviewer fold my proposal into their card: it is no choice of the page
    assert into_theirs.status_code == 200
    assert "Select a valid choice" in into_theirs.content.decode()
    card.refresh_from_db()
    screen["their_card"].refresh_from_db()
    promotion.refresh_from_db()
    assert card.version == screen["their_card"].version == 1
    assert promotion.status == ReviewStatus.PENDING
