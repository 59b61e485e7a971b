from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.forms.models import model_to_dict
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memories.audit.models import AuditEvent
from memories.audit.services import Action, Actor, audit_record
from memories.ltm.models import LtmCard, LtmOutbox
from memories.ltm.services import CardInput, cards_import
from memories.policies.models import PromotionPolicy
from memories.review.deletion import deletion_request
from memories.review.models import DeletionRequest, PromotionRequest, ReviewStatus
from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection
from profiles.models import EndUser, Tenant, TenantMembership, UserPreference
from profiles.services.profile_versions import preference_set
from tests.factories import EndUserFactory, MembershipFactory, StaffUserFactory, TenantFactory
from transcripts.services import EventIn, Role, events_append

QUEUE = "admin:memories_promotionrequest_changelist"
DELETIONS = "admin:memories_deletionrequest_changelist"


def promotion_url(promotion: PromotionRequest) -> str:
    return reverse("admin:memories_promotionrequest_change", args=[promotion.pk])


def deletion_url(deletion: DeletionRequest) -> str:
    return reverse("admin:memories_deletionrequest_change", args=[deletion.pk])


def conversation(tenant: Tenant, end_user: EndUser, session_id: str) -> list[str]:
    """Five events of one session; returns their message ids."""
    lines = [
        (Role.USER, "Can you look at the flaky deploy job?"),
        (Role.ASSISTANT, "Sure. Do you want the full log or a summary?"),
        (Role.USER, "Please keep answers short, bullet points only."),
        (Role.ASSISTANT, "Understood: short bullet points from now on."),
        (Role.USER, "Thanks. Next, check the staging database."),
    ]
    events = [
        EventIn(role=role, content=text, message_id=f"{session_id}-m{n}")
        for n, (role, text) in enumerate(lines, start=1)
    ]
    events_append(tenant=tenant, session_id=session_id, user_id=end_user.external_id, events=events)
    return [e.message_id for e in events]


def evidence(session_id: str, message_ids: list[str], summary: str) -> dict[str, Any]:
    return {
        "stm_item_ids": [f"stm_{uuid.uuid4().hex[:12]}"],
        "message_ids": message_ids,
        "tool_call_ids": [],
        "sessions": [session_id],
        "triggers": {
            "hits": "written 3× and recalled 1× (≥ 3)",
            "stable_profile": "fills the structured key preference.answer_style",
        },
        "hits": 3,
        "recalls": 1,
        "age_hours": 30.5,
        "item": {
            "summary": summary,
            "memory_type": "preference",
            "subtype": "",
            "task_id": "",
            "canonical_fact_key": "preference.answer_style",
            "fact_value": "short bullet points",
            "version": 2,
        },
    }


def fact_proposal(
    tenant: Tenant,
    end_user: EndUser,
    *,
    value: Any = "short bullet points",
    key: str = "preference.answer_style",
    current: dict[str, Any] | None = None,
    message_ids: list[str] | None = None,
    session_id: str = "s-1",
) -> PromotionRequest:
    return PromotionRequest.objects.create(
        request_id=f"prm_{uuid.uuid4().hex[:20]}",
        tenant=tenant,
        end_user=end_user,
        path=PromotionRequest.Path.POSTGRES,
        memory_type="preference",
        proposal={"key": key, "value": value, "target": "preference"},
        evidence=evidence(session_id, message_ids or [], f"prefers {value}"),
        existing={"current": current},
        confidence=0.86,
        fingerprint=uuid.uuid4().hex,
    )


def card_proposal(
    tenant: Tenant, end_user: EndUser, *, similar: list[dict[str, Any]] | None = None
) -> PromotionRequest:
    summary = "The staging database is restored from the nightly snapshot at 02:00 UTC."
    return PromotionRequest.objects.create(
        request_id=f"prm_{uuid.uuid4().hex[:20]}",
        tenant=tenant,
        end_user=end_user,
        path=PromotionRequest.Path.LTM,
        memory_type="fact",
        proposal={
            "memory_type": LtmCard.Type.SEMANTIC_FACT,
            "title": "Staging database restore",
            "summary": summary,
            "content": "",
            "entities": ["staging", "database"],
            "tags": ["ops", "promoted"],
            "importance": 0.7,
            "confidence": 0.8,
        },
        evidence=evidence("s-1", [], summary),
        existing={"similar": similar or []},
        confidence=0.8,
        fingerprint=uuid.uuid4().hex,
    )


