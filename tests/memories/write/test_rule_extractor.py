from __future__ import annotations

import json
from typing import Any

import pytest

from memories.stm.items import MemoryType
from memories.vocabulary import Vocabulary, default_vocabulary
from memories.write.candidates import Candidate, SourceKind
from memories.write.extractors import ExtractionContext, Extractor, RuleExtractor, split_sentences


def event(
    seq: int, role: str, content: Any, *, tool_call_id: str = "", id: str = ""
) -> dict[str, Any]:
    return {
        "seq": seq,
        "id": id or f"msg_{seq}",
        "role": role,
        "content": content,
        "tool_call_id": tool_call_id,
        "metadata": {},
        "created_at": "2025-01-01T00:00:00Z",
    }


def extract(
    *events: dict[str, Any], task_id: str = "bug-456", vocabulary: Vocabulary | None = None
) -> list[Candidate]:
    context = ExtractionContext(
        user_id="u_1",
        session_id="s_1",
        task_id=task_id,
        vocabulary=vocabulary or default_vocabulary(),
    )
    extractor: Extractor = RuleExtractor()
    return extractor.extract(events=list(events), context=context)


def only(*events: dict[str, Any], **kwargs: Any) -> Candidate:
    candidates = extract(*events, **kwargs)
    assert len(candidates) == 1, candidates
    return candidates[0]


# --- constraints ---------------------------------------------------------------------------


def test_chinese_constraint_wins_over_preference() -> None:
    found = only(event(1, "user", "以后都必须先给结论"))

    assert found.memory_type == MemoryType.CONSTRAINT
    assert found.subtype == "user_constraint"
    assert found.verified is True
    assert (found.confidence, found.importance) == (0.9, 0.8)
    assert found.summary == "以后都必须先给结论"
    assert found.detail == {
        "text": "以后都必须先给结论",
        "kind": "constraint",
        "reason": "an instruction starting with 必须",
        "said_at": "2025-01-01T00:00:00Z",  # the event's time: what a promoted card dates by
    }
    assert found.source_kind == SourceKind.USER
    assert found.message_ids == ("msg_1",)
    assert (found.user_id, found.session_id, found.task_id) == ("u_1", "s_1", "bug-456")
    assert found.tags == ("constraint",)
    assert found.remember is False


def test_english_constraint_with_entities() -> None:
    found = only(event(2, "user", "You must never restart payment-service in prod-k8s."))

    assert found.memory_type == MemoryType.CONSTRAINT
    assert found.subtype == "user_constraint"
    assert found.verified is True
    assert found.summary == "You must never restart payment-service in prod-k8s"
    assert found.entities == ("payment-service", "prod-k8s")
    assert found.message_ids == ("msg_2",)
    assert found.canonical_fact_key == ""


def test_tenant_extended_vocabulary_adds_constraint_word_and_entity() -> None:
    vocabulary = default_vocabulary().extended([("entity", "订单中心"), ("constraint", "严禁")])

    found = only(event(1, "user", "严禁改动订单中心的表"), vocabulary=vocabulary)

    assert found.memory_type == MemoryType.CONSTRAINT
    assert found.subtype == "user_constraint"
    assert found.verified is True
    assert found.entities == ("订单中心",)
    assert found.detail["reason"].startswith("an instruction")
    # the defaults' word lists know neither the word nor the entity: only its meaning reads
    # it as an instruction
    (by_meaning,) = extract(event(1, "user", "严禁改动订单中心的表"))
    assert by_meaning.detail["reason"].startswith("reads as a constraint by meaning")
    assert by_meaning.entities == ()


# --- decisions -----------------------------------------------------------------------------


def test_chinese_decision() -> None:
    found = only(event(1, "user", "决定改用 PostgreSQL 存订单。"))

    assert found.memory_type == MemoryType.DECISION
    assert found.subtype == "decision"
    assert found.verified is True
    assert (found.confidence, found.importance) == (0.85, 0.7)
    assert found.summary == "决定改用 PostgreSQL 存订单"
    assert found.entities == ("postgresql",)
    assert found.detail["kind"] == "decision"


