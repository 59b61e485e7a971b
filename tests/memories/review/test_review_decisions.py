"""The one decision form, retargeting, the queue's default filter and counts, the index badges,
the deletion receipt, the end-user memory page and the audit trail's columns."""

from __future__ import annotations

import json

from django.urls import reverse

from memories.audit.models import AuditEvent
from memories.audit.services import Action, Actor
from memories.review.deletion import deletion_approve, deletion_request
from memories.review.models import DeletionRequest, PromotionRequest, ReviewStatus
from memories.stm.selectors import stm_items_for
from memories.write.candidates import Candidate
from memories.write.services import Outcome, proposals_submit
from profiles.models import UserPreference
from profiles.services.profile_versions import preference_set
from tests.memories.review import test_review_admin
from tests.memories.review.test_review_admin import (
    QUEUE,
    card_proposal,
    fact_proposal,
    promotion_url,
)
from transcripts.models import Session
from transcripts.selectors import events_after

review = test_review_admin.review  # the same fixture: a reviewer of one of two tenants


def test_approve_applies_the_edits_shown(review) -> None:
    client, mine, alice = review["client"], review["mine"], review["alice"]
    promotion = card_proposal(mine, alice)

    response = client.post(
        promotion_url(promotion),
        {
            "_approve": "1",
            "shown": "",
            "title": "Nightly staging restore",
            "summary": "Staging is restored from the 02:00 UTC snapshot.",
            "content": "",
            "memory_type": promotion.proposal["memory_type"],
            "entities": "staging, database",
            "tags": "ops, promoted",
            "reason": "",
        },
    )

    assert response.status_code == 302
    promotion.refresh_from_db()
    assert promotion.status == ReviewStatus.APPROVED
    assert promotion.proposal["title"] == "Nightly staging restore"
    assert promotion.proposal["summary"] == "Staging is restored from the 02:00 UTC snapshot."
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("Approved with edits" in m and "summary, title as edited" in m for m in messages)


def test_a_decision_on_a_proposal_changed_meanwhile_is_refused(review) -> None:
    client, promotion = review["client"], review["my_promotion"]
    page = client.get(promotion_url(promotion))
    shown = page.context["form"]["shown"].value()
    PromotionRequest.objects.filter(pk=promotion.pk).update(
        proposal={**promotion.proposal, "value": "long prose"}
    )

    refused = client.post(promotion_url(promotion), {"_approve": "1", "shown": shown})

    assert refused.status_code == 200
    assert "This proposal changed since the page was opened" in refused.content.decode()
    promotion.refresh_from_db()
    assert promotion.status == ReviewStatus.PENDING and not UserPreference.objects.exists()


def test_retargeting_refuses_while_the_edits_differ(review) -> None:
    client, promotion = review["client"], review["my_promotion"]

    refused = client.post(
        promotion_url(promotion), {"_retarget_ltm": "1", "value": "something else"}
    )

    assert refused.status_code == 200
    assert "You changed value: retargeting starts again" in refused.content.decode()
    promotion.refresh_from_db()
    assert promotion.path == PromotionRequest.Path.POSTGRES
    assert not AuditEvent.objects.filter(action=Action.RETARGET).exists()


def test_retarget_fact_to_card_and_back_shows_the_current_value_of_the_chosen_key(review) -> None:
    client, alice, reviewer = review["client"], review["alice"], review["reviewer"]
    promotion = review["my_promotion"]
    preference_set(end_user=alice, key="preference.format", value="numbered lists")

    to_card = client.post(promotion_url(promotion), {"_retarget_ltm": "1"})

    assert to_card.status_code == 302 and to_card.url == promotion_url(promotion)
    promotion.refresh_from_db()
    assert promotion.path == PromotionRequest.Path.LTM
    assert promotion.status == ReviewStatus.PENDING
    assert promotion.proposal["summary"] == "prefers short bullet points"
    page_card = client.get(promotion_url(promotion)).content.decode()
    assert 'name="_merge"' in page_card and "Similar existing cards" in page_card
    assert '<option value="preference.format">' in page_card  # keys in use are offered

    to_fact = client.post(
        promotion_url(promotion),
        {"_retarget": "1", "retarget_key": "preference.format", "retarget_value": "bullets"},
    )

    assert to_fact.status_code == 302
    promotion.refresh_from_db()
    assert (promotion.path, promotion.proposal) == (
        PromotionRequest.Path.POSTGRES,
        {"key": "preference.format", "value": "bullets", "target": "preference"},
    )
    page_fact = client.get(promotion_url(promotion)).content.decode()
    assert '<td class="left">numbered lists</td><td class="right">bullets</td>' in page_fact
    events = AuditEvent.objects.filter(action=Action.RETARGET).order_by("seq")
    assert [(e.details["from"], e.details["to"]) for e in events] == [
        ("postgres", "ltm"),
        ("ltm", "postgres"),
    ]
    assert all(e.actor == f"staff:{reviewer.pk}:rita" for e in events)

    client.post(promotion_url(promotion), {"_approve": "1"})
    current = UserPreference.objects.get(end_user=alice, key="preference.format", is_current=True)
    assert current.value == "bullets"


def test_retarget_to_a_fact_needs_a_valid_domain_key(review) -> None:
    client, mine, alice = review["client"], review["mine"], review["alice"]
    promotion = card_proposal(mine, alice)

    missing = client.post(promotion_url(promotion), {"_retarget": "1", "retarget_key": ""})
    invented = client.post(
        promotion_url(promotion), {"_retarget": "1", "retarget_key": "nonsense.key"}
    )

    assert "Pick the domain key to promote to." in missing.content.decode()
    assert "Select a valid choice" in invented.content.decode()
    promotion.refresh_from_db()
    assert promotion.path == PromotionRequest.Path.LTM