@pytest.fixture
def review(db: None) -> dict[str, Any]:
    """A reviewer of `mine`; an end user, a conversation and a proposal in each tenant."""
    mine, theirs = TenantFactory(slug="mine"), TenantFactory(slug="theirs")
    reviewer = StaffUserFactory(username="rita")
    MembershipFactory(user=reviewer, tenant=mine, role=TenantMembership.Role.REVIEWER)
    alice = EndUserFactory(tenant=mine, external_id="alice")
    bob = EndUserFactory(tenant=theirs, external_id="bob")
    ids = conversation(mine, alice, "s-1")
    conversation(theirs, bob, "s-1")
    client = Client()
    client.force_login(reviewer)
    return {
        "client": client,
        "reviewer": reviewer,
        "mine": mine,
        "theirs": theirs,
        "alice": alice,
        "bob": bob,
        "message_ids": ids,
        "my_promotion": fact_proposal(mine, alice, message_ids=[ids[2]]),
        "their_promotion": fact_proposal(theirs, bob, value="theirs-secret-value"),
    }


def statuses() -> dict[str, str]:
    return dict(PromotionRequest.objects.values_list("request_id", "status"))


# --- scoping ----------------------------------------------------------------------------------
def test_a_reviewer_sees_only_their_tenants_queue(review) -> None:
    page = review["client"].get(reverse(QUEUE)).content.decode()

    assert review["my_promotion"].request_id in page
    assert review["their_promotion"].request_id not in page
    assert "theirs-secret-value" not in page


def test_another_tenants_request_is_not_found(review) -> None:
    client, theirs = review["client"], review["their_promotion"]

    page = client.get(promotion_url(theirs))
    assert page.status_code == 404
    assert page["Content-Type"].startswith("text/html")  # an admin page, not the API's JSON
    assert "theirs-secret-value" not in page.content.decode()
    refused = client.post(promotion_url(theirs), {"_approve": "1"})
    rejected = client.post(promotion_url(theirs), {"_reject": "1", "reason": "not mine"})

    assert refused.status_code == 404 and rejected.status_code == 404
    theirs.refresh_from_db()
    assert theirs.status == ReviewStatus.PENDING and theirs.decided_by is None
    assert not UserPreference.objects.exists()


def test_a_tenant_admin_without_the_reviewer_role_sees_no_queue(review) -> None:
    admin_user = StaffUserFactory()
    MembershipFactory(user=admin_user, tenant=review["mine"])
    client = Client()
    client.force_login(admin_user)

    assert client.get(reverse(QUEUE)).status_code == 403
    assert client.get(promotion_url(review["my_promotion"])).status_code == 404


def test_bulk_actions_see_only_the_scoped_queryset(review) -> None:
    client, theirs = review["client"], review["their_promotion"]
    response = client.post(
        reverse(QUEUE),
        {"action": "approve_selected", "_selected_action": [theirs.pk], "index": 0},
    )

    assert response.status_code in (200, 302)
    theirs.refresh_from_db()
    assert theirs.status == ReviewStatus.PENDING
    assert not UserPreference.objects.exists()


# --- the queue ----------------------------------------------------------------------------------
def test_queue_filters_and_search(review) -> None:
    client, mine, alice = review["client"], review["mine"], review["alice"]
    card = card_proposal(mine, alice)
    old = fact_proposal(mine, alice, key="preference.language", value="en", message_ids=[])
    PromotionRequest.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=10), confidence=0.3
    )

    def listed(**params: str) -> set[str]:
        page = client.get(reverse(QUEUE), params).content.decode()
        rows = (review["my_promotion"], card, old)
        return {p.request_id for p in rows if p.request_id in page}

    assert listed(path="ltm") == {card.request_id}
    assert listed(memory_type="preference") == {review["my_promotion"].request_id, old.request_id}
    assert listed(confidence="low") == {old.request_id}
    assert listed(age="month") == {old.request_id}
    assert listed(age="day") == {review["my_promotion"].request_id, card.request_id}
    assert listed(status="pending") == {
        review["my_promotion"].request_id,
        card.request_id,
        old.request_id,
    }
    assert listed(q="nightly snapshot") == {card.request_id}
    assert listed(q="alice") == {review["my_promotion"].request_id, card.request_id, old.request_id}