def test_english_decision() -> None:
    found = only(event(1, "user", "We decided to switch to kafka for order events."))

    assert found.memory_type == MemoryType.DECISION
    assert found.subtype == "decision"
    assert found.verified is True
    assert found.entities == ("kafka",)
    assert found.message_ids == ("msg_1",)


def test_decision_wins_over_preference() -> None:
    found = only(event(1, "user", "以后都就用 redis 做缓存"))

    assert found.memory_type == MemoryType.DECISION


# --- exclusions ----------------------------------------------------------------------------


def test_chinese_exclusion_wins_over_constraint_and_has_canonical_key() -> None:
    found = only(event(1, "user", "不要再查数据库了，已排除"))

    assert found.memory_type == MemoryType.FACT
    assert found.subtype == "exclusion"
    assert found.verified is True
    assert (found.confidence, found.importance) == (0.9, 0.7)
    # the task's working memory carries the other spelling, for a question in English
    assert found.entities == ("数据库", "database")
    assert found.canonical_fact_key == "bug-456:excluded:数据库"
    assert found.fact_value == "excluded"
    assert found.detail["text"] == "不要再查数据库了，已排除"
    assert found.detail["kind"] == "exclusion" and "已排除" in found.detail["reason"]
    assert found.tags == ("fact", "exclusion")


def test_english_exclusion_key_is_lowercased_and_falls_back_to_session() -> None:
    found = only(event(1, "user", "We ruled out Redis."), task_id="")

    assert found.memory_type == MemoryType.FACT
    assert found.subtype == "exclusion"
    assert found.entities == ("redis",)
    assert found.canonical_fact_key == "s_1:excluded:redis"
    assert found.fact_value == "excluded"


def test_exclusion_without_entity_has_no_canonical_key() -> None:
    found = only(event(1, "user", "That is not the cause."))

    assert found.subtype == "exclusion"
    assert found.entities == ()
    assert found.canonical_fact_key == ""


# --- preferences ---------------------------------------------------------------------------


def test_chinese_preference() -> None:
    found = only(event(1, "user", "我更喜欢用表格展示结果"))

    assert found.memory_type == MemoryType.PREFERENCE
    assert found.subtype == "user_preference"
    assert found.verified is True
    assert (found.confidence, found.importance) == (0.85, 0.6)


def test_english_preference() -> None:
    found = only(event(1, "user", "I prefer short answers in bullet points!"))

    assert found.memory_type == MemoryType.PREFERENCE
    assert found.subtype == "user_preference"
    assert found.summary == "I prefer short answers in bullet points"
    assert found.message_ids == ("msg_1",)


# --- remember ------------------------------------------------------------------------------


def test_chinese_inline_remember_flags_the_candidate() -> None:
    found = only(event(1, "user", "记住：必须用中文回答"))

    assert found.memory_type == MemoryType.CONSTRAINT
    assert found.remember is True
    assert found.importance >= 0.9
    assert found.summary == "必须用中文回答"
    assert (found.detail["text"], found.detail["request"]) == ("记住：必须用中文回答", "记住")


