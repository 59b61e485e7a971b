"""A task's working memory (tool results, the assistant's conclusions) is never proposed for
promotion, however often it was seen, and expires with the lifetime of task state."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memories.policies.models import PromotionPolicy
from memories.review.models import PromotionRequest
from memories.review.promotion_scan import promotion_scan, promotion_triggers
from memories.stm.items import StmItem
from memories.stm.selectors import stm_items_for
from memories.stm.store import now_seconds, stm_store
from memories.vocabulary import default_vocabulary
from memories.write.extractors import ExtractionContext, RuleExtractor
from memories.write.services import proposals_submit

HOUR = 3600.0
EVENTS = [
    {
        "seq": 1,
        "id": "m-1",
        "role": "user",
        "content": "Never restart billing-api during business hours.",
    },
    {
        "seq": 2,
        "id": "m-2",
        "role": "tool",
        "tool_call_id": "call-1",
        "metadata": {"tool_name": "psql_stats"},
        "content": "billing-api: db pool 48/50 in use, wait queue 1200, p99 2.3s",
    },
    {
        "seq": 3,
        "id": "m-3",
        "role": "assistant",
        "content": "已排除数据库问题，问题出在连接池。",
    },
]


@pytest.fixture
def items(tenant) -> dict[str, StmItem]:
    context = ExtractionContext(
        user_id="u_42", session_id="s-1", task_id="bug-789", vocabulary=default_vocabulary()
    )
    candidates = RuleExtractor().extract(events=EVENTS, context=context)
    results = proposals_submit(tenant=tenant, candidates=candidates, strict=False)
    assert all(r.item_id for r in results), [r.decision.refusal for r in results]
    found = stm_items_for(tenant=tenant, user_id="u_42").items
    return {item.subtype: item for item in found}


@pytest.mark.django_db
def test_they_live_as_task_state_and_only_the_users_rule_as_a_rule(items) -> None:
    assert set(items) == {"user_constraint", "tool_result", "exclusion", "conclusion"}
    lifetimes = {
        subtype: round((item.expires_at - item.created_at) / 60) for subtype, item in items.items()
    }
    # an observation 2 h, the assistant's findings 6 h, the user's rule 24 h
    assert lifetimes == {
        "user_constraint": 24 * 60,
        "tool_result": 2 * 60,
        "exclusion": 6 * 60,
        "conclusion": 6 * 60,
    }
    assert [i.memory_type for i in items.values() if i.memory_type == "constraint"] == [
        "constraint"
    ]
    assert items["user_constraint"].source["kind"] == "user"
    for subtype in ("tool_result", "exclusion", "conclusion"):
        assert items[subtype].source["kind"] in ("tool", "assistant")
        assert items[subtype].task_id == "bug-789"
        assert items[subtype].remember is False


@pytest.mark.django_db
def test_no_trigger_promotes_them(items) -> None:
    policy = PromotionPolicy(min_hits=3, min_sessions=2, min_age_hours=24, min_confidence=0.5)
    now = now_seconds()

    for subtype, item in items.items():
        # seen often, in many sessions, for two days: every trigger would fire
        seasoned = replace(
            item,
            hit_count=9,
            recall_count=9,
            sessions=["s-1", "s-2", "s-3"],
            created_at=now - 48 * HOUR,
            expires_at=now + HOUR,
        )
        check = promotion_triggers(seasoned, policy=policy, now=now)
        if subtype == "user_constraint":
            assert check.propose, check.blocked
        else:
            assert not check.propose
            assert "task" in check.blocked, check.blocked


@pytest.mark.django_db
def test_the_scan_proposes_none_of_them_and_they_expire_with_the_task(tenant, items) -> None:
    PromotionPolicy.objects.create(
        tenant=tenant, min_hits=3, min_sessions=2, min_age_hours=24, min_confidence=0.5
    )
    now = now_seconds()
    store = stm_store()
    # The same items as if seen nine times in two sessions over two days (every trigger fires).
    seasoned = [
        replace(item, hit_count=9, sessions=["s-1", "s-2"], created_at=now - 48 * HOUR)
        for item in items.values()
    ]
    for item in seasoned:
        store.delete(owner=item.owner, item_id=item.id)
    store.upsert(items=seasoned, now=now)

    promotion_scan(tenant=tenant, now=now, owners=100)

    proposed = PromotionRequest.objects.filter(tenant=tenant)
    assert [r.evidence["item"]["subtype"] for r in proposed] == ["user_constraint"]
    # Three hours on, the tool's reading is gone; seven hours on, the assistant's findings.
    later = store.items_of(owner=items["tool_result"].owner)
    alive_at = {
        hours: sorted(i.subtype for i in later if i.is_live(now + hours * HOUR)) for hours in (3, 7)
    }
    assert alive_at[3] == ["conclusion", "exclusion", "user_constraint"]
    assert alive_at[7] == ["user_constraint"]


@pytest.mark.django_db
def test_reflection_finds_no_episode_in_readings_and_the_assistants_conclusions(tenant) -> None:
    from memories.review.reflection import reflection_run

    PromotionPolicy.objects.create(tenant=tenant, reflection_importance=1.0, reflection_min_items=2)
    events = []
    for n in range(6):
        events.append(
            {
                "seq": 2 * n + 1,
                "id": f"t-{n}",
                "role": "tool",
                "tool_call_id": f"call-{n}",
                "metadata": {"tool_name": f"probe_{n}"},
                "content": f"billing-api: db pool {40 + n}/50 in use, wait queue {100 * n}",
            }
        )
        events.append(
            {
                "seq": 2 * n + 2,
                "id": f"a-{n}",
                "role": "assistant",
                "content": f"Root cause is the db pool of billing-api, step {n}.",
            }
        )
    context = ExtractionContext(
        user_id="u_42", session_id="s-1", task_id="bug-789", vocabulary=default_vocabulary()
    )
    candidates = RuleExtractor().extract(events=events, context=context)
    proposals_submit(tenant=tenant, candidates=candidates, strict=False)
    found = stm_items_for(tenant=tenant, user_id="u_42", limit=100).items
    assert sum(i.importance for i in found) > 1.0 and len(found) == 12

    assert reflection_run(tenant=tenant, owners=100).proposed == 0
    assert not PromotionRequest.objects.filter(tenant=tenant).exists()