# --- the detail page ----------------------------------------------------------------------------
def test_detail_page_shows_diff_evidence_and_transcript(review) -> None:
    client, mine, alice, ids = (
        review["client"],
        review["mine"],
        review["alice"],
        review["message_ids"],
    )
    promotion = fact_proposal(
        mine,
        alice,
        key="preference.verbosity",
        value="bullets",
        current={"value": "paragraphs", "version": 1, "source": "api"},
        message_ids=[ids[2]],
    )
    # the page compares with the key's value now, not the one noted when proposed
    preference_set(end_user=alice, key="preference.verbosity", value="paragraphs")

    page = client.get(promotion_url(promotion)).content.decode()

    assert "preference.verbosity = bullets" in page  # headline
    assert "fills the structured key preference.answer_style" in page  # trigger
    assert '<td class="left">paragraphs</td><td class="right">bullets</td>' in page
    assert 'class="diff-replace"' in page
    # the evidence event, highlighted, with its neighbours
    assert '<tr class="evidence">' in page
    assert "Please keep answers short, bullet points only." in page
    assert "Sure. Do you want the full log or a summary?" in page
    assert page.count('<tr class="evidence">') == 1
    for button in ("_approve", "_reject", "_retarget", "_retarget_ltm"):
        assert f'name="{button}"' in page
    assert 'name="_merge"' not in page and 'name="_approve_edited"' not in page
    # the buttons come before the evidence and the transcript
    assert page.index('name="_approve"') < page.index('id="evidence"')


def test_card_detail_page_shows_similar_cards_and_merge(review) -> None:
    client = review["client"]
    promotion = card_proposal(
        review["mine"],
        review["alice"],
        similar=[
            {
                "memory_id": "ltm_existing1",
                "title": "Staging database restore",
                "summary": "Staging is restored nightly.",
                "score": 0.91,
            }
        ],
    )

    page = client.get(promotion_url(promotion)).content.decode()

    assert "Similar existing cards" in page and "ltm_existing1" in page
    assert "Staging is restored nightly." in page
    assert 'name="_merge"' in page and '<option value="ltm_existing1">' in page
    assert "No transcript events are stored" in page


def test_approving_a_profile_fact_writes_the_preference_and_invalidates_the_profile_cache(
    review, django_capture_on_commit_callbacks
) -> None:
    client, promotion, reviewer = review["client"], review["my_promotion"], review["reviewer"]
    mine, alice = review["mine"], review["alice"]
    generation = keys.context_generation(mine.pk, alice.external_id)
    before = int(redis_connection().get(generation) or 0)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            promotion_url(promotion), {"_approve": "1", "reason": "stated twice"}
        )

    assert response.status_code == 302 and response.url.startswith(reverse(QUEUE))
    promotion.refresh_from_db()
    pref = UserPreference.objects.get(end_user=alice, key="preference.answer_style")
    assert pref.value == "short bullet points" and pref.is_current
    assert (promotion.status, promotion.decided_by, promotion.decision_reason) == (
        ReviewStatus.APPROVED,
        reviewer,
        "stated twice",
    )
    assert promotion.decided_at is not None and promotion.result_ref == f"preference:{pref.pk}"
    assert int(redis_connection().get(generation) or 0) > before
    assert AuditEvent.objects.filter(
        tenant=mine, action=Action.APPROVE, object_id=promotion.request_id, actor__contains="rita"
    ).exists()
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any(f"Approved {promotion.request_id}" in m for m in messages)