# Each remember phrase of memories/data/vocabulary.json, and what is left: the statement.
REMEMBERED = [
    # (said, statement, the request as said)
    (
        "Please remember that I deploy with Terraform.",
        "I deploy with Terraform",
        "Please remember that",
    ),
    ("Remember that I deploy with Terraform.", "I deploy with Terraform", "Remember that"),
    ("Remember: I deploy with Terraform.", "I deploy with Terraform", "Remember"),
    ("Remember this: I deploy with Terraform.", "I deploy with Terraform", "Remember this"),
    ("Note: I deploy with Terraform.", "I deploy with Terraform", "Note"),
    ("Note that I deploy with Terraform.", "I deploy with Terraform", "Note that"),
    ("Please note I deploy with Terraform.", "I deploy with Terraform", "Please note"),
    ("Remember, my default env is staging-eu.", "My default env is staging-eu", "Remember"),
    (
        "Can you remember that I deploy with Terraform?",
        "I deploy with Terraform",
        "Can you remember that",
    ),
    (
        "Could you note that I deploy with Terraform?",
        "I deploy with Terraform",
        "Could you note that",
    ),
    (
        "I want you to remember that I deploy with Terraform.",
        "I deploy with Terraform",
        "I want you to remember that",
    ),
    (
        "I'd like you to keep in mind that I deploy with Terraform.",
        "I deploy with Terraform",
        "I'd like you to keep in mind that",
    ),
    (
        "Please keep in mind that our staging cluster is staging-eu.",
        "Our staging cluster is staging-eu",
        "Please keep in mind that",
    ),
    (
        "Please make a note of this: I deploy with Terraform.",
        "I deploy with Terraform",
        "Please make a note of this",
    ),
    ("Keep this in mind: I deploy with Terraform.", "I deploy with Terraform", "Keep this in mind"),
    ("Keep in mind that I deploy with Terraform.", "I deploy with Terraform", "Keep in mind that"),
    ("Don't forget that I deploy with Terraform.", "I deploy with Terraform", "Don't forget that"),
    ("Don't forget: I deploy with Terraform.", "I deploy with Terraform", "Don't forget"),
    (
        "For future reference, I deploy with Terraform.",
        "I deploy with Terraform",
        "For future reference",
    ),
    ("Make a note that I deploy with Terraform.", "I deploy with Terraform", "Make a note that"),
    ("Note this down: I deploy with Terraform.", "I deploy with Terraform", "Note this down"),
    (
        "Save this to your memory: I deploy with Terraform.",
        "I deploy with Terraform",
        "Save this to your memory",
    ),
    (
        "Oh and please remember that I deploy with Terraform.",
        "I deploy with Terraform",
        "Oh and please remember that",
    ),
    (
        "I deploy with Terraform, please remember that.",
        "I deploy with Terraform",
        "please remember that",
    ),
    ("请记住我用 Terraform 部署", "我用 Terraform 部署", "请记住"),
    ("记住：我用 Terraform 部署", "我用 Terraform 部署", "记住"),
    ("你要记住，我们组的代码仓库在 gitlab 上", "我们组的代码仓库在 gitlab 上", "你要记住"),
    ("记住这一点：我用 Terraform 部署", "我用 Terraform 部署", "记住这一点"),
    ("我用 Terraform 部署，记住这一点", "我用 Terraform 部署", "记住这一点"),
    ("我用 Terraform 部署，记一下", "我用 Terraform 部署", "记一下"),
    ("别忘了我下周三要出差", "我下周三要出差", "别忘了"),
    ("不要忘记：我用 Terraform 部署", "我用 Terraform 部署", "不要忘记"),
    ("把这个存到记忆里：我用 Terraform 部署", "我用 Terraform 部署", "把这个存到记忆里"),
]


@pytest.mark.parametrize(("said", "statement", "asked"), REMEMBERED)
def test_a_remembered_statement_reads_as_the_statement(
    said: str, statement: str, asked: str
) -> None:
    found = only(event(1, "user", said))

    assert found.summary == statement
    assert found.detail["text"] == said.rstrip(".?")
    assert found.detail["request"] == asked
    assert found.remember is True and found.importance >= 0.9
    assert found.verified is True
    assert found.message_ids == ("msg_1",)


@pytest.mark.parametrize(
    ("said", "plain"),
    [
        ("Please remember that I deploy with Terraform.", "I deploy with Terraform."),
        ("Can you remember that I deploy with Terraform?", "I deploy with Terraform."),
        ("请记住我用 Terraform 部署", "我用 Terraform 部署"),
        ("别忘了我下周三要出差", "我下周三要出差"),
    ],
)
def test_a_remembered_statement_is_read_as_the_same_statement_said_plainly(
    said: str, plain: str
) -> None:
    remembered, stated = only(event(1, "user", said)), only(event(1, "user", plain))

    # the same kind, key and text, so the write fingerprint is the same: one item
    assert (remembered.memory_type, remembered.subtype, remembered.summary) == (
        stated.memory_type,
        stated.subtype,
        stated.summary,
    )
    assert (remembered.remember, stated.remember) == (True, False)
    assert "request" not in stated.detail


