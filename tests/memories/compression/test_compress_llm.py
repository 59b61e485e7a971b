"""The optional model summariser of session compression, against a fake chat endpoint served
over real HTTP (a paid remote service is the one thing tests fake)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.memories.compression.test_compress import (  # noqa: F401  (fixtures)
    NEAR_FIELD,
    assert_everything_accounted_for,
    assert_near_field_verbatim,
    compress,
    session,
)
from tests.memories.write.test_llm_extractor import FakeChatServer, chat_server  # noqa: F401
from transcripts.models import Session

SECTIONS = {
    "task_goal": [{"text": "Find why createOrder times out in prod-k8s", "refs": ["m_goal"]}],
    "work_done": [
        {"text": "Component logs showed nothing conclusive", "refs": ["m_log_0", "m_log_1"]},
        {"text": "db-primary-01 is healthy: 37/500 connections", "refs": ["m_db"]},
        {"text": "A line citing nothing real", "refs": ["m_made_up"]},
    ],
    "decisions_and_constraints": [
        {"text": "Never restart prod pods without approval", "refs": ["m_ask_db", "bogus"]}
    ],
    "unknown_section": [{"text": "ignored", "refs": ["m_goal"]}],
}


@pytest.fixture
def model_summariser(settings, chat_server: FakeChatServer) -> FakeChatServer:  # noqa: F811
    settings.LLM_SUMMARISER_URL = chat_server.base_url
    settings.LLM_SUMMARISER_MODEL = "summary-model"
    return chat_server


def test_the_model_writes_the_sections_and_every_line_cites_the_transcript(
    owner: APIClient,
    session: Session,  # noqa: F811
    model_summariser: FakeChatServer,
) -> None:
    model_summariser.answer({"sections": SECTIONS})
    roomy = compress(owner, 200_000)
    assert model_summariser.requests == []  # nothing to fold: the model is not asked

    body = compress(owner, roomy["tokens"]["near_field"] + 160)

    [request] = model_summariser.requests
    assert request.body["model"] == "summary-model"
    prompt = request.body["messages"][1]["content"]
    assert '"id":"m_db"' in prompt and "Short-term memory items" in prompt
    assert body["summary"]["summariser"] == "llm" and body["degraded"] == []
    sections = body["summary"]["sections"]
    assert sections["task_goal"] == [
        {"text": "Find why createOrder times out in prod-k8s", "refs": ["m_goal"]}
    ]
    work = [line["text"] for line in sections["work_done"]]
    assert "A line citing nothing real" not in work  # no valid ref: dropped
    assert sections["decisions_and_constraints"][0]["refs"] == ["m_ask_db"]
    assert "unknown_section" not in sections
    assert body["within_budget"] is True
    assert_near_field_verbatim(body)
    assert_everything_accounted_for(body, session)


def test_a_failing_model_falls_back_to_the_extractive_summary(
    owner: APIClient,
    session: Session,  # noqa: F811
    model_summariser: FakeChatServer,
) -> None:
    model_summariser.answer({"error": "overloaded"}, status=503)
    roomy = compress(owner, 200_000)

    body = compress(owner, roomy["tokens"]["near_field"] + 160)

    assert len(model_summariser.requests) == 1
    assert body["degraded"] == ["summariser"]
    assert body["summary"]["summariser"] == "extractive"
    decisions = " ".join(
        line["text"] for line in body["summary"]["sections"]["decisions_and_constraints"]
    )
    assert "Never restart prod pods without approval" in decisions
    assert body["within_budget"] is True
    assert set(body["near_field"]) == set(NEAR_FIELD)
