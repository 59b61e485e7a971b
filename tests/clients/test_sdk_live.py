"""Every SDK method against the running service; each answer fits the SDK's model exactly."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from agent_memory_client import (
    AsyncMemoryClient,
    Conflict,
    InvalidRequest,
    MemoryClient,
    NotFound,
    PermissionDenied,
    RetryPolicy,
    Throttled,
    Unauthenticated,
)
from agent_memory_client import models as m
from django.contrib.auth import get_user_model
from django.db import transaction

from memories.ltm.models import LtmCard
from memories.review.deletion import deletion_approve
from memories.review.models import DeletionRequest
from memories.review.promotion_scan import promotion_scan
from tests.clients.shapes import assert_fits
from transcripts.models import Session

USER, SESSION = "u-sdk", "s-sdk"


def _converse(memory: MemoryClient) -> m.AppendResponse:
    return memory.append_events(
        SESSION,
        user_id=USER,
        events=[
            {"role": "user", "content": "Please remember that I deploy with Terraform."},
            {"role": "assistant", "content": "Noted: you deploy with Terraform."},
        ],
    )


def test_every_operation_answers_in_its_model(memory: MemoryClient, tenant) -> None:
    appended = _converse(memory)
    assert_fits(appended, m.AppendResponse)
    assert appended["created"] and appended["event_count"] == 2
    assert all(e["id"].startswith("evt-") for e in appended["events"])

    replay = memory.replay_events(SESSION, limit=1)
    assert_fits(replay, m.ReplayResponse)
    assert replay["has_more"] and len(replay["events"]) == 1
    assert [e["seq"] for e in memory.iter_events(SESSION, page_size=1)] == [1, 2]
    verified = memory.verify_session(SESSION)
    assert_fits(verified, m.VerifyResponse)
    assert verified["ok"]

    profile = memory.update_profile(
        USER,
        profile={"answer_style": "concise"},
        facts=[{"key": "project_metadata.default_env", "value": "staging"}],
    )
    assert_fits(profile, m.ProfilePatchResponse)
    assert_fits(memory.get_profile(USER), m.ProfileResponse)
    fact_id = profile["facts"][0]["id"]

    proposal: m.Proposal = {
        "user_id": USER,
        "session_id": SESSION,
        "memory_type": "fact",
        "summary": "The user deploys with Terraform.",
        "remember": True,
        "confidence": 0.9,
        "importance": 0.8,
    }
    dry = memory.propose_memories([proposal], dry_run=True)
    assert_fits(dry, m.ProposalsResponse)
    assert dry["dry_run"] and dry["results"][0]["item_id"] is None
    proposed = memory.propose_memories([proposal])
    assert_fits(proposed, m.ProposalsResponse)
    item_id = proposed["results"][0]["item_id"]
    assert item_id
    page = memory.list_stm(user_id=USER)
    assert_fits(page, m.StmPage)
    assert item_id in [i["id"] for i in page["items"]]
    assert_fits(memory.get_memory(item_id), m.StmItemWithProvenance)
    changed = memory.update_memory(item_id, tags=["deploy"], expected_version=1)
    assert_fits(changed, m.MemoryUpdateResponse)
    assert (changed["outcome"], changed["item"]["version"]) == ("updated", 2)
    with pytest.raises(Conflict):
        memory.update_memory(item_id, tags=["again"], expected_version=1)

    imported = memory.import_cards(
        [
            {
                "id": "card-terraform",
                "user_id": USER,
                "memory_type": "procedure",
                "title": "Deploying",
                "summary": "Deploys go through Terraform plan, then apply after review.",
            }
        ]
    )
    assert_fits(imported, m.CardImportResponse)
    memory_id = imported["cards"][0]["memory_id"]
    assert_fits(memory.get_card(memory_id), m.Card)
    cards = memory.list_cards(user_id=USER)
    assert_fits(cards, m.CardPage)
    assert [c["memory_id"] for c in cards["cards"]] == [memory_id]
    edited = memory.update_card(memory_id, tags=["terraform"])
    assert_fits(edited, m.CardUpdateResponse)
    assert (edited["outcome"], edited["card"]["version"]) == ("updated", 2)
    everything = memory.get_user_memories(USER, limit=10)
    assert_fits(everything, m.UserMemories)
    assert [c["memory_id"] for c in everything["cards"]] == [memory_id]
    assert item_id in [i["id"] for i in everything["items"]]
    assert everything["profile"]["profile"]["answer_style"] == "concise"
    assert {
        entry["id"] if "id" in entry else entry["memory_id"]
        for entry in memory.iter_user_memories(USER, page_size=1)
    } >= {item_id, memory_id}
    found = memory.search_ltm(query="Terraform apply", mode="lexical", user_id=USER)
    assert_fits(found, m.LtmSearchResponse)
    assert memory_id in [h["memory_id"] for h in found["hits"]]

    recalled = memory.recall(
        user_id=USER, session_id=SESSION, query="How do I deploy?", layers=["redis", "ltm"]
    )
    assert_fits(recalled, m.RecallResponse)
    assert "Terraform" in recalled["injection_text"]
    explained = memory.recall(user_id=USER, session_id=SESSION, query="deploy", explain=True)
    assert_fits(explained, m.RecallResponse)
    routing = explained["explain"]["routing"]
    assert {"postgres", "redis", "ltm", "history"} <= set(routing) and "total" in (
        explained["explain"]["latency_ms"]
    )
    assert explained["profile_block"]["answer_style"] == "concise"
    assert explained["constraints_block"]["facts"] == [
        {"key": "project_metadata.default_env", "value": "staging"}
    ]
    assert explained["runtime_metadata_block"]["default_env"] == "staging"
    compressed = memory.compress_session(SESSION, budget_tokens=500, user_id=USER)
    assert_fits(compressed, m.CompressResponse)
    assert compressed["within_budget"]

    card_deletion = memory.delete_card(memory_id, reason="outdated")
    assert_fits(card_deletion, m.Deletion)
    assert card_deletion["status"] == "pending" and card_deletion["reason"] == "outdated"
    assert memory.get_card(memory_id)["status"] == "active"  # nothing removed before review
    assert memory.delete_card(memory_id)["request_id"] == card_deletion["request_id"]
    assert_fits(memory.get_deletion(card_deletion["request_id"]), m.Deletion)
    fact_deletion = memory.delete_fact(fact_id)
    assert_fits(fact_deletion, m.Deletion)
    assert fact_deletion["receipt"] is None
    reviewer = get_user_model().objects.create_user("reviewer-sdk")
    with transaction.atomic():  # the erasure job runs (eagerly) once the approval commits
        deletion_approve(
            request=DeletionRequest.objects.get(request_id=fact_deletion["request_id"]),
            reviewer=reviewer,
        )
    erased = memory.get_deletion(fact_deletion["request_id"])
    assert_fits(erased, m.Deletion)
    receipt = erased["receipt"]
    assert erased["status"] == "done" and receipt is not None
    assert receipt["checks"]["ok"] and receipt["approved_by"] == "reviewer-sdk"
    assert receipt["stores"]["postgres"]

    # A remembered item is proposed for long-term memory, the trigger saying why.
    assert promotion_scan(tenant=tenant, now=time.time() + 86_400).proposed >= 1
    promotions = memory.list_promotions(limit=5)
    assert_fits(promotions, m.PromotionsResponse)
    [promotion] = [
        p
        for p in promotions["promotions"]
        if p["proposal"].get("summary") == "The user deploys with Terraform."
    ]
    assert "remember" in promotion["triggers"] and promotion["path"] == "ltm"
    export = memory.export_user(USER)
    assert_fits(export, m.UserExport)
    assert item_id in [i["id"] for i in export["short_term"]]

    memory.delete_memory(item_id)
    with pytest.raises(NotFound):
        memory.get_memory(item_id)
    forget = memory.forget_user(USER)
    assert_fits(forget, m.Deletion)
    assert forget["kind"] == "user"
    assert DeletionRequest.objects.filter(tenant=tenant).count() == 3


class _AnswerLost(httpx.HTTPTransport):
    """Delivers each request to the service, then loses the first answer (a timeout)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        self.sent += 1
        if self.sent == 1:
            response.read()
            raise httpx.ReadTimeout("answer lost", request=request)
        return response