def test_approving_with_edits_applies_the_edited_value(review) -> None:
    client, promotion, alice = review["client"], review["my_promotion"], review["alice"]
    preference_set(end_user=alice, key="preference.answer_style", value="long prose")

    client.post(
        promotion_url(promotion),
        {"_approve_edited": "1", "value": "  terse bullet points ", "reason": "wording"},
    )

    pref = UserPreference.objects.get(
        end_user=alice, key="preference.answer_style", is_current=True
    )
    assert (pref.value, pref.version) == ("terse bullet points", 2)
    promotion.refresh_from_db()
    assert promotion.proposal["value"] == "terse bullet points"
    assert promotion.status == ReviewStatus.APPROVED


def test_an_approval_with_edits_keeps_the_proposal_as_proposed_and_shows_both(review) -> None:
    client, promotion, mine = review["client"], review["my_promotion"], review["mine"]

    client.post(
        promotion_url(promotion),
        {
            "_approve_edited": "1",
            "value": "terse points, refunds to 4111-1111-1111-1111 <b>",
            "reason": "wording",
        },
    )

    promotion.refresh_from_db()
    assert promotion.status == ReviewStatus.APPROVED
    assert promotion.proposal_as_proposed == {
        "key": "preference.answer_style",
        "value": "short bullet points",
        "target": "preference",
    }
    approved = "terse points, refunds to [REDACTED:bank_card] <b>"
    assert promotion.proposal["value"] == approved
    event = AuditEvent.objects.get(tenant=mine, action=Action.APPROVE)
    assert event.details["edited"] is True and event.details["edited_fields"] == ["value"]
    assert [(c.field, c.before, c.after) for c in event.changes.all()] == [
        ("value", "short bullet points", approved)
    ]

    page = client.get(promotion_url(promotion)).content.decode()
    edits = page[page.index('id="reviewer-edits"') :]
    edits = edits[: edits.index("</table>")]
    assert "As proposed" in edits and "As approved" in edits and "changed value" in edits
    assert 'class="diff-replace"' in edits and "short bullet points" in edits
    assert "[REDACTED:bank_card] &lt;b&gt;" in edits and "<b>" not in edits  # escaped
    assert "4111" not in page


def test_a_card_approved_as_proposed_keeps_no_second_copy(review) -> None:
    client, mine, alice = review["client"], review["mine"], review["alice"]
    promotion = card_proposal(mine, alice)

    client.post(promotion_url(promotion), {"_approve": "1", "reason": "as proposed"})

    promotion.refresh_from_db()
    assert promotion.status == ReviewStatus.APPROVED and promotion.proposal_as_proposed is None
    event = AuditEvent.objects.get(tenant=mine, action=Action.APPROVE)
    assert event.details["edited_fields"] == [] and not event.changes.exists()
    assert 'id="reviewer-edits"' not in client.get(promotion_url(promotion)).content.decode()


def test_an_invalid_edit_changes_nothing(review) -> None:
    client, mine, alice = review["client"], review["mine"], review["alice"]
    promotion = fact_proposal(mine, alice, key="preference.max_items", value=5)

    bad_json = client.post(promotion_url(promotion), {"_approve_edited": "1", "value": "five"})

    assert bad_json.status_code == 200
    assert "Enter the value as JSON" in bad_json.content.decode()
    promotion.refresh_from_db()
    assert promotion.status == ReviewStatus.PENDING
    assert not UserPreference.objects.exists()


def test_approving_a_card_creates_a_card_through_the_import_and_the_outbox(
    review, django_capture_on_commit_callbacks
) -> None:
    client, mine, alice = review["client"], review["mine"], review["alice"]
    promotion = card_proposal(mine, alice)

    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            promotion_url(promotion),
            {
                "_approve_edited": "1",
                "title": "Nightly staging restore",
                "summary": promotion.proposal["summary"],
                "content": "",
                "memory_type": LtmCard.Type.PROCEDURE,
                "entities": "staging, database",
                "tags": "ops, promoted, restore",
                "reason": "useful for on-call",
            },
        )

    promotion.refresh_from_db()
    card = LtmCard.objects.get(tenant=mine, memory_id=promotion.result_ref)
    assert (card.title, card.memory_type, card.tags) == (
        "Nightly staging restore",
        LtmCard.Type.PROCEDURE,
        ["ops", "promoted", "restore"],
    )
    assert card.source_type == LtmCard.SourceType.PROMOTED_FROM_STM
    assert card.source_refs["promotion_ids"] == [promotion.request_id]
    assert not LtmOutbox.objects.filter(card=card).exists()  # drained into both indexes


