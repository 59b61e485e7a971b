"""Red lines on every path that writes memory or profile text, and on every view of raw text a
reviewer or agent gets back: extraction, proposals, card imports, profile patches, promotion
edits and merges, reflection, the admin and session compression."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from memories.audit.models import AuditEvent
from memories.ltm.models import LtmCard, LtmOutbox
from memories.ltm.services import CardInput, cards_import, outbox_drain
from memories.policies.models import VocabularyEntry
from memories.review.models import PromotionRequest
from memories.review.promotion import promotion_approve, promotion_merge
from memories.review.promotion_scan import promotion_scan
from memories.review.reflection import reflection_run
from memories.stm.items import StmItem
from memories.stm.selectors import stm_items_for
from memories.stm.store import stm_store
from memories.write.candidates import Candidate
from memories.write.services import proposals_submit
from memoryproject import redis_keys as keys
from memoryproject.errors import Invalid
from memoryproject.redis_client import redis_connection
from profiles.models import EndUser, StableFact, TenantMembership, UserPreference, UserProfile
from tests.factories import EndUserFactory, MembershipFactory, StaffUserFactory
from transcripts.models import Session

CARD_ZH = "6222 0212 3456 7890 123"  # 19 digits, fails Luhn: only the card word gives it away
CARD_EN = "4111-1111-1111-1111"  # passes Luhn
ID_18 = "11010519491231002X"
ID_15 = "110105491231002"
SECRET = "CorrectHorse99"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1XzQyIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
IBAN = "DE89 3704 0044 0532 0130 00"
RAW = (CARD_ZH, CARD_EN, "4111111111111111", ID_18, ID_15, SECRET, JWT, AWS_KEY, IBAN)
RAW_DIGITS = ("62220212", "02123456", "41111111", "11010519", "110105491", "DE89")

PROPOSALS = reverse("memories:proposals")
IMPORT = reverse("memories:ltm-import")
NOW = time.time()


def assert_no_raw(value: Any) -> None:
    text = str(value)
    for raw in RAW:
        assert raw not in text, raw
    compact = text.replace(" ", "").replace("-", "")
    for digits in RAW_DIGITS:
        assert digits not in compact, digits


def stm_keys() -> set[bytes]:
    return set(redis_connection().scan_iter(match=f"{keys.all_keys_pattern()[:-1]}stm:*"))


def counts() -> tuple[int, ...]:
    return tuple(
        model.objects.count()
        for model in (
            EndUser,
            UserProfile,
            UserPreference,
            StableFact,
            LtmCard,
            LtmOutbox,
            AuditEvent,
            PromotionRequest,
        )
    )


def proposal(**fields: Any) -> dict[str, Any]:
    values = {
        "user_id": "u_42",
        "session_id": "s_1",
        "task_id": "bug_456",
        "memory_type": "constraint",
        "summary": "refunds only to the card on file",
        "confidence": 0.9,
        "verified": True,
    }
    values.update(fields)
    return values


def profile_url(user_id: str = "u_42") -> str:
    return reverse("profiles:profile", kwargs={"user_id": user_id})


# --- extraction from an appended transcript -----------------------------------------------------
@pytest.mark.django_db
def test_extraction_stores_and_recalls_no_raw_value(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    events = [
        {"id": "m-1", "role": "user", "content": f"我的银行卡号是 {CARD_ZH}，帮我记住"},
        {"id": "m-2", "role": "user", "content": f"Remember this: my password is {SECRET}"},
        {"id": "m-3", "role": "user", "content": f"记住：我的身份证号是 {ID_18}，以后报销用"},
        {"id": "m-4", "role": "user", "content": f"Please remember the deploy key {AWS_KEY}"},
        {"id": "m-5", "role": "user", "content": f"记住，工资打到 IBAN {IBAN} 这个账户"},
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(
            reverse("transcripts:events", kwargs={"session_id": "s-1"}),
            {"user_id": "u_42", "events": events},
            format="json",
        )
    assert response.status_code == 201

    items = stm_items_for(tenant=tenant, user_id="u_42", limit=50).items
    assert len(items) == 5  # each message is remembered, without its sensitive value
    assert_no_raw([(i.summary, i.detail, i.entities, i.tags, i.fact_value) for i in items])
    assert any("[REDACTED:bank_card]" in i.summary for i in items)
    assert any("[REDACTED:secret]" in i.summary for i in items)
    for raw in (b"62220212", b"CorrectHorse", b"AKIA"):
        assert not any(raw in key for key in stm_keys())
    recalled = owner.post(
        reverse("memories:recall"),
        {
            "user_id": "u_42",
            "session_id": "s-1",
            "query": "我的银行卡号和密码是什么",
            "layers": ["redis"],
        },
        format="json",
    ).json()
    assert recalled["items"] and "[REDACTED:" in recalled["injection_text"]
    assert_no_raw(recalled)
    # The transcript itself keeps what was said: it is the raw record.
    replay = owner.get(reverse("transcripts:events", kwargs={"session_id": "s-1"})).json()
    assert CARD_ZH in str(replay)


@pytest.mark.django_db
def test_extraction_drops_a_candidate_that_is_nothing_but_a_secret(tenant) -> None:
    before = stm_keys()
    candidates = [
        Candidate(user_id="u_42", session_id="s_1", memory_type="fact", summary=f"密码：{SECRET}"),
        Candidate(
            user_id="u_42",
            session_id="s_1",
            memory_type="fact",
            summary="the staging host is db-2",
            entities=(CARD_EN, "db-2"),
            verified=True,
        ),
    ]

    secret, fact = proposals_submit(tenant=tenant, candidates=candidates, strict=False)

    assert (secret.outcome, secret.decision.refusal) == ("refused", "sensitive")
    assert fact.outcome == "inserted"
    (item,) = stm_items_for(tenant=tenant, user_id="u_42").items
    assert item.entities == ["db-2"]
    assert stm_keys() - before and not any(b"41111111" in key for key in stm_keys())


@pytest.mark.django_db
def test_extraction_drops_a_bare_entity_another_field_shows_to_be_sensitive(tenant) -> None:
    candidate = Candidate(
        user_id="u_42",
        session_id="s_1",
        memory_type="fact",
        summary="the admin password is hunter2x06 for db-2",
        entities=("hunter2x06", "db-2"),
        tags=("HUNTER2X06",),
        verified=True,
    )

    (result,) = proposals_submit(tenant=tenant, candidates=[candidate], strict=False)

    assert result.outcome == "inserted"
    (item,) = stm_items_for(tenant=tenant, user_id="u_42").items
    assert item.summary == "the admin password is [REDACTED:secret] for db-2"
    assert (item.entities, item.tags) == (["db-2"], [])
    assert not any(b"hunter2x06" in key for key in stm_keys())


# --- proposals API ------------------------------------------------------------------------------
@pytest.mark.django_db
def test_every_field_of_a_proposal_is_redacted(trusted_owner: APIClient) -> None:
    owner = trusted_owner  # a trusted writer: its rules are the user's word
    body = proposal(
        summary=f"退款只能打到信用卡 {CARD_ZH}，token: {JWT}",
        task_id="refund-4111111111111111",
        subtype="refund_4111111111111111",
        detail={"note": f"ID {ID_15} checked", "log": {"sent": f"Bearer {JWT} to billing"}},
        entities=["refunds", f"IBAN {IBAN}"],
        tags=["billing", f"key {AWS_KEY}"],
        canonical_fact_key="profile.payout_card",
        fact_value=f"debit card {CARD_ZH}",
    )

    response = owner.post(PROPOSALS, {"proposals": [body]}, format="json")

    assert response.status_code == 201, response.json()
    (result,) = response.json()["results"]
    assert set(result["redacted"]) >= {"bank_card", "jwt", "id_card", "iban", "service_key"}
    item = owner.get(reverse("memories:item", kwargs={"item_id": result["item_id"]})).json()
    assert_no_raw(item)
    assert item["task_id"] == "refund-[REDACTED:bank_card]"
    assert item["entities"] == ["refunds", "IBAN [REDACTED:iban]"]
    assert not any(b"41111111" in key for key in stm_keys())  # the task id names a Redis key
    # An agent still finds the item by the task id it knows.
    listed = owner.get(
        reverse("memories:stm"), {"user_id": "u_42", "task_id": "refund-4111111111111111"}
    ).json()
    assert [i["id"] for i in listed["items"]] == [result["item_id"]]
    recalled = owner.post(
        reverse("memories:recall"),
        {
            "user_id": "u_42",
            "session_id": "s_1",
            "task_id": "refund-4111111111111111",
            "query": "退款规则",
            "layers": ["redis"],
        },
        format="json",
    ).json()
    assert result["item_id"] in [i.get("id") or i.get("memory_id") for i in recalled["items"]]
    assert_no_raw(recalled)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"summary": f"password is {SECRET}"}, "proposals.0.summary"),
        ({"summary": f"密码：{SECRET}"}, "proposals.0.summary"),
        ({"summary": CARD_EN}, "proposals.0.summary"),
        ({"task_id": f"卡号{CARD_ZH}"}, "proposals.0.task_id"),
        ({"entities": ["refunds", AWS_KEY]}, "proposals.0.entities.1"),
        # Bare values that only another field of the proposal shows to be sensitive.
        (
            {"summary": f"my password is {SECRET}, note it", "entities": ["refunds", SECRET]},
            "proposals.0.entities.1",
        ),
        (
            {"summary": "my card is 5500 0600 0000 0001", "tags": ["5500060000000001"]},
            "proposals.0.tags.0",
        ),
        ({"tags": [f"银行卡 {CARD_ZH}"]}, "proposals.0.tags.0"),
        ({"subtype": ID_18}, "proposals.0.subtype"),
        ({"detail": {"card": CARD_ZH}}, "proposals.0.detail.card"),
        ({"fact_value": f"Bearer {JWT}"}, "proposals.0.fact_value"),
    ],
)
def test_a_proposal_field_of_nothing_but_sensitive_data_is_refused(
    owner: APIClient, fields: dict[str, Any], named: str
) -> None:
    before_keys, before = stm_keys(), counts()

    response = owner.post(
        PROPOSALS, {"proposals": [proposal(user_id="u_new"), proposal(**fields)]}, format="json"
    )

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert named.replace("proposals.0", "proposals.1") in error["fields"]
    assert SECRET not in str(response.json()) and "4111" not in str(response.json())
    assert stm_keys() == before_keys and counts() == before  # not even the new end user


# --- cards:import -------------------------------------------------------------------------------
@pytest.mark.django_db
def test_imported_cards_are_redacted_in_the_ledger_and_both_indexes(
    tenant, owner: APIClient
) -> None:
    card = {
        "memory_type": "semantic_fact",
        "title": f"Payout account IBAN {IBAN}",
        "summary": f"供应商的银行卡号是 {CARD_ZH}，对账用",
        "content": f"login with password: {SECRET}; service token {JWT}; 身份证 {ID_15}",
        "entities": ["supplier", f"refund card {CARD_EN}"],
        "tags": ["finance"],
        "user_id": "u_42",
    }

    response = owner.post(IMPORT, {"cards": [card]}, format="json")

    assert response.status_code == 201, response.json()
    stored = LtmCard.objects.get(tenant=tenant)
    assert_no_raw([stored.title, stored.summary, stored.content, stored.entities])
    assert "[REDACTED:iban]" in stored.title and "[REDACTED:bank_card]" in stored.summary
    outbox_drain()
    found = owner.post(
        reverse("memories:ltm-search"),
        {"query": "供应商 银行卡 对账", "mode": "hybrid"},
        format="json",
    ).json()
    assert found["hits"] and found["hits"][0]["memory_id"] == stored.memory_id
    assert_no_raw(found)


@pytest.mark.django_db
def test_an_imported_card_of_nothing_but_a_key_is_refused(tenant, owner: APIClient) -> None:
    before = counts()
    cards = [
        {"memory_type": "semantic_fact", "summary": "fine", "user_id": "u_new"},
        {"memory_type": "semantic_fact", "summary": f"api key = {AWS_KEY}"},
    ]

    response = owner.post(IMPORT, {"cards": cards}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert "cards.1.summary" in response.json()["error"]["fields"]
    assert counts() == before


# --- profile PATCH ------------------------------------------------------------------------------
@pytest.mark.django_db
def test_profile_text_is_redacted(tenant, trusted_owner: APIClient) -> None:
    patch = {
        "profile": {
            "display_name": f"Alice (身份证 {ID_18})",
            "extras": {"note": f"pays by debit card {CARD_ZH}", "wifi": "wifi password: hunter22"},
        },
        "preferences": [
            {"key": "preference.payment", "value": f"always the credit card {CARD_EN}"}
        ],
        "facts": [
            {"key": "profile.vault", "value": {"hint": f"the vault token is {SECRET}", "n": 3}}
        ],
    }

    response = trusted_owner.patch(profile_url(), patch, format="json")

    assert response.status_code == 200, response.json()
    assert_no_raw(response.json())
    profile = UserProfile.objects.get(end_user__external_id="u_42")
    assert profile.display_name == "Alice (身份证 [REDACTED:id_card])"
    assert profile.extras["wifi"] == "wifi password: [REDACTED:secret]"
    assert_no_raw([profile.extras, list(UserPreference.objects.values_list("value"))])
    assert_no_raw(list(StableFact.objects.values_list("value")))
    assert "hunter22" not in str(AuditEvent.objects.values_list("details"))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("patch", "named"),
    [
        ({"preferences": [{"key": "preference.card", "value": CARD_EN}]}, "preferences.0.value"),
        ({"preferences": [{"key": "profile.bank_card", "value": CARD_ZH}]}, "preferences.0.value"),
        ({"facts": [{"key": "fact.login", "value": f"密码是{SECRET}"}]}, "facts.0.value"),
        ({"profile": {"display_name": ID_18}}, "profile.display_name"),
        ({"profile": {"extras": {"iban": IBAN}}}, "profile.extras.iban"),
        ({"profile": {"extras": {"api_key": "x1y2z3"}}}, "profile.extras.api_key"),
    ],
)
def test_a_profile_value_of_nothing_but_sensitive_data_is_refused(
    tenant, owner: APIClient, patch: dict[str, Any], named: str
) -> None:
    before = counts()

    response = owner.patch(profile_url("u_new"), patch, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and named in error["fields"]
    assert counts() == before  # the user is not even created


# --- tenant patterns ----------------------------------------------------------------------------
@pytest.mark.django_db
def test_a_tenants_patterns_are_redacted_on_memory_and_profile_writes(
    tenant, trusted_owner: APIClient
) -> None:
    owner = trusted_owner  # a trusted writer: its rules are the user's word
    VocabularyEntry.objects.create(tenant=tenant, kind="redaction", value=r"EMP-\d{6}")

    written = owner.post(
        PROPOSALS,
        {"proposals": [proposal(summary="工号 EMP-123456 离职了，别再派单")]},
        format="json",
    ).json()["results"][0]
    patched = owner.patch(
        profile_url(), {"profile": {"display_name": "Bob emp-654321"}}, format="json"
    )
    refused = owner.patch(
        profile_url(),
        {"preferences": [{"key": "preference.badge", "value": "EMP-111111"}]},
        format="json",
    )

    item = owner.get(reverse("memories:item", kwargs={"item_id": written["item_id"]})).json()
    assert item["summary"] == "工号 [REDACTED:custom] 离职了，别再派单"
    assert written["redacted"] == ["custom"]
    assert patched.json()["profile"]["display_name"] == "Bob [REDACTED:custom]"
    assert refused.status_code == 400 and "preferences.0.value" in refused.json()["error"]["fields"]


@pytest.mark.django_db
def test_the_admin_refuses_a_catastrophic_redaction_pattern(tenant) -> None:
    staff = StaffUserFactory()
    MembershipFactory(user=staff, tenant=tenant, role=TenantMembership.Role.TENANT_ADMIN)
    client = Client()
    client.force_login(staff)
    add = reverse("admin:memories_vocabularyentry_add")

    bad = client.post(add, {"tenant": tenant.pk, "kind": "redaction", "value": r"(a|aa)+$"})
    good = client.post(add, {"tenant": tenant.pk, "kind": "redaction", "value": r"EMP-\d{6}"})

    assert bad.status_code == 200 and "Refused as a redaction pattern" in bad.content.decode()
    assert good.status_code == 302
    assert list(VocabularyEntry.objects.values_list("value", flat=True)) == [r"EMP-\d{6}"]


# --- promotion edits, merges, scan and reflection -----------------------------------------------
def stm_item(end_user, n: int, summary: str, **fields: Any) -> StmItem:
    values: dict[str, Any] = {
        "id": f"stm_{end_user.pk}_{n:04d}",
        "tenant_id": end_user.tenant_id,
        "end_user_id": end_user.pk,
        "user_id": end_user.external_id,
        "session_id": f"s_{n}",
        "memory_type": "fact",
        "summary": summary,
        "fingerprint": f"fp{n}",
        "fingerprints": [f"fp{n}"],
        "sessions": [f"s_{n}"],
        "source": {"kind": "user", "message_ids": [f"m_{n}"], "tool_call_ids": []},
        "confidence": 0.9,
        "importance": 0.8,
        "created_at": NOW - 48 * 3600,
        "updated_at": NOW - 3600 + n,
        "last_access_at": NOW,
        "expires_at": NOW + 86400,
        "hit_count": 4,
    }
    values.update(fields)
    return StmItem(**values)


@pytest.mark.django_db
def test_scan_proposals_and_reviewers_edits_are_redacted(
    tenant, django_capture_on_commit_callbacks
) -> None:
    # Items written before redaction covered them may still hold raw values.
    alice = EndUserFactory(tenant=tenant, external_id="alice")
    reviewer = StaffUserFactory()
    stm_store().upsert(
        items=[
            stm_item(alice, 1, f"Alice's 银行卡 {CARD_ZH} is the refund card", entities=[CARD_EN]),
            stm_item(
                alice,
                2,
                "Alice pays in euros",
                canonical_fact_key="preference.payout_account",
                fact_value=f"IBAN {IBAN}",
            ),
        ],
        now=NOW,
    )

    assert promotion_scan(tenant=tenant, now=NOW, owners=10_000).proposed == 2

    card_request = PromotionRequest.objects.get(tenant=tenant, path="ltm")
    fact_request = PromotionRequest.objects.get(tenant=tenant, path="postgres")
    assert_no_raw([card_request.proposal, card_request.evidence])
    assert_no_raw([fact_request.proposal, fact_request.evidence])
    assert_no_raw(list(AuditEvent.objects.values_list("details")))

    before = counts()
    with pytest.raises(Invalid) as refused:
        promotion_approve(
            request=card_request, reviewer=reviewer, edits={"summary": f"password is {SECRET}"}
        )
    assert "summary" in (refused.value.fields or {})
    with pytest.raises(Invalid) as refused_value:
        promotion_approve(request=fact_request, reviewer=reviewer, edits={"value": CARD_EN})
    assert "value" in (refused_value.value.fields or {})
    assert counts() == before

    with django_capture_on_commit_callbacks(execute=True):
        approved = promotion_approve(
            request=card_request,
            reviewer=reviewer,
            edits={"summary": f"Refunds go to the card, 密码 {SECRET} stays with Alice"},
        )
    card = LtmCard.objects.get(memory_id=approved.result_ref)
    assert "[REDACTED:secret]" in card.summary
    assert_no_raw([card.title, card.summary, card.content, card.entities])
    approved.refresh_from_db()
    assert_no_raw(approved.proposal)


@pytest.mark.django_db
def test_merging_a_raw_proposal_into_a_card_redacts_it(tenant) -> None:
    alice = EndUserFactory(tenant=tenant, external_id="alice")
    [(card, _)] = cards_import(
        tenant=tenant, cards=[CardInput(memory_type="semantic_fact", summary="Refund rules")]
    )
    request = PromotionRequest.objects.create(  # as stored before redaction covered proposals
        request_id="prm_legacy",
        tenant=tenant,
        end_user=alice,
        path=PromotionRequest.Path.LTM,
        memory_type="fact",
        proposal={
            "memory_type": "semantic_fact",
            "summary": f"Refunds to 信用卡 {CARD_ZH} only",
            "entities": [f"refund card {CARD_EN}"],
            "tags": [],
        },
        evidence={"stm_item_ids": [], "message_ids": []},
        fingerprint="legacy",
    )

    promotion_merge(request=request, reviewer=StaffUserFactory(), memory_id=card.memory_id)

    card.refresh_from_db()
    assert "[REDACTED:bank_card]" in card.content
    assert_no_raw([card.content, card.entities])


@pytest.mark.django_db
def test_reflection_proposes_no_raw_value(tenant) -> None:
    alice = EndUserFactory(tenant=tenant, external_id="alice")
    texts = [
        f"createOrder refund to card {CARD_EN} timed out",
        f"createOrder retry for 银行卡 {CARD_ZH} failed again",
        f"createOrder with token: {SECRET} hit the thread pool limit",
        "createOrder thread pool saturated during refunds",
        "createOrder refunds recovered after the pool grew",
    ]
    stm_store().upsert(
        items=[
            stm_item(alice, n, text, entities=["createOrder"], hit_count=0)
            for n, text in enumerate(texts)
        ],
        now=NOW,
    )

    assert reflection_run(tenant=tenant, now=NOW, owners=10_000).proposed == 1

    request = PromotionRequest.objects.get(tenant=tenant, origin="reflection")
    assert "[REDACTED:bank_card]" in request.proposal["content"]
    assert_no_raw([request.proposal, request.evidence])


# --- what reviewers and agents are shown --------------------------------------------------------
@pytest.mark.django_db
def test_the_reviewers_transcript_excerpt_and_queue_are_redacted(tenant, owner: APIClient) -> None:
    owner.post(
        reverse("transcripts:events", kwargs={"session_id": "s-1"}),
        {
            "user_id": "alice",
            "events": [
                {"id": "m-1", "role": "user", "content": f"我的银行卡号是 {CARD_ZH}，帮我记住"},
                {"id": "m-2", "role": "assistant", "content": f"Noted; your password is {SECRET}?"},
            ],
        },
        format="json",
    )
    alice = EndUser.objects.get(tenant=tenant, external_id="alice")
    # A proposal stored before redaction covered proposals, with the raw number in it.
    promotion = PromotionRequest.objects.create(
        request_id="prm_raw",
        tenant=tenant,
        end_user=alice,
        path=PromotionRequest.Path.LTM,
        memory_type="fact",
        proposal={"memory_type": "semantic_fact", "title": f"卡号 {CARD_ZH}", "summary": "x"},
        evidence={
            "message_ids": ["m-1"],
            "sessions": ["s-1"],
            "item": {"summary": f"银行卡 {CARD_ZH}"},
        },
        fingerprint="raw",
    )
    reviewer = StaffUserFactory()
    MembershipFactory(user=reviewer, tenant=tenant, role=TenantMembership.Role.REVIEWER)
    client = Client()
    client.force_login(reviewer)

    page = client.get(
        reverse("admin:memories_promotionrequest_change", args=[promotion.pk])
    ).content.decode()
    queue = client.get(reverse("admin:memories_promotionrequest_changelist")).content.decode()

    assert "我的银行卡号是 [REDACTED:bank_card]，帮我记住" in page  # the excerpt
    assert "[REDACTED:secret]" in page
    assert_no_raw(page)
    assert "[REDACTED:bank_card]" in queue
    assert_no_raw(queue)


@pytest.mark.django_db
def test_an_admin_edit_of_nothing_but_a_card_number_is_a_form_error(tenant) -> None:
    alice = EndUserFactory(tenant=tenant, external_id="alice")
    promotion = PromotionRequest.objects.create(
        request_id="prm_edit",
        tenant=tenant,
        end_user=alice,
        path=PromotionRequest.Path.POSTGRES,
        memory_type="preference",
        proposal={"key": "preference.payment", "value": "invoice", "target": "preference"},
        evidence={"message_ids": [], "sessions": []},
        existing={"current": None},
        fingerprint="edit",
    )
    reviewer = StaffUserFactory()
    MembershipFactory(user=reviewer, tenant=tenant, role=TenantMembership.Role.REVIEWER)
    client = Client()
    client.force_login(reviewer)
    before = counts()

    page = client.post(
        reverse("admin:memories_promotionrequest_change", args=[promotion.pk]),
        {"_approve_edited": "1", "value": f'"{CARD_EN}"', "reason": "typed the card"},
    )

    assert page.status_code == 200
    assert "Holds nothing but sensitive data" in page.content.decode()
    promotion.refresh_from_db()
    assert promotion.status == "pending" and counts() == before


@pytest.mark.django_db
def test_admin_pages_of_stored_text_are_redacted(tenant) -> None:
    alice = EndUserFactory(tenant=tenant, external_id="alice")
    # Rows written before redaction covered them.
    UserPreference.objects.create(
        tenant=tenant, end_user=alice, key="preference.card", value=f"card {CARD_ZH}"
    )
    card = LtmCard.objects.create(
        tenant=tenant,
        memory_id="ltm_raw",
        memory_type="semantic_fact",
        title=f"信用卡 {CARD_EN}",
        summary=f"id {ID_18}",
    )
    staff = StaffUserFactory()
    MembershipFactory(user=staff, tenant=tenant, role=TenantMembership.Role.TENANT_ADMIN)
    client = Client()
    client.force_login(staff)

    pages = [
        client.get(reverse("admin:profiles_userpreference_changelist")),
        client.get(reverse("admin:memories_ltmcard_changelist")),
        client.get(reverse("admin:memories_ltmcard_change", args=[card.pk])),
    ]

    for page in pages:
        assert page.status_code == 200
        assert "[REDACTED:" in page.content.decode()
        assert_no_raw(page.content.decode())


@pytest.mark.django_db
def test_session_compression_shows_no_raw_value(tenant, owner: APIClient) -> None:
    events = [
        {"id": f"m-{n}", "role": "user", "content": f"step {n}: nothing special here " * 20}
        for n in range(20)
    ]
    events[2]["content"] = f"记住我的银行卡号是 {CARD_ZH}，" + "然后继续排查。" * 30
    events[-1]["content"] = f"and my password is {SECRET}"
    owner.post(
        reverse("transcripts:events", kwargs={"session_id": "s-c"}),
        {"user_id": "u_42", "events": events},
        format="json",
    )
    assert Session.objects.filter(external_id="s-c").exists()

    response = owner.post(
        reverse("memories:compress", kwargs={"session_id": "s-c"}),
        {"budget_tokens": 400},
        format="json",
    )

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["summary"] and "[REDACTED:secret]" in body["context"]
    assert_no_raw(body)