def test_the_queue_opens_on_pending_with_counts_per_status(review) -> None:
    client, mine, alice = review["client"], review["mine"], review["alice"]
    decided = fact_proposal(mine, alice, key="preference.language", value="en")
    PromotionRequest.objects.filter(pk=decided.pk).update(status=ReviewStatus.REJECTED)

    page = client.get(reverse(QUEUE)).content.decode()
    everything = client.get(reverse(QUEUE), {"status": "all"}).content.decode()

    assert review["my_promotion"].request_id in page and decided.request_id not in page
    assert "Pending review (1)" in page and "Rejected (1)" in page and "All (2)" in page
    assert decided.request_id in everything
    assert review["their_promotion"].request_id not in everything


def test_the_admin_index_shows_pending_badges(review) -> None:
    client, mine, alice = review["client"], review["mine"], review["alice"]
    fact_proposal(mine, alice, key="preference.language", value="en")

    page = client.get(reverse("admin:index")).content.decode()

    assert 'class="pending-badge" title="2 pending">2 pending</a>' in page  # promotions
    assert 'class="pending-badge none" title="0 pending">0 pending</a>' in page  # deletions


def test_the_deletion_receipt_is_a_table_per_store_with_a_json_download(
    review, django_capture_on_commit_callbacks
) -> None:
    client, mine, alice, reviewer = (
        review["client"],
        review["mine"],
        review["alice"],
        review["reviewer"],
    )
    color = preference_set(end_user=alice, key="preference.color", value="teal")
    deletion, _ = deletion_request(
        tenant=mine,
        kind=DeletionRequest.Kind.PREFERENCE,
        target=f"pref_{color.pk}",
        actor=Actor.job("test"),
    )
    with django_capture_on_commit_callbacks(execute=True):
        deletion_approve(request=deletion, reviewer=reviewer)
    deletion.refresh_from_db()
    assert deletion.status == DeletionRequest.Status.DONE

    url = reverse("admin:memories_deletionrequest_change", args=[deletion.pk])
    page = client.get(url).content.decode()
    download = client.get(reverse("admin:memories_deletionrequest_receipt", args=[deletion.pk]))

    assert "✓ Verified erased" in page and 'class="receipt-table"' in page
    assert '<th scope="row">postgres</th>' in page and "id: postgres rows: 0" in page
    assert download["Content-Disposition"].startswith("attachment;")
    assert download["X-Receipt-SHA256"] == deletion.receipt_sha256
    assert json.loads(download.content) == deletion.receipt
    # erasing one preference leaves the user's conversations alone
    assert deletion.receipt["stores"]["transcripts"]["events"] == 0
    session = Session.objects.get(tenant=mine, external_id="s-1")
    assert (
        session.end_user == alice
        and len(events_after(session=session, after=0, limit=10).events) == 5
    )


def test_the_audit_trail_puts_time_and_actor_before_long_object_ids(review) -> None:
    client, mine, alice = review["client"], review["mine"], review["alice"]
    ids = ",".join(f"stm_{n:012d}" for n in range(10))
    from memories.audit.services import audit_record

    audit_record(
        tenant=mine,
        action=Action.CREATE,
        actor=Actor.job("extraction"),
        object_type="stm_item",
        object_id=ids,
        end_user_pk=alice.pk,
    )

    page = client.get(reverse("admin:memories_auditevent_changelist")).content.decode()

    assert "stm_000000000000 +9 more" in page
    assert page.index("column-actor") < page.index("column-object_short")


def test_the_end_user_page_shows_memory_and_deletes_a_short_term_item(
    review, django_capture_on_commit_callbacks
) -> None:
    client, mine, alice, reviewer = (
        review["client"],
        review["mine"],
        review["alice"],
        review["reviewer"],
    )
    from profiles.models import TenantMembership
    from tests.factories import MembershipFactory

    MembershipFactory(user=reviewer, tenant=mine, role=TenantMembership.Role.TENANT_ADMIN)
    preference_set(end_user=alice, key="preference.tone", value="formal")
    preference_set(end_user=alice, key="preference.tone", value="casual")
    [written] = proposals_submit(
        tenant=mine,
        candidates=[
            Candidate(
                user_id="alice",
                session_id="s-1",
                memory_type="decision",
                subtype="decision",
                summary="Raise order-exec pool from 200 to 400 threads",
                verified=True,
            )
        ],
    )
    assert written.outcome == Outcome.INSERTED
    [item] = stm_items_for(tenant=mine, user_id="alice").items
    url = reverse("admin:profiles_enduser_change", args=[alice.pk])

    page = client.get(url).content.decode()

    assert "Preferences, with history" in page and "v1" in page and "casual" in page
    assert "Raise order-exec pool from 200 to 400 threads" in page
    assert review["my_promotion"].request_id in page  # pending proposals
    assert reverse("admin:profiles_enduser_export", args=[alice.pk]) in page
    export = client.get(reverse("admin:profiles_enduser_export", args=[alice.pk]))
    assert export["Content-Disposition"].startswith("attachment;")
    assert json.loads(export.content)["user_id"] == "alice"

    deleted = client.post(reverse("admin:profiles_enduser_stm_delete", args=[alice.pk, item.id]))

    assert deleted.status_code == 302
    assert stm_items_for(tenant=mine, user_id="alice").items == []
    event = AuditEvent.objects.filter(action=Action.DELETE, object_id=item.id).get()
    assert event.actor == f"staff:{reviewer.pk}:rita"