def test_merging_folds_the_proposal_into_an_existing_card(
    review, django_capture_on_commit_callbacks
) -> None:
    client, mine, alice = review["client"], review["mine"], review["alice"]
    with django_capture_on_commit_callbacks(execute=True):
        [(existing, _)] = cards_import(
            tenant=mine,
            cards=[
                CardInput(
                    memory_type=LtmCard.Type.SEMANTIC_FACT,
                    title="Staging database",
                    summary="Staging runs PostgreSQL 16.",
                    user_id=alice.external_id,
                )
            ],
        )
    promotion = card_proposal(
        mine,
        alice,
        similar=[
            {"memory_id": existing.memory_id, "title": "Staging", "summary": "", "score": 0.8}
        ],
    )

    with django_capture_on_commit_callbacks(execute=True):
        client.post(promotion_url(promotion), {"_merge": "1", "memory_id": existing.memory_id})

    existing.refresh_from_db()
    promotion.refresh_from_db()
    assert existing.version == 2 and "nightly snapshot" in existing.content
    assert (promotion.status, promotion.result_ref) == (ReviewStatus.APPROVED, existing.memory_id)
    assert promotion.decision_reason == f"merged into {existing.memory_id}"


def test_rejecting_needs_a_reason(review) -> None:
    client, promotion, reviewer = review["client"], review["my_promotion"], review["reviewer"]

    refused = client.post(promotion_url(promotion), {"_reject": "1", "reason": "  "})

    assert refused.status_code == 200
    assert "Say why the proposal is rejected." in refused.content.decode()
    promotion.refresh_from_db()
    assert promotion.status == ReviewStatus.PENDING and promotion.decided_by is None
    assert not AuditEvent.objects.filter(action=Action.REJECT).exists()

    done = client.post(promotion_url(promotion), {"_reject": "1", "reason": "a one-off remark"})

    assert done.status_code == 302
    promotion.refresh_from_db()
    assert (promotion.status, promotion.decided_by, promotion.decision_reason) == (
        ReviewStatus.REJECTED,
        reviewer,
        "a one-off remark",
    )
    assert promotion.decided_at is not None


def test_a_decided_request_cannot_be_decided_again(review) -> None:
    client, promotion = review["client"], review["my_promotion"]
    client.post(promotion_url(promotion), {"_reject": "1", "reason": "no"})

    page = client.get(promotion_url(promotion)).content.decode()
    again = client.post(promotion_url(promotion), {"_approve": "1"})

    assert 'name="_approve"' not in page and "cannot be decided again" in page
    assert "was already rejected" in again.content.decode()
    promotion.refresh_from_db()
    assert promotion.status == ReviewStatus.REJECTED
    assert not UserPreference.objects.exists()


# --- bulk actions -------------------------------------------------------------------------------
def test_bulk_approve(review) -> None:
    client, mine, alice = review["client"], review["mine"], review["alice"]
    second = fact_proposal(mine, alice, key="preference.language", value="en")

    response = client.post(
        reverse(QUEUE),
        {
            "action": "approve_selected",
            "_selected_action": [review["my_promotion"].pk, second.pk],
            "index": 0,
        },
        follow=True,
    )

    assert "Approved 2 promotion requests" in response.content.decode()
    values = dict(UserPreference.objects.filter(end_user=alice).values_list("key", "value"))
    assert values == {"preference.answer_style": "short bullet points", "preference.language": "en"}