@pytest.mark.parametrize(
    ("said", "statement"),
    [
        ("Don't forget that I'm vegetarian.", "I'm vegetarian"),
        ("Remember, I'm vegetarian.", "I'm vegetarian"),
        ("Note: we're remote.", "We're remote"),
    ],
)
def test_a_short_first_hand_statement_is_remembered_not_taken_for_remember_this(
    said: str, statement: str
) -> None:
    found = only(event(1, "user", said))

    assert (found.memory_type, found.subtype, found.summary) == ("fact", "remembered", statement)
    assert found.remember is True


@pytest.mark.parametrize("said", ["Remember this.", "remember it", "记住我", "Remember me!"])
def test_a_request_naming_nothing_itself_stays_bare(said: str) -> None:
    assert extract(event(1, "user", said)) == []


def test_a_bare_request_beside_statements_is_named_in_their_detail() -> None:
    constraint, preference = extract(
        event(1, "user", "Remember this. We must deploy only on Tuesdays. I prefer tables.")
    )

    assert constraint.summary == "We must deploy only on Tuesdays"
    assert constraint.detail["request"] == preference.detail["request"] == "Remember this"


def test_a_follow_up_request_is_named_in_the_detail_of_what_it_points_to() -> None:
    found = only(event(1, "user", "订单服务部署在 prod-k8s 集群"), event(2, "user", "记住这个"))

    assert found.summary == "订单服务部署在 prod-k8s 集群"
    assert found.detail["request"] == "记住这个"
    assert found.message_ids == ("msg_1", "msg_2")


def test_english_inline_remember_flags_every_candidate_of_the_message() -> None:
    found = extract(
        event(1, "user", "Remember this. We must deploy only on Tuesdays. I prefer tables.")
    )

    assert [c.memory_type for c in found] == [MemoryType.CONSTRAINT, MemoryType.PREFERENCE]
    assert all(c.remember and c.importance >= 0.9 for c in found)


def test_dont_forget_is_remember_not_constraint() -> None:
    found = only(event(1, "user", "Don't forget that the JIRA-123 credentials rotate on Monday."))

    assert found.memory_type == MemoryType.FACT
    assert found.subtype == "remembered"
    assert found.remember is True
    assert found.entities == ("JIRA-123",)
    assert found.message_ids == ("msg_1",)


def test_chinese_follow_up_remember_flags_the_previous_candidate() -> None:
    found = only(
        event(1, "user", "以后都必须先给结论", id="m_a"),
        event(2, "assistant", "明白", id="m_b"),
        event(3, "user", "记住这个！", id="m_c"),
    )

    assert found.memory_type == MemoryType.CONSTRAINT
    assert found.remember is True
    assert found.importance >= 0.9
    assert found.verified is True
    assert found.message_ids == ("m_a", "m_c")


def test_english_follow_up_remember_flags_the_previous_stated_fact() -> None:
    found = only(
        event(1, "user", "Our staging cluster is staging-eu and orders go through order-api"),
        event(2, "tool", "INFO ok", tool_call_id="call_1"),
        event(3, "user", "remember this"),
    )

    assert found.memory_type == MemoryType.FACT
    assert found.subtype == "stated"
    assert found.verified is True
    assert found.confidence == 0.8
    assert found.remember is True
    assert found.importance >= 0.9
    assert found.summary == "Our staging cluster is staging-eu and orders go through order-api"
    assert found.entities == ("staging-eu", "order-api")
    assert found.message_ids == ("msg_1", "msg_3")
    assert found.source_kind == SourceKind.USER


