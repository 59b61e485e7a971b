"""Extraction keeps what was said and only that, through the real path: events appended over
the API, extracted by the (eager) Celery task, read back from the user's short-term memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.policies.models import PromotionPolicy
from memories.review.models import PromotionRequest
from memories.review.promotion_scan import promotion_scan, promotion_triggers
from memories.stm.selectors import stm_items_for
from memories.stm.store import now_seconds, stm_store
from memories.vocabulary import default_vocabulary
from memories.write.extractors import ExtractionContext, RuleExtractor
from memories.write.services import proposals_submit
from memories.write.statements import read_sentence
from memoryproject.redis_keys import Owner
from profiles.models import EndUser

LABELLED = Path(__file__).resolve().parents[2] / "data" / "extraction_labelled.jsonl"
PROPOSALS = reverse("memories:proposals")
HOUR = 3600.0


def say(client: APIClient, user: str, session: str, *texts: str) -> None:
    response = client.post(
        reverse("transcripts:events", kwargs={"session_id": session}),
        {"user_id": user, "events": [{"role": "user", "content": text} for text in texts]},
        format="json",
    )
    assert response.status_code in (200, 201), response.json()


def kept(tenant, user: str) -> list:
    return stm_items_for(tenant=tenant, user_id=user, limit=200).items


def by_meaning(item) -> bool:
    return str(item.detail.get("reason", "")).startswith("reads as a")


def types_of(items: list) -> list[str]:
    found = {item.memory_type for item in items} & {"constraint", "preference", "fact", "decision"}
    return sorted(found | ({"remember"} if any(item.remember for item in items) else set()))


LABELLED_ROWS = {
    row["id"]: row for row in map(json.loads, LABELLED.read_text(encoding="utf-8").splitlines())
}
# The design's examples and a sample of both languages and every label, LoCoMo turns included.
SAMPLE = [
    *(row_id for row_id, row in LABELLED_ROWS.items() if row["source"] == "design"),
    *("x015", "x016", "x022", "x036", "x038", "x051", "x052", "x067", "x070", "x078", "x085"),
    *("x094", "x121", "x124", "x136", "x142", "x160", "x161", "x165", "x170", "x173", "x177"),
    *("x181", "x186", "x189", "x197", "x209", "x224", "x227", "x232", "x262", "x337", "x354"),
]


def test_the_labelled_set_is_large_bilingual_and_split() -> None:
    rows = list(LABELLED_ROWS.values())
    assert len(rows) >= 300
    assert {row["lang"] for row in rows} == {"zh", "en"}
    assert {row["split"] for row in rows} == {"tune", "check"}
    assert sum(row["source"].startswith("locomo:") for row in rows) >= 100
    labels = {label for row in rows for label in row["labels"]}
    assert labels == {"constraint", "remember", "preference", "fact", "decision"}


@pytest.mark.django_db
def test_labelled_sentences_give_their_types(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        for row_id in SAMPLE:
            say(owner, f"u-{row_id}", f"s-{row_id}", LABELLED_ROWS[row_id]["text"])

    # The word lists give exactly the labelled types; reading by meaning may add one where
    # they found nothing (benchmarks/extraction.py measures its precision), never lose one.
    wrong = {
        row_id: (LABELLED_ROWS[row_id]["text"], types_of(items))
        for row_id in SAMPLE
        if (items := kept(tenant, f"u-{row_id}"))
        and (
            types_of([i for i in items if not by_meaning(i)]) != LABELLED_ROWS[row_id]["labels"]
            and types_of(items) != LABELLED_ROWS[row_id]["labels"]
        )
    }
    missing = [
        row_id
        for row_id in SAMPLE
        if LABELLED_ROWS[row_id]["labels"] and not kept(tenant, f"u-{row_id}")
    ]
    assert wrong == {} and missing == []
    keyed = [row_id for row_id in SAMPLE if LABELLED_ROWS[row_id].get("key")]
    assert keyed
    for row_id in keyed:
        keys = {item.canonical_fact_key for item in kept(tenant, f"u-{row_id}")}
        assert LABELLED_ROWS[row_id]["key"] in keys, row_id


@pytest.mark.django_db
def test_friendly_dont_and_i_remember_make_no_constraint_or_request(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        say(owner, "u_1", "s_1", "Don't worry about the snacks.", "Never mind.")
        say(owner, "u_1", "s_1", "I remember this moment.", "Don't forget to take pictures!")
        say(owner, "u_1", "s_1", "I never thought I'd say this.", "不要担心零食的事")
        say(owner, "u_1", "s_1", "我记得那天下着大雨", "别忘了多拍几张照片")

    assert kept(tenant, "u_1") == []

    with django_capture_on_commit_callbacks(execute=True):
        say(owner, "u_2", "s_2", "Don't restart payment-service during business hours.")
        say(owner, "u_2", "s_2", "Please remember that I'm allergic to peanuts.")

    items = kept(tenant, "u_2")
    constraint = next(item for item in items if item.memory_type == "constraint")
    assert "instruction" in constraint.detail["reason"]
    remembered = next(item for item in items if item.remember)
    assert remembered.memory_type == "fact" and "peanuts" in remembered.summary


# Said to a friend: advice about the listener's own life, questions, idioms, shared plans.
NOT_INSTRUCTIONS = [
    "Make sure you watch other peoples videos first so you get a handle on your audience!",
    "Make sure yours stands out.",
    "Never leave your dog alone in a hot car.",
    "You must try the tacos at that place downtown!",
    "Don't work too hard!",
    "Make sure you send me pics!",
    "Only use fresh basil, trust me, it makes all the difference!",
    "Don't you think it's a bit early?",
    "Oh, you shouldn't have!",
    "We must hang out more often!",
    "Don't even get me started on the traffic!",
    "你一定要去尝尝那家火锅店！",
    "千万不要空腹去体检哦",
    "你不觉得这样太早了吗？",
    "我们必须庆祝一下！",
]
# Instructions to the assistant in the same words: "you", "your", a question mark.
INSTRUCTIONS = [
    "Make sure your answers cite the source document.",
    "Make sure you check the staging logs first so you don't restart the wrong pod.",
    "Never paste your reasoning into the final answer.",
    "Don't tell me it works until the tests pass.",
    "Never deploy on Fridays, ok?",
    "Could you never use tables in your replies?",
    "你的回答里不要出现客户的手机号",
    "不要删除线上数据，好吗？",
    "你能不能别再用表格了？",
]


@pytest.mark.django_db
def test_advice_questions_and_plans_said_to_a_friend_are_no_constraint(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        for n, text in enumerate(NOT_INSTRUCTIONS):
            say(owner, f"u_n{n}", f"s_n{n}", text)
        for n, text in enumerate(INSTRUCTIONS):
            say(owner, f"u_i{n}", f"s_i{n}", text)

    kept_not = {text: types_of(kept(tenant, f"u_n{n}")) for n, text in enumerate(NOT_INSTRUCTIONS)}
    assert {text: found for text, found in kept_not.items() if "constraint" in found} == {}
    kept_yes = {text: types_of(kept(tenant, f"u_i{n}")) for n, text in enumerate(INSTRUCTIONS)}
    assert {text: found for text, found in kept_yes.items() if found != ["constraint"]} == {}


def test_advice_and_questions_say_why_they_are_no_instruction() -> None:
    vocabulary = default_vocabulary()

    advice = read_sentence("Make sure you stretch before your run tomorrow", vocabulary, end="!")
    question = read_sentence("So you must never go back there", vocabulary, end="?")
    tagged = read_sentence("Never deploy on Fridays, ok", vocabulary, end="?")

    assert (advice.kind, question.kind, tagged.kind) == ("", "", "constraint")
    assert advice.reason.startswith("advice to the person spoken to about their own life")
    assert question.reason == "a question, not an instruction"
    # a tenant's own advice pattern reads its users' way of giving advice
    extended = vocabulary.extended([("advice", r"\bdeploy on fridays\b")])
    assert read_sentence("Never deploy on Fridays", extended, end=".").kind == ""


@pytest.mark.django_db
def test_stated_facts_are_kept_in_both_languages(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    sentences = {
        "I adopted a puppy last week.": "first-hand",
        "Our staging database is Postgres 15.": "first-hand",
        "我们的项目用 Python 3.11，部署在 Kubernetes 上": "first-hand",
    }
    with django_capture_on_commit_callbacks(execute=True):
        for n, sentence in enumerate(sentences):
            say(owner, f"u_{n}", f"s_{n}", sentence)

    for n, (sentence, reason) in enumerate(sentences.items()):
        (item,) = kept(tenant, f"u_{n}")
        assert (item.memory_type, item.subtype, item.verified) == ("fact", "stated", True)
        assert item.summary == sentence.rstrip(".")
        assert reason in item.detail["reason"]


# --- the proposals API and the transcript path judge a statement alike ----------------------
STATEMENTS = [
    ("Remember that our release window is Tuesday night.", "fact", True),
    ("记住这个：我们项目的默认环境是 prod-cn", "fact", True),
    ("I prefer short answers in bullet points.", "preference", False),
    ("以后都用中文回答", "preference", False),
    ("I adopted a puppy last week.", "fact", False),
    ("我上周领养了一只小狗", "fact", False),
    ("Never run migrations on Fridays.", "constraint", False),
    ("部署前必须先跑完集成测试", "constraint", False),
]


@pytest.mark.django_db
def test_the_proposals_api_and_the_transcript_path_decide_alike(
    tenant, trusted_owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    # A key its tenant trusts to write the user's word: an untrusted agent's proposal claims
    # less confidence, and its rules wait for a reviewer (test_verification.py).
    owner = trusted_owner
    vocabulary = default_vocabulary()
    for n, (sentence, memory_type, remember) in enumerate(STATEMENTS):
        # the transcript path
        with django_capture_on_commit_callbacks(execute=True):
            say(owner, f"ut_{n}", f"st_{n}", sentence)
        (item,) = kept(tenant, f"ut_{n}")
        context = ExtractionContext(
            user_id=f"uf_{n}", session_id=f"sf_{n}", task_id="", vocabulary=vocabulary
        )
        event = {"seq": 1, "id": "m1", "role": "user", "content": sentence}
        (candidate,) = RuleExtractor().extract(events=[event], context=context)
        (extracted,) = proposals_submit(tenant=tenant, candidates=[candidate], dry_run=True)
        # the same statement proposed by an agent, with nothing but its type and the request
        proposal = {
            "user_id": f"ua_{n}",
            "session_id": f"sa_{n}",
            "memory_type": memory_type,
            "summary": sentence,
            "remember": remember,
        }
        response = owner.post(PROPOSALS, {"proposals": [proposal]}, format="json")
        (result,) = response.json()["results"]

        assert item.memory_type == memory_type and item.remember == remember, sentence
        assert result["accepted"] is True and result["score"] >= 3, (sentence, result)
        assert (result["score"], result["ttl_minutes"]) == (
            extracted.decision.score,
            extracted.decision.ttl_minutes,
        ), sentence
        assert round((item.expires_at - item.created_at) / 60) == result["ttl_minutes"]
        api_item = owner.get(reverse("memories:item", kwargs={"item_id": result["item_id"]}))
        assert api_item.json()["canonical_fact_key"] == item.canonical_fact_key
        assert (api_item.json()["remember"], api_item.json()["verified"]) == (remember, True)


@pytest.mark.django_db
def test_a_guess_is_refused_alike_by_both_paths(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        say(owner, "ut", "st", "I think the cache is stale.")
    proposal = {"user_id": "ua", "session_id": "sa", "memory_type": "fact"}
    proposal["summary"] = "I think the cache is stale."
    (result,) = owner.post(PROPOSALS, {"proposals": [proposal]}, format="json").json()["results"]

    assert kept(tenant, "ut") == []
    assert (result["accepted"], result["refusal"]) == (False, "score_below_threshold")
    assert kept(tenant, "ua") == []


# --- promotion ----------------------------------------------------------------------------------
@pytest.mark.django_db
def test_remembering_the_default_environment_proposes_a_profile_fact_with_its_key(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        say(owner, "u_42", "s_1", "记住这个：我们项目的默认环境是 prod-cn")
    (item,) = kept(tenant, "u_42")
    assert (item.canonical_fact_key, item.fact_value, item.remember) == (
        "project_metadata.default_env",
        "prod-cn",
        True,
    )

    assert promotion_scan(tenant=tenant, now=now_seconds() + HOUR).proposed == 1

    (request,) = PromotionRequest.objects.filter(tenant=tenant)
    assert request.path == PromotionRequest.Path.POSTGRES
    assert request.proposal == {
        "key": "project_metadata.default_env",
        "value": "prod-cn",
        "target": "fact",
    }
    assert "remember" in request.evidence["triggers"]


@pytest.mark.django_db
def test_a_preference_promotes_as_a_profile_fact_once_old_enough(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        say(owner, "u_42", "s_1", "I prefer short answers in bullet points.")
    (item,) = kept(tenant, "u_42")

    assert promotion_scan(tenant=tenant, now=item.created_at + HOUR).proposed == 0  # too young
    assert promotion_scan(tenant=tenant, now=item.created_at + 25 * HOUR).proposed == 1

    (request,) = PromotionRequest.objects.filter(tenant=tenant)
    assert request.path == PromotionRequest.Path.POSTGRES
    assert request.proposal["key"] == "preference.answer_style"
    assert request.proposal["target"] == "preference"


@pytest.mark.django_db
def test_a_recurring_fact_lives_until_it_can_be_proposed(
    tenant, owner: APIClient, django_capture_on_commit_callbacks, monkeypatch
) -> None:
    import memories.write.services as services

    start = now_seconds()
    clock = {"now": start}
    monkeypatch.setattr(services, "now_seconds", lambda: clock["now"])
    sentence = "We adopted a rescue greyhound in March."  # no key: it lives by its hits
    # said in three sessions: at the start, five hours later and sixteen hours later
    for hours, session in ((0, "s_1"), (5, "s_2"), (16, "s_3")):
        clock["now"] = start + hours * HOUR
        with django_capture_on_commit_callbacks(execute=True):
            say(owner, "u_42", session, sentence)
    end_user = EndUser.objects.get(tenant=tenant, external_id="u_42")
    owner_key = Owner(tenant.pk, end_user.pk)
    (item,) = stm_store().items_of(owner=owner_key)

    # 6 h, then 12 h from the second hit, then 24 h from the third
    assert (item.hit_count, sorted(item.sessions)) == (3, ["s_1", "s_2", "s_3"])
    assert item.expires_at == pytest.approx(start + 16 * HOUR + 24 * HOUR, abs=5)
    check = promotion_triggers(item, policy=PromotionPolicy(tenant=tenant), now=start + 25 * HOUR)
    assert check.propose is True, check
    assert {"hits", "cross_session"} <= set(check.triggers)

    # said once, the same fact is gone long before the promotion gate opens
    clock["now"] = start
    with django_capture_on_commit_callbacks(execute=True):
        say(owner, "u_7", "s_9", sentence)
    once_user = EndUser.objects.get(tenant=tenant, external_id="u_7")
    (once,) = stm_store().items_of(owner=Owner(tenant.pk, once_user.pk))
    assert once.expires_at == pytest.approx(start + 6 * HOUR, abs=5)
    late = promotion_triggers(once, policy=PromotionPolicy(tenant=tenant), now=start + 25 * HOUR)
    assert late.blocked == "no longer active"
