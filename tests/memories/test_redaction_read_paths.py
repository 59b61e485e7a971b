"""No raw sensitive value on any read path: a sample of every kind docs/redaction.md lists (each
shape of service key apart) is written through the API, and again straight into every store
as rows written before redaction covered them; `redact_existing` rewrites those (a second run
changes nothing), then every read path an agent or staff has is walked."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from memories.audit.models import AuditEvent
from memories.audit.services import audit_verify
from memories.history.documents import HistoryDocument, entry_id_for
from memories.history.search import history_search_index
from memories.history.services import history_outbox_drain, index_documents
from memories.ltm.models import LtmCard
from memories.ltm.services import index_cards, outbox_drain
from memories.ltm.text import bm25_text
from memories.policies.models import VocabularyEntry
from memories.review.models import PromotionRequest
from memories.stm.items import StmItem
from memories.stm.store import stm_store
from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection
from memoryproject.redis_keys import Owner
from profiles.models import EndUser, Tenant, TenantMembership, UserPreference
from tests.factories import MembershipFactory, StaffUserFactory
from tests.memoryproject.test_redaction import GITHUB_TOKEN, JWT, OPENAI_KEY
from transcripts.models import Session

PEM = (
    "-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7\n"
    "-----END PRIVATE KEY-----"
)
# (kind, a sentence saying it, the raw value): the samples of tests/memoryproject/test_redaction.py
# where it has one, and of docs/redaction.md for the shapes it lists.
SAMPLES = [
    ("bank_card", "我的银行卡号是 6222 0212 3456 7890 123，帮我记住", "6222 0212 3456 7890 123"),
    ("bank_card", "My card number is 4111 1111 0111 1113 for refunds", "4111 1111 0111 1113"),
    ("id_card", "身份证号 11010519491231002X，别外传", "11010519491231002X"),
    ("secret", "my password is hunter2x06 for the vpn", "hunter2x06"),
    (
        "bearer_token",
        "send Authorization: Bearer abc123def456ghi789 upstream",
        "abc123def456ghi789",
    ),
    ("jwt", f"the session cookie was {JWT}", JWT),
    ("service_key", f"use {OPENAI_KEY} for the eval", OPENAI_KEY),
    (
        "service_key",
        "stripe uses sk_live_4eC39HqLyjWDarjtT1zdp7dc now",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    ),
    ("service_key", "AWS 的 key 是 AKIAIOSFODNN7EXAMPLE 别提交", "AKIAIOSFODNN7EXAMPLE"),
    ("service_key", f"CI uses {GITHUB_TOKEN} to push", GITHUB_TOKEN),
    (
        "service_key",
        "slack xoxb-123456789012-abcdefghij posts alerts",
        "xoxb-123456789012-abcdefghij",
    ),
    (
        "service_key",
        "maps use AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe daily",
        "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
    ),
    (
        "service_key",
        "gitlab runner token glpat-xR4nd0mT0k3nV4lu3zzz here",
        "glpat-xR4nd0mT0k3nV4lu3zzz",
    ),
    (
        "service_key",
        "the agent key mk_0123456789ab_s3cr3tPartOfTheKey99 works",
        "mk_0123456789ab_s3cr3tPartOfTheKey99",
    ),
    ("service_key", f"deploy key {PEM} on the box", "MIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7"),
    ("iban", "pay to IBAN DE89 3704 0044 0532 0130 00 monthly", "DE89 3704 0044 0532 0130 00"),
    ("ssn", "her SSN 078-05-1120 is on the form", "078-05-1120"),
    ("custom", "工号 EMP-123456 离职了", "EMP-123456"),
]
RAW = [raw for _, _, raw in SAMPLES]
# Bare values, as an entity or a tag would hold them.
BARE = ["hunter2x06", "5500 0600 0000 0001"]
USER = "u_red"
NOW = time.time()


def assert_no_raw(value: Any, *, where: str) -> None:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    compact = text.replace(" ", "").replace("-", "").replace("\\n", "")
    for raw in [*RAW, *BARE]:
        squeezed = raw.replace(" ", "").replace("-", "")
        assert raw not in text and raw.lower() not in text.lower(), f"{raw!r} in {where}"
        if any(char.isdigit() for char in squeezed) and len(squeezed) >= 9:
            assert squeezed not in compact, f"{raw!r} (unspaced) in {where}"


def stored_entry(session: Session, seq: int, text: str) -> HistoryDocument:
    return HistoryDocument(
        entry_id=entry_id_for(session_pk=session.pk, seq=seq),
        tenant_id=str(session.tenant_id),
        user_id=USER,
        session_id=session.external_id,
        session_pk=session.pk,
        seq=seq,
        event_id=f"m-{seq - 1}",
        role="user",
        occurred_at=session.created_at,
        text=text,
        context="",
        bm25_text=bm25_text(text),
    )


@pytest.fixture
def written(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> Iterator[dict[str, Any]]:
    """Every kind written through the API, and raw rows as stored before redaction."""
    VocabularyEntry.objects.create(tenant=tenant, kind="redaction", value=r"EMP-\d{6}")
    events = [
        {"id": f"m-{n}", "role": "user", "content": f"Remember this: {sentence}"}
        for n, (_, sentence, _) in enumerate(SAMPLES)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        appended = owner.post(
            reverse("transcripts:events", kwargs={"session_id": "s-red"}),
            {"user_id": USER, "events": events},
            format="json",
        )
    assert appended.status_code == 201, appended.json()
    history_outbox_drain()
    proposals = [
        {
            "user_id": USER,
            "session_id": "s-red",
            "memory_type": "fact",
            "summary": f"{sentence} (as agreed)",
            "entities": ["billing"],
            "confidence": 0.9,
            "verified": True,
        }
        for _, sentence, _ in SAMPLES
    ]
    submitted = owner.post(reverse("memories:proposals"), {"proposals": proposals}, format="json")
    assert submitted.status_code == 201, submitted.json()
    cards = [
        {
            "memory_type": "semantic_fact",
            "summary": f"{sentence} (imported)",
            "user_id": USER,
            "id": f"imp-{n}",
        }
        for n, (_, sentence, _) in enumerate(SAMPLES)
    ]
    imported = owner.post(reverse("memories:ltm-import"), {"cards": cards}, format="json")
    assert imported.status_code == 201, imported.json()
    patched = owner.patch(
        reverse("profiles:profile", kwargs={"user_id": USER}),
        {"profile": {"extras": {"note": SAMPLES[0][1]}}},
        format="json",
    )
    assert patched.status_code == 200, patched.json()

    # As stored before redaction covered these fields.
    end_user = EndUser.objects.get(tenant=tenant, external_id=USER)
    session = Session.objects.get(tenant=tenant, external_id="s-red")
    everything = "; ".join(sentence for _, sentence, _ in SAMPLES)
    legacy = StmItem(
        id=f"stm_{end_user.pk}_{'a' * 16}",
        tenant_id=tenant.pk,
        end_user_id=end_user.pk,
        user_id=USER,
        session_id="s-red",
        task_id="refund-4111111101111113",
        memory_type="fact",
        summary=f"Earlier: {everything}",
        detail={"text": everything, "password": "hunter2x06"},
        entities=[*BARE, "billing"],
        tags=["EMP-123456"],
        fingerprint="legacyfp",
        fingerprints=["legacyfp"],
        sessions=["s-red"],
        source={"kind": "user", "message_ids": [e["id"] for e in events], "tool_call_ids": []},
        canonical_fact_key="profile.payout_card",
        fact_value="5500 0600 0000 0001",
        confidence=0.9,
        importance=0.8,
        created_at=NOW - 3600,
        updated_at=NOW - 60,
        last_access_at=NOW,
        expires_at=NOW + 86400,
    )
    stm_store().upsert(items=[legacy], now=NOW)
    card = LtmCard.objects.create(
        tenant=tenant,
        end_user=end_user,
        memory_id="ltm_legacyraw",
        memory_type="semantic_fact",
        title="Payout details",
        summary=f"Earlier: {everything}",
        entities=BARE,
        tags=["billing"],
        source_type="import",
    )
    index_cards([LtmCard.objects.select_related("end_user", "project").get(pk=card.pk)])
    UserPreference.objects.create(
        tenant=tenant, end_user=end_user, key="preference.card", value="5500 0600 0000 0001"
    )
    PromotionRequest.objects.create(
        request_id="prm_legacyraw",
        tenant=tenant,
        end_user=end_user,
        path=PromotionRequest.Path.LTM,
        memory_type="fact",
        proposal={"memory_type": "semantic_fact", "summary": everything, "entities": BARE},
        evidence={"message_ids": ["m-0"], "sessions": ["s-red"], "item": {"summary": everything}},
        fingerprint="legacyraw",
    )
    index_documents(
        [stored_entry(session, n + 1, f"{USER}: {s}") for n, (_, s, _) in enumerate(SAMPLES)]
    )
    yield {"item_id": legacy.id, "end_user": end_user, "card": card}
    # The database is rolled back; the short-term keys would outlive it under a reused id.
    stm_store().erase_tenant(tenant_id=tenant.pk)


def redact_existing(*options: str) -> str:
    out = StringIO()
    # One tenant: other tests' short-term keys outlive their rolled-back tenants.
    slug = Tenant.objects.get(end_users__external_id=USER).slug
    call_command("redact_existing", "--tenant", slug, "--batch-size", "5", *options, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_redact_existing_rewrites_every_store_once_and_audits_it(tenant, written) -> None:
    raw_history = [
        e["text"] for e in history_search_index().entries_of(tenant_id=str(tenant.pk), user_id=USER)
    ]
    assert any("hunter2x06" in text for text in raw_history)  # the rows really are raw

    first = redact_existing()
    audited = list(AuditEvent.objects.filter(tenant=tenant, action="redact"))
    second = redact_existing()

    assert "stm: checked" in first and "Redacted" in first
    assert "Nothing to redact" in second and "Nothing to redact" not in first
    assert AuditEvent.objects.filter(tenant=tenant, action="redact").count() == len(audited)
    assert {e.object_type for e in audited} >= {
        "stm_item",
        "ltm_card",
        "preference",
        "promotion_request",
        "history_entries",
    }
    assert_no_raw([e.details for e in audited], where="audit details")
    assert audit_verify(tenant=tenant).ok
    item = stm_store().get(
        owner=Owner(tenant.pk, written["end_user"].pk), item_id=written["item_id"]
    )
    assert item is not None and item.entities == ["billing"] and item.tags == []
    assert item.task_id == "refund-[REDACTED:bank_card]" and item.detail["password"] == (
        "[REDACTED:secret]"
    )
    # The item's index keys moved with its redacted task id, entities and canonical key.
    names = b" ".join(redis_connection().scan_iter(match=f"{keys.all_keys_pattern()[:-1]}stm:*"))
    for raw in (b"4111111101111113", b"5500 0600", b"hunter2x06", b"emp-123456"):
        assert raw not in names.lower()
    # Nor any piece of a key an extractor took for an entity.
    for piece in (b"xr4nd0mt0k3nv4lu3zzz", b"eyjzdwiioiixmjm0nty3odkwiiwibmftzsi6ikpvag4ifq"):
        assert piece not in names.lower()
    outbox_drain()
    hits = history_search_index().entries_of(tenant_id=str(tenant.pk), user_id=USER)
    assert_no_raw([h["text"] for h in hits], where="history index")


@pytest.mark.django_db
def test_no_read_path_shows_a_raw_value(tenant, owner: APIClient, written) -> None:
    redact_existing()
    outbox_drain()
    end_user = written["end_user"]
    reads: dict[str, Any] = {}

    # The agent's API.
    item = owner.get(reverse("memories:item", kwargs={"item_id": written["item_id"]})).json()
    assert len(item["provenance"]) == len(SAMPLES)  # the transcript events, redacted
    assert "[REDACTED:secret]" in str(item["provenance"]) and "[REDACTED:custom]" in str(item)
    reads["item with provenance"] = item
    listed = owner.get(reverse("memories:stm"), {"user_id": USER, "limit": 200}).json()
    assert len(listed["items"]) > len(SAMPLES)
    reads["item list"] = listed
    for item_doc in listed["items"]:
        reads[f"item {item_doc['id']}"] = owner.get(
            reverse("memories:item", kwargs={"item_id": item_doc["id"]})
        ).json()
    for query in ("my password and card number", "银行卡 身份证", "service keys and tokens"):
        recalled = owner.post(
            reverse("memories:recall"),
            {"user_id": USER, "session_id": "s-red", "query": query, "budget_tokens": 4000},
            format="json",
        )
        assert recalled.status_code == 200
        reads[f"recall {query}"] = recalled.json()
    for card in LtmCard.objects.filter(tenant=tenant):
        reads[f"card {card.memory_id}"] = owner.get(
            reverse("memories:ltm-card", kwargs={"memory_id": card.memory_id})
        ).json()
    reads["ltm search"] = owner.post(
        reverse("memories:ltm-search"),
        {"query": "card password key", "mode": "hybrid"},
        format="json",
    ).json()
    assert reads["ltm search"]["hits"]
    assert any("[REDACTED:" in reads[f"recall {q}"]["injection_text"] for q in ("银行卡 身份证",))
    reads["promotions"] = owner.get(reverse("memories:promotions")).json()
    reads["profile"] = owner.get(reverse("profiles:profile", kwargs={"user_id": USER})).json()
    exported = owner.get(reverse("memories:export", kwargs={"user_id": USER})).json()
    assert exported["history"]["count"] >= len(SAMPLES)
    # The end user's own export keeps the transcript as recorded (docs/redaction.md) ...
    assert "hunter2x06" in json.dumps(exported["transcripts"])
    # ... and nothing derived from it holds a raw value.
    reads["API export without its transcripts"] = {**exported, "transcripts": None}

    # Staff.
    reviewer = StaffUserFactory()
    MembershipFactory(user=reviewer, tenant=tenant, role=TenantMembership.Role.TENANT_ADMIN)
    staff = Client()
    staff.force_login(reviewer)
    pages = {
        "staff export": reverse("admin:profiles_enduser_export", args=[end_user.pk]),
        "end user page": reverse("admin:profiles_enduser_change", args=[end_user.pk]),
        "card ledger": reverse("admin:memories_ltmcard_changelist"),
        "card page": reverse("admin:memories_ltmcard_change", args=[written["card"].pk]),
        "preferences": reverse("admin:profiles_userpreference_changelist"),
        "audit": reverse("admin:memories_auditevent_changelist"),
    }
    for name, url in pages.items():
        page = staff.get(url)
        assert page.status_code == 200, name
        reads[name] = page.content.decode()
    queue_reader = StaffUserFactory()
    MembershipFactory(user=queue_reader, tenant=tenant, role=TenantMembership.Role.REVIEWER)
    queue = Client()
    queue.force_login(queue_reader)
    promotion = PromotionRequest.objects.get(request_id="prm_legacyraw")
    for name, url in {
        "review queue": reverse("admin:memories_promotionrequest_changelist"),
        "proposal page": reverse("admin:memories_promotionrequest_change", args=[promotion.pk]),
    }.items():
        page = queue.get(url)
        assert page.status_code == 200, name
        reads[name] = page.content.decode()
    staff_export = json.loads(reads["staff export"])
    assert "[REDACTED:secret]" in json.dumps(staff_export["transcripts"], ensure_ascii=False)

    for where, answer in reads.items():
        assert_no_raw(answer, where=where)


@pytest.mark.django_db
def test_exports_and_provenance_redact_rows_not_yet_rewritten(
    tenant, owner: APIClient, written
) -> None:
    # Before redact_existing ran: the views redact on read.
    item = owner.get(reverse("memories:item", kwargs={"item_id": written["item_id"]})).json()
    assert_no_raw(item["provenance"], where="provenance")
    exported = owner.get(reverse("memories:export", kwargs={"user_id": USER})).json()
    assert_no_raw({**exported, "transcripts": None}, where="API export")
    reviewer = StaffUserFactory()
    MembershipFactory(user=reviewer, tenant=tenant, role=TenantMembership.Role.TENANT_ADMIN)
    staff = Client()
    staff.force_login(reviewer)
    page = staff.get(reverse("admin:profiles_enduser_export", args=[written["end_user"].pk]))
    assert page.status_code == 200
    assert_no_raw(page.content.decode(), where="staff export")
    assert "[REDACTED:bank_card]" in page.content.decode()


@pytest.mark.django_db
def test_a_dry_run_counts_and_changes_nothing(tenant, written) -> None:
    before = AuditEvent.objects.count()
    dry = redact_existing("--dry-run")

    assert "would redact" in dry and "Nothing to redact" not in dry
    assert AuditEvent.objects.count() == before
    assert LtmCard.objects.get(memory_id="ltm_legacyraw").entities == BARE
    assert "Nothing to redact" not in redact_existing()