def test_chinese_follow_up_remember_of_plain_statement() -> None:
    found = only(
        event(1, "user", "订单服务部署在 prod-k8s 集群"),
        event(2, "user", "记住这个"),
    )

    assert (found.memory_type, found.subtype, found.remember) == (MemoryType.FACT, "stated", True)
    assert found.entities == ("prod-k8s",)
    assert found.message_ids == ("msg_1", "msg_2")


def test_follow_up_remember_prefers_the_nearer_user_message() -> None:
    found = extract(
        event(1, "user", "必须用中文回答"),
        event(2, "user", "payment-service 部署在 prod-k8s"),
        event(3, "user", "please remember that"),
    )

    assert [(c.memory_type, c.remember) for c in found] == [
        (MemoryType.CONSTRAINT, False),
        (MemoryType.FACT, True),
    ]
    assert found[1].message_ids == ("msg_2", "msg_3")


def test_bare_remember_without_anything_before_proposes_nothing() -> None:
    assert extract(event(1, "user", "记住这个"), event(2, "user", "remember this")) == []


# --- tool observations ---------------------------------------------------------------------


def test_tool_observation_from_error_status_timeout_and_entities() -> None:
    output = (
        "POST /api/orders createOrder on payment-service (prod-k8s) failed: "
        "TimeoutException after 30s, HTTP 504 Gateway Timeout; see JIRA-123 and bug_456"
    )
    found = only(event(4, "tool", output, tool_call_id="call_7"))

    assert found.memory_type == MemoryType.OBSERVATION
    assert found.subtype == "tool_result"
    assert found.verified is True
    assert (found.confidence, found.importance) == (0.9, 0.6)
    assert found.source_kind == SourceKind.TOOL
    assert found.summary == (
        "tool call_7: TimeoutException, HTTP 504, timeout — "
        "/api/orders, createOrder, payment-service, prod-k8s, JIRA-123, bug_456"
    )
    assert found.detail == {
        "errors": ["TimeoutException"],
        "status_codes": ["504"],
        "timeout": True,
        "entities": [
            "/api/orders",
            "createOrder",
            "payment-service",
            "prod-k8s",
            "TimeoutException",
            "JIRA-123",
            "bug_456",
        ],
        "observed_at": "2025-01-01T00:00:00Z",
    }
    assert found.entities == tuple(found.detail["entities"])
    assert found.tags == ("observation", "error", "timeout")
    assert found.message_ids == ("msg_4",)
    assert found.tool_call_ids == ("call_7",)
    assert found.canonical_fact_key == "bug-456:observation:call_7"


def test_chinese_tool_observation_from_timeout_and_status_code() -> None:
    found = only(
        event(
            5,
            "tool",
            "调用 createOrder 超时：order-service 在 staging-cn 返回 status 503",
            tool_call_id="call_8",
        )
    )

    assert found.memory_type == MemoryType.OBSERVATION
    assert found.detail == {
        "errors": [],
        "status_codes": ["503"],
        "timeout": True,
        "entities": ["createOrder", "order-service", "staging-cn"],
        "observed_at": "2025-01-01T00:00:00Z",
    }
    assert (
        found.summary == "tool call_8: HTTP 503, timeout — createOrder, order-service, staging-cn"
    )
    assert found.tags == ("observation", "error", "timeout")


def test_tool_result_as_json_without_tool_call_id() -> None:
    found = only(event(6, "tool", {"error": "ConnectionError", "service": "billing-svc"}))

    assert found.summary == "tool: ConnectionError — billing-svc"
    assert found.tool_call_ids == ()
    assert found.canonical_fact_key == ""
    assert found.tags == ("observation", "error")


def test_tool_success_status_alone_is_not_an_observation() -> None:
    assert extract(event(1, "tool", "HTTP 200 OK from order-api", tool_call_id="c1")) == []


def info_log(lines: int) -> list[str]:
    return [
        f"2025-01-01 10:{i // 60 % 60:02d}:{i % 60:02d} INFO inventory-worker "
        f"processed batch {i} with {i % 7} items in {i % 13} ms"
        for i in range(lines)
    ]