def test_bulk_reject_asks_for_a_reason_on_a_confirmation_page(review) -> None:
    client, mine, alice, reviewer = (
        review["client"],
        review["mine"],
        review["alice"],
        review["reviewer"],
    )
    second = card_proposal(mine, alice)
    chosen = [review["my_promotion"].pk, second.pk]

    confirm = client.post(
        reverse(QUEUE), {"action": "reject_selected", "_selected_action": chosen, "index": 0}
    )
    page = confirm.content.decode()
    assert confirm.status_code == 200 and "Reject these promotion requests?" in page
    assert second.request_id in page and 'name="post"' in page
    assert statuses()[second.request_id] == ReviewStatus.PENDING

    without_reason = client.post(
        reverse(QUEUE),
        {"action": "reject_selected", "_selected_action": chosen, "post": "yes", "reason": ""},
    )
    assert without_reason.status_code == 200 and "This field is required." in (
        without_reason.content.decode()
    )
    assert statuses()[second.request_id] == ReviewStatus.PENDING

    done = client.post(
        reverse(QUEUE),
        {
            "action": "reject_selected",
            "_selected_action": chosen,
            "post": "yes",
            "reason": "duplicates of the profile",
        },
        follow=True,
    )

    assert "Rejected 2 promotion requests" in done.content.decode()
    rows = PromotionRequest.objects.filter(pk__in=chosen)
    assert {(r.status, r.decided_by, r.decision_reason) for r in rows} == {
        (ReviewStatus.REJECTED, reviewer, "duplicates of the profile")
    }
    assert statuses()[review["their_promotion"].request_id] == ReviewStatus.PENDING


# --- deletion requests --------------------------------------------------------------------------
@pytest.fixture
def deletions(review) -> dict[str, Any]:
    mine, theirs = review["mine"], review["theirs"]
    mine_pref = preference_set(end_user=review["alice"], key="preference.color", value="teal")
    their_pref = preference_set(end_user=review["bob"], key="preference.color", value="red")
    actor = Actor.job("test")
    mine_del, _ = deletion_request(
        tenant=mine, kind="preference", target=f"pref_{mine_pref.pk}", actor=actor, reason="asked"
    )
    their_del, _ = deletion_request(
        tenant=theirs, kind="preference", target=f"pref_{their_pref.pk}", actor=actor
    )
    return {**review, "mine_pref": mine_pref, "mine_del": mine_del, "their_del": their_del}


def test_the_deletion_queue_is_scoped_and_read_only(deletions) -> None:
    client = deletions["client"]

    page = client.get(reverse(DELETIONS)).content.decode()
    detail = client.get(deletion_url(deletions["mine_del"])).content.decode()

    assert deletions["mine_del"].request_id in page
    assert deletions["their_del"].request_id not in page
    assert client.get(deletion_url(deletions["their_del"])).status_code == 404
    assert 'name="_approve"' in detail and 'name="_reject"' in detail
    assert 'name="target"' not in detail  # every field is read-only
    assert "Receipt" in detail or "receipt" in detail


def test_the_deletion_review_lists_what_the_erasure_removes(deletions) -> None:
    client, mine = deletions["client"], deletions["mine"]
    cards_import(
        tenant=mine,
        cards=[
            CardInput(memory_type=LtmCard.Type.SEMANTIC_FACT, summary=text, user_id="alice")
            for text in ("Alice deploys on Fridays.", "Alice reads the runbook first.")
        ],
    )
    user_del, _ = deletion_request(
        tenant=mine, kind="user", target="alice", actor=Actor.job("test"), reason="asked"
    )

    detail = client.get(deletion_url(user_del)).content.decode()
    inventory = detail[detail.index('id="erasure-inventory"') :]
    inventory = inventory[: inventory.index("</table>")]
    row = r'<tr><th scope="row">(.*?)</th><td>(.*?)</td><td>(.*?)</td></tr>'
    rows = set(re.findall(row, inventory))
    assert ("postgres", "end users", "1") in rows
    assert ("postgres", "user preferences", "1") in rows
    assert ("cards", "long-term cards (Elasticsearch, Milvus)", "2") in rows
    assert ("transcripts", "transcript sessions", "1") in rows  # the conversation of s-1
    assert any(store == "history" for store, _, _ in rows)
    assert any(store == "short_term" for store, _, _ in rows)
    assert DeletionRequest.objects.get(pk=user_del.pk).progress == {}  # nothing noted yet

    fact_detail = client.get(deletion_url(deletions["mine_del"])).content.decode()
    assert "preference versions of preference.color" in fact_detail


