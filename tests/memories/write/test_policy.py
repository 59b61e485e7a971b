from __future__ import annotations

from dataclasses import replace

import pytest

from memories.policies.models import WritePolicy
from memories.vocabulary import default_vocabulary
from memories.write.candidates import Candidate
from memories.write.policy import ExistingState, PolicySettings, decide, policy_for

SETTINGS = PolicySettings()
VOCABULARY = default_vocabulary()

# A candidate that scores zero on every term: unverified, no task, low confidence, a
# hypothesis (not a decision or constraint), duplicate-free but not novel (same text nearby).
BASE = Candidate(
    user_id="u_1",
    session_id="s_1",
    memory_type="hypothesis",
    summary="payment-service timeout on createOrder",
    confidence=0.5,
    source_kind="proposal",
)
NOT_NOVEL = ExistingState(nearby_summaries=["payment-service timeout on createOrder"])


def judge(candidate: Candidate, existing: ExistingState = NOT_NOVEL, settings=SETTINGS):
    return decide(candidate, existing=existing, settings=settings, vocabulary=VOCABULARY)


def test_the_baseline_scores_zero_on_every_term() -> None:
    decision = judge(BASE)
    assert decision.score == 0
    assert set(decision.breakdown.values()) == {0.0}
    assert (decision.accepted, decision.refusal) == (False, "score_below_threshold")


@pytest.mark.parametrize(
    ("term", "change", "existing", "weight"),
    [
        ("verified", {"verified": True}, NOT_NOVEL, 3),
        ("user_constraint", {"memory_type": "constraint"}, NOT_NOVEL, 3),
        ("decision", {"memory_type": "decision"}, NOT_NOVEL, 2),
        (
            "stable_for_task",
            {"memory_type": "fact", "task_id": "bug_456", "confidence": 0.7},
            NOT_NOVEL,
            2,
        ),
        ("novelty_high", {}, ExistingState(), 2),
        ("confidence_high", {"confidence": 0.85}, NOT_NOVEL, 1),
        ("duplicate", {}, ExistingState(same_fact=True), -3),
        ("transient", {"ttl_minutes": 3}, NOT_NOVEL, -2),
        ("raw_blob", {"summary": "x " * 300}, ExistingState(nearby_summaries=["x"]), -2),
    ],
)
def test_each_term_of_the_formula_adds_its_weight(term, change, existing, weight) -> None:
    decision = judge(replace(BASE, **change), existing)
    assert decision.breakdown[term] == weight
    assert decision.score == weight
    assert {k for k, v in decision.breakdown.items() if v} == {term}


def test_written_from_a_score_of_three() -> None:
    verified = judge(replace(BASE, verified=True))
    decision_only = judge(replace(BASE, memory_type="decision"))
    assert (verified.score, verified.accepted) == (3, True)
    assert (decision_only.score, decision_only.accepted) == (2, False)


def test_a_contradicting_update_counts_as_novel() -> None:
    decision = judge(BASE, ExistingState(updates_fact=True, nearby_summaries=[BASE.summary]))
    assert decision.breakdown["novelty_high"] == 2
    assert decision.profile.novelty == 1.0


def test_an_assistant_constraint_is_not_a_user_constraint() -> None:
    decision = judge(replace(BASE, memory_type="constraint", source_kind="assistant"))
    assert decision.breakdown["user_constraint"] == 0


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"summary": "谢谢！", "verified": True}, "chit_chat"),
        ({"summary": "thanks!", "verified": True}, "chit_chat"),
        ({"summary": "ERROR x\n" * 3000, "verified": True}, "raw_log"),
        ({"subtype": "reasoning", "verified": True}, "model_reasoning"),
        ({"session_id": "", "verified": True}, "unrelated_to_session_or_task"),
        ({"summary": "   ", "verified": True}, "empty"),
    ],
)
def test_what_is_never_stored_is_refused_whatever_the_score(change, refusal) -> None:
    decision = judge(replace(BASE, memory_type="constraint", **change), ExistingState())
    assert decision.score >= 3 or refusal in {"raw_log"}
    assert (decision.accepted, decision.refusal) == (False, refusal)


def test_ttl_comes_from_the_type_and_is_clamped() -> None:
    assert judge(replace(BASE, memory_type="constraint")).ttl_minutes == 24 * 60
    assert judge(replace(BASE, memory_type="observation")).ttl_minutes == 120
    assert judge(replace(BASE, ttl_minutes=1)).ttl_minutes == SETTINGS.min_ttl_minutes
    assert judge(replace(BASE, ttl_minutes=10**7)).ttl_minutes == SETTINGS.max_ttl_minutes


@pytest.mark.django_db
def test_the_tenants_current_policy_version_applies(tenant) -> None:
    assert policy_for(tenant=tenant).version == 0  # defaults
    WritePolicy.objects.create(tenant=tenant, version=1, is_current=False, write_threshold=9)
    WritePolicy.objects.create(tenant=tenant, version=2, weights={"verified": 1}, write_threshold=1)

    settings = policy_for(tenant=tenant)
    decision = judge(replace(BASE, verified=True), settings=settings)

    assert settings.version == 2
    assert (decision.breakdown["verified"], decision.accepted, decision.policy_version) == (
        1,
        True,
        2,
    )


STATED = replace(BASE, memory_type="fact", verified=True, confidence=0.8)


def test_a_repeat_of_a_live_item_is_a_hit_not_a_refusal() -> None:
    # verified 3 + confidence 1 − duplicate 3 = 1: written before as a new item, it passes
    decision = judge(STATED, ExistingState(same_fact=True, hits=1))
    assert (decision.score, decision.accepted, decision.repeat) == (1, True, True)
    # but a repeat of what would not pass on its own stays refused
    weak = judge(replace(BASE, memory_type="fact"), ExistingState(same_fact=True, hits=1))
    assert (weak.accepted, weak.repeat, weak.refusal) == (False, False, "score_below_threshold")


@pytest.mark.parametrize(("hits", "hours"), [(0, 6), (1, 12), (2, 24), (3, 48)])
def test_each_hit_doubles_the_lifetime(hits, hours) -> None:
    existing = ExistingState(same_fact=bool(hits), hits=hits)
    assert judge(STATED, existing).ttl_minutes == hours * 60


@pytest.mark.parametrize(
    "change",
    [
        {"remember": True},
        {"canonical_fact_key": "project_metadata.default_env", "fact_value": "prod-cn"},
        {"memory_type": "decision", "remember": True},
    ],
)
def test_what_promotion_may_propose_outlives_its_minimum_age(change) -> None:
    assert judge(replace(STATED, **change)).ttl_minutes == 25 * 60
    # a task-scoped key is no domain key: the type's lifetime stands
    task_key = replace(STATED, canonical_fact_key="bug456:root_cause", fact_value="db")
    assert judge(task_key).ttl_minutes == 6 * 60


@pytest.mark.django_db
def test_the_minimum_lifetime_follows_the_tenants_promotion_policy(tenant) -> None:
    from memories.policies.models import PromotionPolicy

    assert policy_for(tenant=tenant).promotable_ttl_minutes == 25 * 60
    PromotionPolicy.objects.create(tenant=tenant, min_age_hours=48)
    settings = policy_for(tenant=tenant)
    assert judge(replace(STATED, remember=True), settings=settings).ttl_minutes == 49 * 60