def test_an_append_whose_answer_was_lost_is_retried_without_writing_twice(
    service_url: str, api_key: str, tenant
) -> None:
    transport = _AnswerLost()
    with MemoryClient(
        service_url, api_key=api_key, transport=transport, retry=RetryPolicy(backoff=0.01)
    ) as memory:
        answer = _converse(memory)
        assert transport.sent == 2
        assert answer["created"] is False  # the service had stored the first attempt
        assert answer["event_count"] == 2
        assert len(list(memory.iter_events(SESSION))) == 2
    assert Session.objects.get(tenant=tenant, external_id=SESSION).event_count == 2


def test_errors_are_exceptions_by_code_and_change_nothing(
    memory: MemoryClient, stranger_memory: MemoryClient, service_url: str, tenant, key_for
) -> None:
    first = _converse(memory)
    card_id = memory.import_cards([{"memory_type": "knowledge", "summary": "Staging is eu-1."}])[
        "cards"
    ][0]["memory_id"]

    with pytest.raises(NotFound) as missing:
        stranger_memory.get_card(card_id)
    assert missing.value.status == 404 and missing.value.code == "not_found"
    with pytest.raises(InvalidRequest) as invalid:
        memory.append_events(SESSION, user_id=USER, events=[{"role": "robot", "content": "x"}])  # type: ignore[typeddict-item]
    assert invalid.value.code == "invalid" and "events.0.role" in invalid.value.fields
    with pytest.raises(Conflict) as conflict:
        memory.append_events(
            SESSION,
            user_id=USER,
            events=[{"id": first["events"][0]["id"], "role": "user", "content": "other"}],
        )
    assert conflict.value.code == "duplicate_event_id"
    reader = MemoryClient(service_url, api_key=key_for(tenant, ("read",)))
    with reader, pytest.raises(PermissionDenied):
        reader.import_cards([{"memory_type": "knowledge", "summary": "Nope."}])
    nobody = MemoryClient(service_url, api_key="not-a-key")
    with nobody, pytest.raises(Unauthenticated):
        nobody.get_profile(USER)
    assert Session.objects.get(tenant=tenant, external_id=SESSION).event_count == 2
    assert LtmCard.objects.filter(tenant=tenant).count() == 1