def test_approving_a_deletion_erases_and_keeps_the_receipt(
    deletions, django_capture_on_commit_callbacks
) -> None:
    client, deletion, reviewer = deletions["client"], deletions["mine_del"], deletions["reviewer"]

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(deletion_url(deletion), {"_approve": "1", "reason": "user asked"})

    assert response.status_code == 302
    deletion.refresh_from_db()
    assert (deletion.status, deletion.decided_by, deletion.decision_reason) == (
        DeletionRequest.Status.DONE,
        reviewer,
        "user asked",
    )
    assert deletion.receipt and len(deletion.receipt_sha256) == 64
    assert not UserPreference.objects.filter(pk=deletions["mine_pref"].pk).exists()
    detail = client.get(deletion_url(deletion)).content.decode()
    assert deletion.receipt_sha256 in detail and 'name="_approve"' not in detail


def test_erasing_a_preference_removes_the_values_the_audit_kept_of_it(
    deletions, django_capture_on_commit_callbacks
) -> None:
    from memories.audit.models import AuditChange
    from memories.audit.services import audit_verify
    from profiles.services.profile_patch import ProfilePatch, profile_update

    client, mine, alice = deletions["client"], deletions["mine"], deletions["alice"]
    for value in ("navy", "olive"):
        profile_update(
            tenant=mine,
            external_id="alice",
            patch=ProfilePatch(preferences=[{"key": "preference.shade", "value": value}]),
        )
    kept = AuditChange.objects.filter(end_user=alice, field="preferences.preference.shade")
    assert kept.count() == 2
    pref = UserPreference.objects.get(end_user=alice, key="preference.shade", is_current=True)
    deletion, _ = deletion_request(
        tenant=mine, kind="preference", target=f"pref_{pref.pk}", actor=Actor.job("test")
    )
    detail = client.get(deletion_url(deletion)).content.decode()
    assert "audit changes&#x27; values" in detail or "audit changes' values" in detail

    with django_capture_on_commit_callbacks(execute=True):
        client.post(deletion_url(deletion), {"_approve": "1", "reason": "user asked"})

    deletion.refresh_from_db()
    assert deletion.status == DeletionRequest.Status.DONE
    assert deletion.receipt["stores"]["postgres"]["audit_values"] == 2
    assert not kept.exists()
    assert audit_verify(tenant=mine).ok
    event = AuditEvent.objects.filter(tenant=mine, object_type="profile").first()
    page = client.get(reverse("admin:memories_auditevent_change", args=[event.pk]))
    assert "values erased with what they were of" in page.content.decode()


def test_rejecting_a_deletion_needs_a_reason(deletions) -> None:
    client, deletion = deletions["client"], deletions["mine_del"]

    refused = client.post(deletion_url(deletion), {"_reject": "1", "reason": ""}, follow=True)
    deletion.refresh_from_db()
    assert deletion.status == DeletionRequest.Status.PENDING
    assert "Say why the deletion is rejected." in refused.content.decode()

    client.post(deletion_url(deletion), {"_reject": "1", "reason": "needed for billing"})

    deletion.refresh_from_db()
    assert (deletion.status, deletion.decision_reason) == (
        DeletionRequest.Status.REJECTED,
        "needed for billing",
    )
    assert UserPreference.objects.filter(pk=deletions["mine_pref"].pk).exists()


def test_another_tenants_deletion_cannot_be_approved(deletions) -> None:
    client, theirs = deletions["client"], deletions["their_del"]

    response = client.post(deletion_url(theirs), {"_approve": "1"})

    assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.status == DeletionRequest.Status.PENDING


# --- audit trail --------------------------------------------------------------------------------
@pytest.fixture
def superuser_client(db: None) -> Client:
    user = StaffUserFactory(is_superuser=True)
    client = Client()
    client.force_login(user)
    return client


