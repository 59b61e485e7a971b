"""Promotion: triggers, proposals with evidence, reviewers' decisions and their effects."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from django.urls import reverse

from memories.audit.services import audit_verify
from memories.ltm.models import LtmCard
from memories.ltm.selectors import ltm_search
from memories.ltm.services import CardInput, cards_import, outbox_drain
from memories.policies.models import PromotionPolicy
from memories.review.models import PromotionRequest
from memories.review.promotion import promotion_approve, promotion_merge, promotion_reject
from memories.review.promotion_scan import Trigger, promotion_scan, promotion_triggers
from memories.stm.items import StmItem
from memories.stm.store import stm_store
from memoryproject.errors import Conflict, Invalid
from profiles.models import UserPreference
from tests.factories import EndUserFactory, StaffUserFactory

HOUR = 3600.0
NOW = time.time()


def item(end_user, **fields) -> StmItem:
    """A live short-term item two days old that fires no trigger unless told to."""
    values = {
        "id": f"stm_{end_user.pk}_{fields.get('fingerprint', 'fp0')}",
        "tenant_id": end_user.tenant_id,
        "end_user_id": end_user.pk,
        "user_id": end_user.external_id,
        "session_id": "s_1",
        "memory_type": "fact",
        "summary": "Orders service timeouts with a healthy database were thread-pool saturation",
        "fingerprint": "fp0",
        "fingerprints": [fields.get("fingerprint", "fp0")],
        "sessions": ["s_1"],
        "confidence": 0.9,
        "importance": 0.7,
        "created_at": NOW - 48 * HOUR,
        "updated_at": NOW - HOUR,
        "last_access_at": NOW - HOUR,
        "expires_at": NOW + 24 * HOUR,
        "hit_count": 1,
        "source": {"kind": "user", "message_ids": ["m_1"], "tool_call_ids": []},
    }
    values.update(fields)
    return StmItem(**values)


POLICY = PromotionPolicy(min_hits=3, min_sessions=2, min_age_hours=24, min_confidence=0.6)


@pytest.fixture
def end_user(tenant):
    return EndUserFactory(tenant=tenant, external_id="u_42")


@pytest.fixture
def reviewer(db):
    return StaffUserFactory()


# --- triggers ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "trigger", "path"),
    [
        ({"hit_count": 2, "recall_count": 1}, Trigger.HITS, "ltm"),
        ({"sessions": ["s_1", "s_2"]}, Trigger.CROSS_SESSION, "ltm"),
        ({"remember": True, "created_at": NOW - 60}, Trigger.REMEMBER, "ltm"),
        (
            {"canonical_fact_key": "preference.answer_style", "fact_value": "brief_first"},
            Trigger.STABLE_PROFILE,
            "postgres",
        ),
        ({"memory_type": "preference", "summary": "Prefers answers in Chinese"}, None, "ltm"),
    ],
)
def test_each_trigger_fires(end_user, fields, trigger, path) -> None:
    check = promotion_triggers(item(end_user, **fields), policy=POLICY, now=NOW)

    assert check.propose, check.blocked
    assert check.path == path
    assert (trigger or Trigger.STABLE_PROFILE) in check.triggers


@pytest.mark.parametrize(
    ("fields", "blocked"),
    [
        ({}, "no trigger fired"),
        ({"hit_count": 2}, "no trigger fired"),  # one hit short
        # Task-local state, however often it was seen:
        (
            {
                "hit_count": 9,
                "sessions": ["s_1", "s_2"],
                "task_id": "bug456",
                "summary": "bug456: next step check the thread pool",
            },
            "next step",
        ),
        ({"hit_count": 9, "task_id": "bug456", "entities": ["bug456"]}, "task bug456"),
        ({"hit_count": 9, "memory_type": "hypothesis"}, "hypothesis"),
        ({"hit_count": 9, "memory_type": "observation", "subtype": "tool_result"}, "observation"),
        ({"hit_count": 9, "subtype": "exclusion"}, "exclusion"),
        ({"hit_count": 9, "summary": "下一步先看线程池"}, "next step"),
        # Gates:
        ({"hit_count": 9, "created_at": NOW - HOUR}, "alive 1.0 h"),
        ({"hit_count": 9, "confidence": 0.4}, "confidence"),
        ({"hit_count": 9, "expires_at": NOW - 1}, "no longer active"),
    ],
)
def test_non_triggers_and_task_local_state_are_never_proposed(end_user, fields, blocked) -> None:
    check = promotion_triggers(item(end_user, **fields), policy=POLICY, now=NOW)

    assert not check.propose
    assert blocked in check.blocked


def test_thresholds_are_the_tenants_policy(end_user) -> None:
    seen_twice = item(end_user, hit_count=2)
    lenient = replace_policy(min_hits=2)

    assert not promotion_triggers(seen_twice, policy=POLICY, now=NOW).propose
    assert promotion_triggers(seen_twice, policy=lenient, now=NOW).propose


def replace_policy(**fields) -> PromotionPolicy:
    values = {f: getattr(POLICY, f) for f in ("min_hits", "min_sessions", "min_age_hours")}
    return PromotionPolicy(**{**values, "min_confidence": 0.6, **fields})


# --- the scan ------------------------------------------------------------------------------
def scan(tenant, now: float = NOW) -> int:
    return promotion_scan(tenant=tenant, now=now, owners=10_000).proposed


def test_scan_proposes_with_evidence_and_existing_value(tenant, end_user) -> None:
    UserPreference.objects.create(
        tenant=tenant, end_user=end_user, key="preference.answer_style", value="detailed"
    )
    keyed = item(
        end_user,
        fingerprint="fpA",
        canonical_fact_key="preference.answer_style",
        fact_value="brief_first",
        summary="Prefers the conclusion first, details after",
        source={"kind": "user", "message_ids": ["m_7", "m_9"], "tool_call_ids": []},
    )
    general = item(end_user, fingerprint="fpB", hit_count=4)
    local = item(end_user, fingerprint="fpC", hit_count=4, memory_type="hypothesis")
    stm_store().upsert(items=[keyed, general, local], now=NOW)

    assert scan(tenant) == 2

    fact_request = PromotionRequest.objects.get(tenant=tenant, path="postgres")
    assert fact_request.proposal == {
        "key": "preference.answer_style",
        "value": "brief_first",
        "target": "preference",
    }
    assert fact_request.existing["current"]["value"] == "detailed"
    assert fact_request.evidence["message_ids"] == ["m_7", "m_9"]
    assert fact_request.evidence["stm_item_ids"] == [keyed.id]
    assert Trigger.STABLE_PROFILE in fact_request.evidence["triggers"]
    card_request = PromotionRequest.objects.get(tenant=tenant, path="ltm")
    assert card_request.proposal["summary"] == general.summary
    assert "similar" in card_request.existing
    # A second scan proposes nothing new while the proposals are pending.
    assert scan(tenant) == 0
    assert audit_verify(tenant=tenant).events == 2


def test_rejection_suppresses_reproposal_until_new_evidence(tenant, end_user, reviewer) -> None:
    general = item(end_user, fingerprint="fpR", hit_count=4)
    stm_store().upsert(items=[general], now=NOW)
    assert scan(tenant) == 1
    promotion_reject(
        request=PromotionRequest.objects.get(tenant=tenant),
        reviewer=reviewer,
        reason="too specific to one incident",
    )

    assert scan(tenant) == 0  # same evidence: stays rejected

    # The same fact is seen again, in a new session, with a new message.
    stm_store().delete(owner=general.owner, item_id=general.id)
    again = replace(
        general,
        sessions=["s_1", "s_9"],
        source={"kind": "user", "message_ids": ["m_1", "m_20"], "tool_call_ids": []},
    )
    stm_store().upsert(items=[again], now=NOW)
    assert scan(tenant) == 1
    assert PromotionRequest.objects.filter(tenant=tenant, status="pending").count() == 1


# --- decisions -----------------------------------------------------------------------------
def test_profile_fact_approval_changes_the_profile_block_of_recall(
    tenant, end_user, reviewer, owner, django_capture_on_commit_callbacks
) -> None:
    keyed = item(
        end_user,
        fingerprint="fpA",
        canonical_fact_key="preference.answer_style",
        fact_value="brief_first",
        summary="Prefers the conclusion first",
    )
    stm_store().upsert(items=[keyed], now=NOW)
    scan(tenant)
    recall = {"user_id": "u_42", "session_id": "s_1", "query": "how should I answer?"}
    before = owner.post(reverse("memories:recall"), recall, format="json").json()
    assert "brief_first" not in str(before["profile_block"])

    with django_capture_on_commit_callbacks(execute=True):
        approved = promotion_approve(
            request=PromotionRequest.objects.get(tenant=tenant), reviewer=reviewer
        )

    preference = UserPreference.objects.get(end_user=end_user, is_current=True)
    assert (preference.key, preference.value, preference.source) == (
        "preference.answer_style",
        "brief_first",
        "promotion",
    )
    assert approved.result_ref == f"preference:{preference.pk}"
    assert approved.decided_by == reviewer and approved.decided_at is not None
    after = owner.post(reverse("memories:recall"), recall, format="json").json()
    assert "brief_first" in str(after["profile_block"])
    with pytest.raises(Conflict):
        promotion_approve(request=approved, reviewer=reviewer)


def test_card_approval_with_edits_makes_the_card_findable(
    tenant, end_user, reviewer, django_capture_on_commit_callbacks
) -> None:
    stm_store().upsert(items=[item(end_user, fingerprint="fpB", hit_count=4)], now=NOW)
    scan(tenant)
    request = PromotionRequest.objects.get(tenant=tenant)

    with pytest.raises(Invalid):
        promotion_approve(request=request, reviewer=reviewer, edits={"summary": " "})
    with django_capture_on_commit_callbacks(execute=True):
        approved = promotion_approve(
            request=request,
            reviewer=reviewer,
            edits={"title": "Timeouts with a healthy DB: thread pool"},
            reason="general lesson",
        )

    card = LtmCard.objects.get(memory_id=approved.result_ref)
    assert card.title == "Timeouts with a healthy DB: thread pool"
    assert card.source_type == "promoted_from_stm"
    assert card.source_refs["promotion_ids"] == [request.request_id]
    hits = ltm_search(tenant=tenant, query="thread-pool saturation timeouts", user_id="u_42")
    assert card.memory_id in [h.memory_id for h in hits.hits]


def test_merge_folds_the_proposal_into_an_existing_card(tenant, end_user, reviewer) -> None:
    [(existing, _)] = cards_import(
        tenant=tenant,
        cards=[CardInput(memory_type="semantic_fact", summary="Thread pools saturate under load")],
    )
    outbox_drain()
    stm_store().upsert(items=[item(end_user, fingerprint="fpM", hit_count=4)], now=NOW)
    scan(tenant)

    merged = promotion_merge(
        request=PromotionRequest.objects.get(tenant=tenant),
        reviewer=reviewer,
        memory_id=existing.memory_id,
    )

    existing.refresh_from_db()
    assert merged.result_ref == existing.memory_id
    assert existing.version == 2
    assert "thread-pool saturation" in existing.content
    assert LtmCard.objects.filter(tenant=tenant).count() == 1


def test_reject_needs_a_reason_and_records_the_decision(tenant, end_user, reviewer) -> None:
    stm_store().upsert(items=[item(end_user, fingerprint="fpX", hit_count=4)], now=NOW)
    scan(tenant)
    request = PromotionRequest.objects.get(tenant=tenant)

    with pytest.raises(Invalid):
        promotion_reject(request=request, reviewer=reviewer, reason="  ")
    request.refresh_from_db()
    assert request.status == "pending"

    promotion_reject(request=request, reviewer=reviewer, reason="duplicate of a runbook")
    request.refresh_from_db()
    assert (request.status, request.decision_reason, request.decided_by) == (
        "rejected",
        "duplicate of a runbook",
        reviewer,
    )


def test_promotions_api_lists_by_status_and_hides_other_tenants(
    tenant, end_user, owner, stranger
) -> None:
    stm_store().upsert(items=[item(end_user, fingerprint="fpL", hit_count=4)], now=NOW)
    scan(tenant)
    url = reverse("memories:promotions")

    pending = owner.get(url, {"status": "pending"}).json()["promotions"]
    assert [p["status"] for p in pending] == ["pending"]
    assert pending[0]["triggers"]
    assert owner.get(url, {"status": "approved"}).json()["promotions"] == []
    assert stranger.get(url).json()["promotions"] == []
    bad = owner.get(url, {"status": "maybe"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid"


def test_a_tenants_scan_reads_past_a_page_of_other_tenants_users(
    tenant, other_tenant, end_user
) -> None:
    # 300 users of another tenant hold items too: more than one page of the owners' scan
    others = EndUserFactory.create_batch(300, tenant=other_tenant)
    stm_store().upsert(items=[item(u) for u in others], now=NOW)
    stm_store().upsert(items=[item(end_user, hit_count=5, sessions=["s_1", "s_2"])], now=NOW)

    found = promotion_scan(tenant=tenant, now=NOW, owners=50)

    assert found.examined == 1 and found.proposed == 1


@pytest.mark.django_db
def test_a_promoted_card_is_as_recent_as_what_it_was_made_from(tenant, end_user, reviewer) -> None:
    said = "2024-03-05T10:00:00+00:00"
    stm_store().upsert(
        items=[item(end_user, fingerprint="fpS", hit_count=4, detail={"said_at": said})], now=NOW
    )
    scan(tenant)
    request = PromotionRequest.objects.get(tenant=tenant)
    assert request.evidence["said_at"] == said

    approved = promotion_approve(request=request, reviewer=reviewer, reason="general lesson")

    card = LtmCard.objects.get(memory_id=approved.result_ref)
    assert card.occurred_at is not None and card.occurred_at.isoformat() == said