def test_throttled_calls_wait_what_retry_after_says(
    memory: MemoryClient, service_url: str, api_key: str, settings
) -> None:
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    waits: list[float] = []
    with MemoryClient(
        service_url, api_key=api_key, retry=RetryPolicy(retries=2), sleep=waits.append
    ) as patient:
        with pytest.raises(NotFound):
            patient.get_card("card-none")  # the minute's one request
        with pytest.raises(Throttled) as throttled:
            patient.get_card("card-none")
    retry_after = throttled.value.retry_after
    assert retry_after is not None and 1 <= retry_after <= 61
    assert len(waits) == 2 and all(abs(w - retry_after) <= 2 for w in waits)


def test_the_async_client_speaks_the_same_api(service_url: str, api_key: str) -> None:
    async def scenario() -> dict[str, Any]:
        async with AsyncMemoryClient(service_url, api_key=api_key) as memory:
            appended = await memory.append_events(
                SESSION, user_id=USER, events=[{"role": "user", "content": "I use Python 3.12."}]
            )
            assert_fits(appended, m.AppendResponse)
            events = [e async for e in memory.iter_events(SESSION)]
            assert [e["content"] for e in events] == ["I use Python 3.12."]
            with pytest.raises(NotFound):
                await memory.get_card("card-none")
            with pytest.raises(NotFound):
                await memory.update_memory("stm_1_0123456789abcdef", tags=["x"])
            with pytest.raises(NotFound):
                await memory.update_card("ltm_none", tags=["x"])
            assert_fits(await memory.list_cards(shared=True), m.CardPage)
            everything = await memory.get_user_memories(USER)
            assert_fits(everything, m.UserMemories)
            assert [e async for e in memory.iter_user_memories(USER)] == everything["items"]
            return dict(await memory.recall(user_id=USER, session_id=SESSION, query="python"))

    recalled = asyncio.run(scenario())
    assert_fits(recalled, m.RecallResponse)