def test_large_log_without_signal_proposes_nothing() -> None:
    log = "\n".join(info_log(300))
    assert len(log) > 20_000

    assert extract(event(1, "tool", log, tool_call_id="call_9")) == []


def test_large_log_with_one_error_gives_one_short_observation() -> None:
    lines = info_log(300)
    lines[150] = "2025-01-01 10:02:30 WARN payment-service createOrder: SocketTimeoutException"
    log = "\n".join(lines)
    assert len(log) > 20_000

    found = only(event(1, "tool", log, tool_call_id="call_9"))

    assert found.memory_type == MemoryType.OBSERVATION
    assert found.detail["errors"] == ["SocketTimeoutException"]
    assert found.detail["timeout"] is False
    assert "payment-service" in found.entities
    assert "createOrder" in found.entities
    assert len(found.summary) < 300
    as_text = found.summary + json.dumps(found.detail, ensure_ascii=False)
    assert "INFO" not in as_text
    assert "processed batch" not in as_text
    assert lines[150] not in as_text


def test_tool_signals_are_capped() -> None:
    output = " ".join(f"Fail{i}Exception" for i in range(40))

    found = only(event(1, "tool", output, tool_call_id="call_1"))

    assert len(found.detail["errors"]) == 5
    assert len(found.summary) <= 200


# --- must not propose ----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["你好！", "谢谢！", "thanks!", "ok thanks", "Hello.", "好的"])
def test_chit_chat_proposes_nothing(text: str) -> None:
    assert extract(event(1, "user", text)) == []


@pytest.mark.parametrize(
    "text", ["可能是数据库的问题吧", "maybe it's the cache", "I think the thread pool is too small"]
)
def test_unverified_guess_proposes_nothing(text: str) -> None:
    assert extract(event(1, "user", text)) == []


def test_hedged_exclusion_is_not_proposed() -> None:
    assert extract(event(1, "user", "可能不是数据库的问题")) == []


@pytest.mark.parametrize(
    "text", ["我觉得可能必须重启 payment-service", "I think we must restart payment-service"]
)
def test_hedged_constraint_is_unverified_and_less_confident(text: str) -> None:
    found = only(event(1, "user", text))

    assert found.memory_type == MemoryType.CONSTRAINT
    assert found.verified is False
    assert found.confidence == 0.5
    assert found.detail["hedged"] is True
    assert found.entities == ("payment-service",)


def test_system_events_propose_nothing() -> None:
    system = "You must always answer in English. We decided to use kafka. Redis is ruled out."
    assert extract(event(1, "system", system)) == []


def test_remember_after_a_guess_is_not_verified() -> None:
    found = only(event(1, "user", "可能是线程池太小"), event(2, "user", "记住这个"))

    assert found.subtype == "remembered"
    assert found.verified is False
    assert found.remember is True


# --- assistant -----------------------------------------------------------------------------


def test_assistant_decision_and_exclusion_are_unverified() -> None:
    found = extract(
        event(
            1,
            "assistant",
            "We'll go with a bigger connection pool. 数据库已排除。You must restart it.",
        )
    )

    assert [(c.memory_type, c.subtype) for c in found] == [
        (MemoryType.DECISION, "decision"),
        (MemoryType.FACT, "exclusion"),
    ]
    assert all(c.verified is False and c.confidence == 0.6 for c in found)
    assert all(c.source_kind == SourceKind.ASSISTANT for c in found)
    assert found[0].entities == ("connection pool",)
    assert found[1].canonical_fact_key == "bug-456:excluded:数据库"


def test_assistant_hedged_claims_and_remember_words_are_ignored() -> None:
    found = extract(
        event(
            1, "assistant", "Maybe we should switch to kafka. 可能已排除缓存。I will remember that."
        )
    )

    assert found == []


# --- sentences and order -------------------------------------------------------------------


