"""Deletion requests and verified erasure across PostgreSQL, Redis, ES, Milvus and transcripts."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.urls import reverse

from memories.audit.models import AuditEvent
from memories.audit.services import audit_verify
from memories.ltm import search as search_module
from memories.ltm.models import LtmCard
from memories.ltm.search import card_search_index
from memories.ltm.services import CardInput, cards_import, outbox_drain
from memories.ltm.vectors import vector_index
from memories.review import erasure as erasure_module
from memories.review.deletion import deletion_approve, deletion_reject
from memories.review.erasure import erasure_run, receipt_digest
from memories.review.models import DeletionRequest
from memories.stm.store import stm_store
from memoryproject import redis_keys as keys
from memoryproject.errors import Invalid, StoreUnavailable
from memoryproject.redis_client import redis_connection
from memoryproject.redis_keys import Owner
from profiles.models import EndUser, UserPreference
from tests.factories import StaffUserFactory
from transcripts.models import EventRef, Segment, Session
from transcripts.selectors import transcript_verify

SECRET_PHRASE = "my locker code is 4711"


@pytest.fixture
def reviewer(db):
    return StaffUserFactory()


def seed_user(owner, tenant, capture, user: str = "u_42", session: str = "s_1") -> dict:
    """Data about `user` in every store: profile rows, transcript, short-term items, cards,
    the recall context cache."""
    with capture(execute=True):
        profile = owner.patch(
            reverse("profiles:profile", kwargs={"user_id": user}),
            {
                "profile": {"display_name": "Ada", "language": "en"},
                "preferences": [{"key": "preference.answer_style", "value": "brief_first"}],
                "facts": [{"key": "fact.locker", "value": "4711"}],
            },
            format="json",
        )
        assert profile.status_code == 200, profile.json()
        events = owner.post(
            reverse("transcripts:events", kwargs={"session_id": session}),
            {
                "user_id": user,
                "events": [
                    {"role": "user", "content": f"Remember this: {SECRET_PHRASE}."},
                    {"role": "assistant", "content": "Noted."},
                    {"role": "user", "content": "We decided to deploy createOrder on Fridays."},
                ],
            },
            format="json",
        )
        assert events.status_code == 201, events.json()
        proposals = owner.post(
            reverse("memories:proposals"),
            {
                "proposals": [
                    {
                        "user_id": user,
                        "session_id": session,
                        "memory_type": "constraint",
                        "summary": f"Never print {SECRET_PHRASE} in answers",
                        "confidence": 0.9,
                        "importance": 0.8,
                        "verified": True,
                    }
                ]
            },
            format="json",
        )
        assert proposals.status_code == 201, proposals.json()
        recall = owner.post(
            reverse("memories:recall"),
            {"user_id": user, "session_id": session, "query": "what is the locker code?"},
            format="json",
        )
        assert recall.status_code == 200, recall.json()
    cards = cards_import(
        tenant=tenant,
        cards=[
            CardInput(
                memory_type="semantic_fact",
                summary=f"{user} keeps the locker code 4711 in a password manager",
                user_id=user,
            ),
            CardInput(
                memory_type="episodic_case",
                summary=f"{user} once lost access to the locker and reset the code",
                user_id=user,
            ),
        ],
    )
    outbox_drain()
    end_user = EndUser.objects.get(tenant=tenant, external_id=user)
    return {"end_user": end_user, "cards": [c.memory_id for c, _ in cards]}


def test_erasing_a_user_leaves_nothing_in_any_store_and_receipts_it(
    tenant, owner, stranger, reviewer, django_capture_on_commit_callbacks
) -> None:
    seeded = seed_user(owner, tenant, django_capture_on_commit_callbacks)
    other = seed_user(owner, tenant, django_capture_on_commit_callbacks, "u_7", "s_7")
    end_user, owner_key = seeded["end_user"], Owner(tenant.pk, seeded["end_user"].pk)
    session = Session.objects.get(tenant=tenant, external_id="s_1")
    segment_paths = list(Segment.objects.filter(session=session).values_list("path", flat=True))
    assert stm_store().owner_keys(owner_key)
    assert redis_connection().exists(keys.context_document(tenant.pk, "u_42"))
    assert card_search_index().ids_where(tenant_id=str(tenant.pk), user_id="u_42")

    # The agent asks; a stranger cannot ask about this tenant's user, or read the request.
    assert stranger.post(reverse("memories:forget", kwargs={"user_id": "u_42"})).status_code == 404
    asked = owner.post(
        reverse("memories:forget", kwargs={"user_id": "u_42"}),
        {"reason": "user asked"},
        format="json",
    )
    assert asked.status_code == 202, asked.json()
    request_id = asked.json()["request_id"]
    again = owner.post(reverse("memories:forget", kwargs={"user_id": "u_42"}))
    assert again.status_code == 202 and again.json()["request_id"] == request_id
    status_url = reverse("memories:deletion", kwargs={"request_id": request_id})
    assert owner.get(status_url).json()["status"] == "pending"
    assert stranger.get(status_url).status_code == 404
    assert EndUser.objects.filter(pk=end_user.pk).exists()  # nothing happens before review

    with django_capture_on_commit_callbacks(execute=True):
        deletion_approve(
            request=DeletionRequest.objects.get(request_id=request_id), reviewer=reviewer
        )

    body = owner.get(status_url).json()
    assert body["status"] == "done", body
    receipt = body["receipt"]
    assert body["receipt_sha256"] == receipt_digest(receipt)
    stores = receipt["stores"]
    assert stores["redis"]["keys"] > 0 and stores["redis"]["cache_keys"] >= 1
    assert stores["elasticsearch"]["documents"] == 2
    assert stores["milvus"]["vectors"] == 2
    assert stores["transcripts"]["segments"] >= 1 and stores["transcripts"]["events"] >= 3
    assert stores["postgres"]["enduser"] == 1 and stores["postgres"]["userpreference"] == 1
    checks = receipt["checks"]
    assert (
        checks["ok"] and not any(checks["by_id"].values()) and not any(checks["by_hash"].values())
    )
    assert checks["by_vector"]["probes"] == 2 and checks["by_vector"]["hits_of_erased"] == 0
    assert checks["transcripts"]["chains_verified"] == 1

    # Checked again here, independently of the job's own verification:
    assert not EndUser.objects.filter(pk=end_user.pk).exists()
    assert not LtmCard.objects.filter(memory_id__in=seeded["cards"]).exists()
    assert stm_store().owner_keys(owner_key) == []
    assert not redis_connection().exists(keys.context_document(tenant.pk, "u_42"))
    assert card_search_index().get_many(ids=seeded["cards"]) == {}
    assert vector_index().ids_where(tenant_id=str(tenant.pk), ids=seeded["cards"]) == []
    session.refresh_from_db()
    assert session.end_user is None and session.erased_at is not None
    assert transcript_verify(session=session).ok
    assert not EventRef.objects.filter(session=session).exists()
    storage_root = Path(django_settings.STORAGES["transcripts"]["OPTIONS"]["location"])
    for path in segment_paths:
        assert not (storage_root / path).exists()
    for tombstone in Segment.objects.filter(session=session):
        assert SECRET_PHRASE not in (storage_root / tombstone.path).read_text()
    # The other user of the tenant keeps everything.
    assert LtmCard.objects.filter(memory_id__in=other["cards"]).count() == 2
    assert stm_store().owner_keys(Owner(tenant.pk, other["end_user"].pk))
    assert len(card_search_index().get_many(ids=other["cards"])) == 2
    # Appending to the erased session is refused; the audit chain holds and says who did it.
    gone = owner.post(
        reverse("transcripts:events", kwargs={"session_id": "s_1"}),
        {"user_id": "u_42", "events": [{"role": "user", "content": "hello"}]},
        format="json",
    )
    assert gone.status_code == 410
    assert audit_verify(tenant=tenant).ok
    actions = list(AuditEvent.objects.filter(tenant=tenant).values_list("action", flat=True))
    assert {"request_deletion", "approve", "erase"} <= set(actions)


def test_erasure_resumes_after_a_store_was_down(
    tenant, owner, reviewer, settings, django_capture_on_commit_callbacks
) -> None:
    seeded = seed_user(owner, tenant, django_capture_on_commit_callbacks)
    asked = owner.post(reverse("memories:forget", kwargs={"user_id": "u_42"}))
    request = DeletionRequest.objects.get(request_id=asked.json()["request_id"])
    deletion_approve(request=request, reviewer=reviewer)  # commit callbacks not run: no job yet

    real_url = settings.ELASTICSEARCH_URL
    settings.ELASTICSEARCH_URL = "http://127.0.0.1:9"  # nothing listens there
    search_module.card_search_index.cache_clear()
    try:
        with pytest.raises(StoreUnavailable):
            erasure_run(request_id=request.request_id)
    finally:
        settings.ELASTICSEARCH_URL = real_url
        search_module.card_search_index.cache_clear()

    request.refresh_from_db()
    assert request.status == "erasing" and request.attempts == 1
    assert "Elasticsearch" in request.last_error
    assert set(request.progress["steps"]) == {"redis"}  # what was done stays done
    assert EndUser.objects.filter(pk=seeded["end_user"].pk).exists()

    assert erasure_run(request_id=request.request_id) == "done"

    request.refresh_from_db()
    assert request.status == "done" and request.receipt["checks"]["ok"]
    assert request.receipt["stores"]["elasticsearch"]["documents"] == 2
    assert "probe_vectors" not in str(request.progress)  # erased content is not kept
    assert card_search_index().get_many(ids=seeded["cards"]) == {}


def test_card_and_preference_deletions_go_through_review(
    tenant, owner, stranger, reviewer, django_capture_on_commit_callbacks
) -> None:
    seeded = seed_user(owner, tenant, django_capture_on_commit_callbacks)
    card_id = seeded["cards"][0]
    profile = owner.get(reverse("profiles:profile", kwargs={"user_id": "u_42"})).json()
    pref_id = profile["preferences"][0]["id"]

    assert stranger.delete(reverse("memories:ltm-card", args=[card_id])).status_code == 404
    assert stranger.delete(reverse("memories:fact", args=[pref_id])).status_code == 404
    assert owner.delete(reverse("memories:fact", args=["fact_999999"])).status_code == 404
    card_asked = owner.delete(reverse("memories:ltm-card", args=[card_id]))
    pref_asked = owner.delete(reverse("memories:fact", args=[pref_id]))
    assert card_asked.status_code == pref_asked.status_code == 202
    assert pref_asked.json()["kind"] == "preference"
    # Until a reviewer decides, the card is still found.
    assert card_search_index().get_many(ids=[card_id])

    card_request = DeletionRequest.objects.get(request_id=card_asked.json()["request_id"])
    with pytest.raises(Invalid):
        deletion_reject(request=card_request, reviewer=reviewer, reason="")
    deletion_reject(request=card_request, reviewer=reviewer, reason="still needed for audits")
    assert card_search_index().get_many(ids=[card_id])
    assert LtmCard.objects.filter(memory_id=card_id).exists()

    with django_capture_on_commit_callbacks(execute=True):
        deletion_approve(
            request=DeletionRequest.objects.get(request_id=pref_asked.json()["request_id"]),
            reviewer=reviewer,
        )
    done = owner.get(
        reverse("memories:deletion", kwargs={"request_id": pref_asked.json()["request_id"]})
    ).json()
    assert done["status"] == "done" and done["receipt"]["checks"]["ok"]
    assert not UserPreference.objects.filter(
        end_user=seeded["end_user"], key="preference.answer_style"
    ).exists()
    after = owner.get(reverse("profiles:profile", kwargs={"user_id": "u_42"})).json()
    assert after["preferences"] == []

    # A card deletion approved: gone from the ledger and both indexes.
    again = owner.delete(reverse("memories:ltm-card", args=[card_id]))
    with django_capture_on_commit_callbacks(execute=True):
        deletion_approve(
            request=DeletionRequest.objects.get(request_id=again.json()["request_id"]),
            reviewer=reviewer,
        )
    assert not LtmCard.objects.filter(memory_id=card_id).exists()
    assert card_search_index().get_many(ids=[card_id]) == {}
    assert vector_index().ids_where(tenant_id=str(tenant.pk), ids=[card_id]) == []


def test_the_audit_chain_detects_an_edited_row(tenant, owner, reviewer) -> None:
    EndUser.objects.create(tenant=tenant, external_id="u_1")
    EndUser.objects.create(tenant=tenant, external_id="u_2")
    for user in ("u_1", "u_2"):
        owner.post(
            reverse("memories:forget", kwargs={"user_id": user}),
            {"reason": "asked"},
            format="json",
        )
    assert audit_verify(tenant=tenant).ok
    event = AuditEvent.objects.filter(tenant=tenant).order_by("seq").first()

    # Updates and deletes are refused by the database itself, whoever asks.
    with pytest.raises(Exception, match="append-only"), connection.cursor() as cursor:
        cursor.execute("SAVEPOINT before_edit")
        try:
            cursor.execute(
                "UPDATE memories_auditevent SET reason = 'nothing' WHERE id = %s", [event.pk]
            )
        finally:
            cursor.execute("ROLLBACK TO SAVEPOINT before_edit")

    # Someone with the power to bypass the trigger edits a row anyway: verification notices.
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")  # superuser only
        cursor.execute(
            "UPDATE memories_auditevent SET reason = 'nothing to see' WHERE id = %s", [event.pk]
        )
        cursor.execute("SET LOCAL session_replication_role = DEFAULT")
    report = audit_verify(tenant=tenant)
    assert not report.ok and report.broken_at == event.seq
    assert "hash" in report.problem


def test_the_audit_trail_keeps_no_external_id_of_an_erased_user(
    tenant, owner, reviewer, django_capture_on_commit_callbacks
) -> None:
    seed_user(owner, tenant, django_capture_on_commit_callbacks, user="ada@example.com")
    asked = owner.post(reverse("memories:forget", kwargs={"user_id": "ada@example.com"}))
    with django_capture_on_commit_callbacks(execute=True):
        deletion_approve(
            request=DeletionRequest.objects.get(request_id=asked.json()["request_id"]),
            reviewer=reviewer,
        )

    trail = list(AuditEvent.objects.filter(tenant=tenant).values())
    assert trail and "ada@example.com" not in str(trail)
    assert {"request_deletion", "approve", "erase"} <= {e["action"] for e in trail}


def test_a_session_started_during_the_erasure_is_erased_too(
    tenant, owner, reviewer, django_capture_on_commit_callbacks
) -> None:
    seed_user(owner, tenant, django_capture_on_commit_callbacks)
    asked = owner.post(reverse("memories:forget", kwargs={"user_id": "u_42"}))
    request = DeletionRequest.objects.get(request_id=asked.json()["request_id"])
    deletion_approve(request=request, reviewer=reviewer)
    real_step = erasure_module.STEPS

    def agent_writes_meanwhile(request, inventory):  # after the transcripts step, before postgres
        owner.post(
            reverse("transcripts:events", kwargs={"session_id": "s_late"}),
            {"user_id": "u_42", "events": [{"role": "user", "content": SECRET_PHRASE}]},
            format="json",
        )
        return {}

    steps = [(n, f) for n, f in real_step if n != "postgres"]
    steps.append(("meanwhile", agent_writes_meanwhile))
    steps.append(next((n, f) for n, f in real_step if n == "postgres"))
    erasure_module.STEPS = tuple(steps)
    try:
        assert erasure_run(request_id=request.request_id) == "done"
    finally:
        erasure_module.STEPS = real_step

    late = Session.objects.get(tenant=tenant, external_id="s_late")
    assert late.erased_at is not None and late.end_user is None
    assert transcript_verify(session=late).ok
    storage_root = Path(django_settings.STORAGES["transcripts"]["OPTIONS"]["location"])
    for segment in Segment.objects.filter(session=late):
        assert SECRET_PHRASE not in (storage_root / segment.path).read_text()
    request.refresh_from_db()
    assert request.receipt["stores"]["postgres"]["late_sessions"] == 1
