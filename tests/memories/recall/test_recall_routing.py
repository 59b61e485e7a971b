"""The query profile and the routing rules, in Chinese and English, without any store."""

from __future__ import annotations

import pytest

from memories.recall.query_profile import Intent, RuntimeState, build_query_profile
from memories.recall.render import estimate_tokens
from memories.recall.routing import route
from memories.vocabulary import default_vocabulary

TASK = RuntimeState(active_task_id="bug456", session_recent=True, session_entities=("createOrder",))
FRESH = RuntimeState()


def profile_of(query: str, runtime: RuntimeState = FRESH):
    return build_query_profile(query=query, vocabulary=default_vocabulary(), runtime=runtime)


@pytest.mark.parametrize(
    ("query", "runtime", "intent"),
    [
        ("继续排查 createOrder 超时", TASK, Intent.DEBUG_CONTINUE),
        ("continue debugging the createOrder timeout", TASK, Intent.DEBUG_CONTINUE),
        ("我有哪些权限？", FRESH, Intent.PERMISSION_QUERY),
        ("what permissions do I have?", FRESH, Intent.PERMISSION_QUERY),
        ("默认配置是什么", FRESH, Intent.CONFIG_QUERY),
        ("what is the default config?", FRESH, Intent.CONFIG_QUERY),
        ("我的偏好和习惯", FRESH, Intent.PROFILE_QUERY),
        ("what are my preferences?", FRESH, Intent.PROFILE_QUERY),
        ("验证一下现在的状态", TASK, Intent.VERIFY_CURRENT_STATE),
        ("billing-api 的连接池现在什么情况？", TASK, Intent.VERIFY_CURRENT_STATE),
        ("please verify the current state", TASK, Intent.VERIFY_CURRENT_STATE),
        ("下一步做什么", TASK, Intent.CONTINUE_TASK),
        ("what is the next step?", TASK, Intent.CONTINUE_TASK),
        ("以前有类似的案例吗", FRESH, Intent.SIMILAR_CASE),
        ("have we seen a similar case?", FRESH, Intent.SIMILAR_CASE),
        ("写一首诗", FRESH, Intent.GENERAL),
        ("write a poem", FRESH, Intent.GENERAL),
    ],
)
def test_intent(query: str, runtime: RuntimeState, intent: str) -> None:
    assert profile_of(query, runtime).intent == intent


def test_the_design_example_profile() -> None:
    profile = profile_of("继续 bug456：createOrder 在 prod-k8s 超时，数据库已排除", TASK)

    assert profile.intent == Intent.DEBUG_CONTINUE
    assert profile.has_reference is True
    assert profile.has_profile_request is False and profile.has_similarity_request is False
    assert {"bug456", "createOrder", "prod-k8s", "数据库"} <= set(profile.entities)
    assert profile.recent_entity_overlap == 1  # createOrder was seen in this session
    assert profile.language == "zh" and profile.topic_shift is False


@pytest.mark.parametrize(
    ("query", "runtime", "pg", "redis", "ltm"),
    [
        # need_pg: profile / permission / config intents, exact metadata, cache state
        ("我的权限是什么", FRESH, True, False, False),
        ("which environment is the default one here?", FRESH, True, False, False),
        ("哪个环境", FRESH, True, False, False),
        ("write a poem", RuntimeState(profile_cache_missing=True), True, False, False),
        ("写一首诗", RuntimeState(profile_cache_stale=True), True, False, False),
        # need_redis: references, an active task with a task intent, recent entity overlap
        ("这个怎么办", FRESH, False, True, False),
        ("and that one?", FRESH, False, True, False),
        ("As I said, how do I deploy it?", FRESH, False, True, False),
        ("what is the next step?", TASK, False, True, False),
        ("createOrder 呢", TASK, False, True, False),
        # need_ltm: similarity, fuzzy history
        ("以前有类似的吗", FRESH, False, False, True),
        ("any similar experience?", FRESH, False, False, True),
        ("上次遇到的问题", FRESH, False, False, True),
        ("we had something like it last time", FRESH, False, False, True),
        # nothing to ask but Layer 1's cache
        ("write a poem", FRESH, False, False, False),
    ],
)
def test_routing_rules(query: str, runtime: RuntimeState, pg: bool, redis: bool, ltm: bool) -> None:
    decided = route(profile_of(query, runtime))

    assert (decided.postgres, decided.redis, decided.ltm) == (pg, redis, ltm), decided.reasons
    for layer, asked in (("postgres", pg), ("redis", redis), ("ltm", ltm)):
        assert bool(decided.reasons[layer]) == asked


# A debugging task whose tool results named billing-api and its connection pool.
BILLING = RuntimeState(
    active_task_id="bug-789",
    session_recent=True,
    session_entities=("billing-api", "connection pool", "连接池"),
    known_entities=("billing-api", "连接池"),
)


@pytest.mark.parametrize(
    "query",
    [
        "billing-api 的连接池现在什么情况？",
        "billing-api的连接池现在什么情况？",
        "what did the pool look like on billing-api?",
    ],
)
def test_a_question_naming_what_the_task_saw_asks_short_term_memory(query: str) -> None:
    profile = profile_of(query, BILLING)

    assert "billing-api" in profile.entities
    assert profile.recent_entity_overlap >= 1 and profile.topic_shift is False
    assert route(profile).redis


def test_insufficient_short_term_results_ask_long_term_memory() -> None:
    profile = profile_of("下一步做什么", TASK)
    assert route(profile).ltm is False

    profile.redis_result_insufficient = True

    decided = route(profile)
    assert decided.ltm is True
    assert "short-term results insufficient" in decided.reasons["ltm"]


@pytest.mark.parametrize(
    "query",
    [
        "createOrder 报错 NullPointerException 怎么修",
        "why does createOrder throw ERR_TIMEOUT",
        "以前好像遇到过类似的问题",
        "something like what we had before",
        "a similar createOrder timeout before?",
    ],
)
def test_long_term_memory_is_searched_hybrid(query: str) -> None:
    # Measured on the development split: the fused branches beat either alone, for named
    # and vague questions alike.
    assert route(profile_of(query)).ltm_mode == "hybrid"


def test_the_caller_may_force_layers() -> None:
    decided = route(profile_of("write a poem"), forced_layers=("ltm",))

    assert (decided.postgres, decided.redis, decided.ltm) == (False, False, True)
    assert decided.forced and decided.reasons["ltm"] == ["asked by the caller"]


def test_a_new_topic_in_a_busy_session_is_a_topic_shift() -> None:
    runtime = RuntimeState(session_recent=True, session_entities=("createOrder",))

    shifted = profile_of("how do we deploy payment-service?", runtime)

    assert shifted.topic_shift is True
    assert "topic shift away from the session" in route(shifted).reasons["ltm"]
    assert profile_of("createOrder again?", runtime).topic_shift is False


def test_tenant_words_extend_the_lists() -> None:
    vocabulary = default_vocabulary().extended([("similarity_request", "老问题")])

    profile = build_query_profile(query="这是个老问题", vocabulary=vocabulary, runtime=FRESH)

    assert profile.has_similarity_request is True
    assert profile_of("这是个老问题").has_similarity_request is False


def test_token_estimate_counts_chinese_characters() -> None:
    assert estimate_tokens("数据库已排除") == 6
    assert estimate_tokens("database excluded") == 2 + 2  # four Latin characters a token
    assert estimate_tokens("createOrder 超时") == 3 + 2
    assert estimate_tokens("") == 0