def test_each_sentence_is_judged_alone() -> None:
    found = extract(event(1, "user", "必须用中文回答。我更喜欢表格！决定用 redis\nhi"))

    assert [c.memory_type for c in found] == [
        MemoryType.CONSTRAINT,
        MemoryType.PREFERENCE,
        MemoryType.DECISION,
    ]
    assert [c.summary for c in found] == ["必须用中文回答", "我更喜欢表格", "决定用 redis"]
    assert all(c.message_ids == ("msg_1",) for c in found)


def test_sentence_splitting_keeps_versions_and_drops_overlong_text() -> None:
    assert split_sentences("Use Python 3.11 only. Then node.js?  ") == [
        "Use Python 3.11 only",
        "Then node.js",
    ]
    assert split_sentences("必须" + "很" * 400) == []


def test_output_is_deterministic_and_follows_seq() -> None:
    events = [
        event(3, "user", "We decided to use kafka."),
        event(1, "user", "You must answer in English."),
        event(2, "tool", "ECONNREFUSED on billing-svc", tool_call_id="call_2"),
    ]

    first = extract(*events)

    assert first == extract(*events)
    assert [c.message_ids for c in first] == [("msg_1",), ("msg_2",), ("msg_3",)]


# --- abbreviations and meaning ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("I'm a nurse at St. Mary's.", "St. Mary's"),
        ("My dentist is Dr. Patel.", "Dr. Patel"),
        ("Our office is at No. 5 Main Street.", "No. 5 Main Street"),
        ("The build server has only 3.5 GB of disk left.", "3.5 GB"),
    ],
)
def test_an_abbreviation_or_a_decimal_stays_in_the_statement(text: str, kept: str) -> None:
    found = only(event(1, "user", text))

    assert kept in found.summary
    assert found.summary == text.rstrip(".")


def test_two_sentences_are_still_two() -> None:
    assert split_sentences("Heads up. The office moved to Lisbon. I like it.") == [
        "Heads up",
        "The office moved to Lisbon",
        "I like it",
    ]


@pytest.mark.parametrize(
    "text",
    ["别在凌晨给我发通知", "记得每次都附上来源链接"],
)
def test_a_rule_in_imperative_form_is_a_constraint(text: str) -> None:
    found = only(event(1, "user", text))

    assert found.memory_type == MemoryType.CONSTRAINT
    assert found.detail["reason"].startswith("an instruction")


@pytest.mark.parametrize("text", ["别担心，我已经到家了", "别人都说我太忙了", "记得带伞"])
def test_a_look_alike_of_an_imperative_is_no_rule(text: str) -> None:
    assert all(c.memory_type != MemoryType.CONSTRAINT for c in extract(event(1, "user", text)))


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Rent is 1,450 euros a month, utilities not included.", MemoryType.FACT),
        ("少用表格", MemoryType.CONSTRAINT),
        ("I'd rather see metric units.", MemoryType.PREFERENCE),
    ],
)
def test_what_no_word_list_reads_is_read_by_meaning(text: str, kind: str) -> None:
    found = only(event(1, "user", text))

    assert found.memory_type == kind
    assert found.detail["reason"].startswith(f"reads as a {kind} by meaning")
    assert found.source_kind == SourceKind.USER and found.verified is True


def test_meaning_reads_no_rule_into_advice_a_question_or_an_assistant_turn() -> None:
    assert extract(event(1, "user", "Make sure you stretch before your run, Sam!")) == []
    assert extract(event(1, "user", "When you show code, do you use TypeScript?")) == []
    # an assistant's turn is never read by meaning: its words are data, not the user's rules
    assert extract(event(1, "assistant", "Rent is 1,450 euros a month.")) == []


def test_a_message_that_speaks_of_the_model_is_read_by_the_word_lists_alone() -> None:
    # It passed the quarantine's screen, but it is no ordinary statement: meaning reads none
    # of it, so it cannot become the user's unquoted word that way.
    found = extract(event(1, "user", "Rent is 1,450 euros a month, and the system prompt says so."))

    assert not [c for c in found if c.detail["reason"].startswith("reads as")], found