def test_the_audit_trail_is_read_only_even_for_a_superuser(superuser_client) -> None:
    tenant = TenantFactory()
    event = audit_record(
        tenant=tenant,
        action=Action.CREATE,
        actor=Actor.job("test"),
        object_type="ltm_card",
        object_id="ltm_1",
        after={"title": "x"},
    )
    change = reverse("admin:memories_auditevent_change", args=[event.pk])

    page = superuser_client.get(change)
    posted = superuser_client.post(change, {"action": "tampered", "reason": "x"})
    deleted = superuser_client.post(
        reverse("admin:memories_auditevent_delete", args=[event.pk]), {"post": "yes"}
    )
    added = superuser_client.get(reverse("admin:memories_auditevent_add"))
    listing = superuser_client.get(reverse("admin:memories_auditevent_changelist")).content

    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert posted.status_code == 403 and deleted.status_code == 403 and added.status_code == 403
    assert b"delete_selected" not in listing
    event.refresh_from_db()
    assert event.action == Action.CREATE


def test_the_audit_verify_action_reports_each_tenant(review) -> None:
    client, mine = review["client"], review["mine"]
    for n in range(3):
        audit_record(
            tenant=mine,
            action=Action.CREATE,
            actor=Actor.job("test"),
            object_type="ltm_card",
            object_id=f"ltm_{n}",
        )
    audit_record(
        tenant=review["theirs"],
        action=Action.CREATE,
        actor=Actor.job("test"),
        object_type="ltm_card",
        object_id="theirs",
    )
    listing = reverse("admin:memories_auditevent_changelist")
    theirs_events = list(
        AuditEvent.objects.filter(tenant=review["theirs"]).values_list("pk", flat=True)
    )
    selected = [
        *AuditEvent.objects.filter(tenant=mine).values_list("pk", flat=True)[:1],
        *theirs_events,
    ]

    response = client.post(
        listing,
        {"action": "verify_chain", "_selected_action": selected, "index": 0},
        follow=True,
    )
    page = response.content.decode()

    assert "Audit chain of mine verifies: 3 events." in page
    assert "Audit chain of theirs" not in page
    button = client.post(reverse("admin:memories_auditevent_verify"), follow=True).content.decode()
    assert "Audit chain of mine verifies: 3 events." in button
    assert client.get(reverse("admin:memories_auditevent_verify")).status_code == 405


def test_audit_verify_reports_a_broken_chain(superuser_client) -> None:
    tenant = TenantFactory(slug="broken")
    first = audit_record(
        tenant=tenant, action=Action.CREATE, actor=Actor.job("t"), object_type="x", object_id="1"
    )
    audit_record(
        tenant=tenant, action=Action.CREATE, actor=Actor.job("t"), object_type="x", object_id="2"
    )
    # The trigger refuses edits, so break the chain with an appended event that skips a number.
    AuditEvent.objects.create(
        tenant=tenant,
        seq=4,
        action="forged",
        actor_type=AuditEvent.ActorType.JOB,
        actor="job:forger",
        object_type="x",
        object_id="3",
        created_at=timezone.now(),
        prev_sha256=first.sha256,
        sha256="0" * 64,
    )

    response = superuser_client.post(
        reverse("admin:memories_auditevent_changelist"),
        {"action": "verify_chain", "_selected_action": [first.pk], "index": 0},
        follow=True,
    )

    assert "Audit chain of broken is broken at event #4" in response.content.decode()


# --- promotion policy -----------------------------------------------------------------------------
def test_tenant_admins_edit_their_promotion_policy(db: None) -> None:
    mine, theirs = TenantFactory(), TenantFactory()
    admin_user = StaffUserFactory()
    MembershipFactory(user=admin_user, tenant=mine)
    client = Client()
    client.force_login(admin_user)
    # every field at its default, so the form keeps up with new thresholds
    form = model_to_dict(PromotionPolicy(), exclude=["id", "tenant", "updated_at"])
    form["min_hits"] = 4

    ok = client.post(reverse("admin:memories_promotionpolicy_add"), {"tenant": mine.pk, **form})
    foreign = client.post(
        reverse("admin:memories_promotionpolicy_add"), {"tenant": theirs.pk, **form}
    )

    assert ok.status_code == 302 and "Select a valid choice" in foreign.content.decode()
    assert list(PromotionPolicy.objects.values_list("tenant_id", "min_hits")) == [(mine.pk, 4)]
