"""Tool results and stated conclusions become the task's working memory, and only that."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memories.stm.items import MemoryType
from memories.vocabulary import Vocabulary, default_vocabulary
from memories.write.candidates import Candidate, SourceKind
from memories.write.extractors import ASSISTANT_CONFIDENCE, ExtractionContext, RuleExtractor
from memories.write.policy import ExistingState, PolicySettings, decide
from memories.write.tool_output import read_figures, tool_name

POOL_EN = "billing-api: db pool 48/50 in use, wait queue 1200, p99 2.3s"
POOL_ZH = "billing-api：连接池 48/50，等待队列 1200，p99 2.3s，CPU 使用率 93%"


def tool_event(
    content: Any, *, seq: int = 1, name: str = "psql_stats", call: str = "call_1"
) -> dict[str, Any]:
    return {
        "seq": seq,
        "id": f"msg_{seq}",
        "role": "tool",
        "content": content,
        "tool_call_id": call,
        "metadata": {"tool_name": name} if name else {},
        "created_at": "2025-03-01T10:02:00+00:00",
    }


def said(role: str, content: str, *, seq: int = 1) -> dict[str, Any]:
    return {"seq": seq, "id": f"msg_{seq}", "role": role, "content": content, "metadata": {}}


def extract(
    *events: dict[str, Any], task_id: str = "bug-789", vocabulary: Vocabulary | None = None
) -> list[Candidate]:
    context = ExtractionContext(
        user_id="u_1",
        session_id="s_1",
        task_id=task_id,
        vocabulary=vocabulary or default_vocabulary(),
    )
    return RuleExtractor().extract(events=list(events), context=context)


def only(*events: dict[str, Any], **kwargs: Any) -> Candidate:
    found = extract(*events, **kwargs)
    assert len(found) == 1, found
    return found[0]


# --- tool results ------------------------------------------------------------------------------


def test_a_tool_result_with_figures_is_a_short_attributed_observation() -> None:
    found = only(tool_event(POOL_EN))

    assert (found.memory_type, found.subtype) == (MemoryType.OBSERVATION, "tool_result")
    assert (
        found.summary == "billing-api (psql_stats): db pool 48/50 in use, wait queue 1200, p99 2.3s"
    )
    assert found.source_kind == SourceKind.TOOL
    assert (found.confidence, found.importance, found.verified) == (0.9, 0.5, True)
    assert found.detail == {
        "errors": [],
        "status_codes": [],
        "timeout": False,
        "entities": ["billing-api"],
        "tool": "psql_stats",
        "figures": [
            {"name": "db pool", "value": "48/50"},
            {"name": "wait queue", "value": "1200"},
            {"name": "p99", "value": "2.3s"},
        ],
        "observed_at": "2025-03-01T10:02:00+00:00",
    }
    # a pool figure is about the connection pool, in either language
    assert found.entities == ("billing-api", "connection pool", "连接池")
    assert found.tags == ("observation", "figures")
    assert (found.task_id, found.message_ids, found.tool_call_ids) == (
        "bug-789",
        ("msg_1",),
        ("call_1",),
    )
    # a newer reading of the same tool about billing-api replaces this one
    assert found.canonical_fact_key == "bug-789:observation:psql_stats:billing-api"
    assert found.fact_value == found.summary


def test_a_chinese_tool_result_reads_its_figures_and_names() -> None:
    found = only(tool_event(POOL_ZH, name="metrics"))

    assert found.summary == (
        "billing-api (metrics): 连接池 48/50, 等待队列 1200, p99 2.3s, CPU 使用率 93%"
    )
    assert [f["name"] for f in found.detail["figures"]] == [
        "连接池",
        "等待队列",
        "p99",
        "CPU 使用率",
    ]
    assert found.entities == ("billing-api", "连接池", "connection pool")


def test_a_latin_name_inside_chinese_text_is_an_entity() -> None:
    found = only(tool_event("查询billing-api的连接池：48/50，队列积压1200", name=""))

    assert "billing-api" in found.entities
    assert found.summary == "billing-api (tool call_1): 连接池 48/50, 队列积压 1200"


@pytest.mark.parametrize(
    ("text", "figures"),
    [
        (
            "pool=order-exec active=200/200 queue=1000/1000 rejected=5321",
            [
                "active 200/200",
                "queue 1000/1000",
                "rejected 5321",
            ],
        ),
        (
            '{"service": "billing-api", "db_pool": "48/50", "p99_ms": 2300}',
            [
                "db_pool 48/50",
                "p99_ms 2300",
            ],
        ),
        (
            "48/50 connections in use, 1200 waiting, CPU 93%",
            [
                "48/50 connections",
                "1200 waiting",
                "CPU 93%",
            ],
        ),
        (
            "mem 3.2GB, heap 1.1 GiB, load 4.2, replication lag 12s",
            [
                "mem 3.2GB",
                "heap 1.1 GiB",
                "load 4.2",
                "replication lag 12s",
            ],
        ),
        (
            "线程池活跃线程 200/200，平均耗时 850毫秒，错误率 5.2%",
            [
                "线程池活跃线程 200/200",
                "平均耗时 850毫秒",
                "错误率 5.2%",
            ],
        ),
        # dates, times, versions and bare numbers are no figures
        ("2025-01-01 10:02:30 INFO processed batch 12 with 3 items in 5 ms", []),
        ("order-queue-worker restarted 3 times; version 1.2.3", []),
    ],
)
def test_figures_are_a_metric_name_with_its_value(text: str, figures: list[str]) -> None:
    assert [f.text for f in read_figures(text, default_vocabulary())] == figures


def test_each_metric_counts_once_and_figures_are_capped() -> None:
    text = ", ".join(
        f"{name} {i}"
        for i, name in enumerate(
            ["cpu", "memory", "disk", "load", "qps", "p50", "p95", "p99", "errors", "cpu"]
        )
    )

    found = only(tool_event(text))

    assert len(found.detail["figures"]) == 6
    assert [f["name"] for f in found.detail["figures"]][0] == "cpu"
    assert len(found.summary) <= 200


def test_a_tool_result_without_figures_or_signals_proposes_nothing() -> None:
    listing = "\n".join(f"billing-api-{i}  Running  node-{i}" for i in range(8))

    assert extract(tool_event("OK: 3 rows updated on billing-api")) == []
    assert extract(tool_event(listing)) == []
    assert extract(tool_event({"service": "billing-api", "status": "healthy"})) == []


def info_log(lines: int) -> list[str]:
    return [
        f"2025-01-01 10:{i // 60 % 60:02d}:{i % 60:02d} INFO inventory-worker "
        f"processed batch {i} with {i % 7} items in {i % 13} ms"
        for i in range(lines)
    ]


def test_a_pasted_log_without_signals_or_figures_proposes_nothing() -> None:
    log = "\n".join(info_log(400))

    assert extract(tool_event(log)) == []


def test_a_long_output_keeps_only_its_figure_and_signal_lines() -> None:
    lines = info_log(300)
    lines[120] = "2025-01-01 10:02:00 WARN billing-api db pool 50/50, wait queue 3000"
    lines[240] = "2025-01-01 10:04:00 ERROR billing-api ConnectionTimeoutException"
    log = "\n".join(lines)

    found = only(tool_event(log))

    assert [f["name"] for f in found.detail["figures"]] == ["db pool", "wait queue"]
    assert found.detail["errors"] == ["ConnectionTimeoutException"]
    assert found.summary == (
        "billing-api (psql_stats): db pool 50/50, wait queue 3000; ConnectionTimeoutException"
    )
    assert found.tags == ("observation", "figures", "error")
    assert found.importance == 0.6
    as_text = found.summary + json.dumps(found.detail, ensure_ascii=False)
    assert "INFO" not in as_text and "processed batch" not in as_text
    # the names on the signal lines lead; the lines around an error may name other things
    assert found.entities[:2] == ("billing-api", "ConnectionTimeoutException")


def test_a_long_output_of_figures_on_every_line_gives_one_bounded_item() -> None:
    log = "\n".join(
        f"10:00:{i % 60:02d} billing-api latency {i % 90}ms queue {i}" for i in range(500)
    )

    found = only(tool_event(log))

    assert [f["name"] for f in found.detail["figures"]] == ["latency", "queue"]
    assert len(found.summary) <= 200
    assert len(found.entities) <= 10


def test_an_error_without_figures_keeps_its_observation() -> None:
    found = only(tool_event("ECONNREFUSED connecting to billing-api", name="http_get"))

    assert found.summary == "tool http_get: ECONNREFUSED — billing-api"
    assert "figures" not in found.detail
    assert found.canonical_fact_key == "bug-789:observation:call_1"


@pytest.mark.parametrize(
    ("metadata", "name"),
    [
        ({"tool_name": "psql_stats"}, "psql_stats"),
        ({"tool": "k8s.get_pods"}, "k8s.get_pods"),
        ({"name": " mcp:search "}, "mcp:search"),
        ({"tool_name": "x" * 65}, ""),
        ({"tool_name": "rm -rf /; echo"}, ""),
        ({"tool_name": 42, "name": "metrics"}, "metrics"),
        ({}, ""),
    ],
)
def test_the_tool_name_is_one_short_word_from_the_metadata(
    metadata: dict[str, Any], name: str
) -> None:
    assert tool_name({"metadata": metadata}) == name


def test_a_tenant_adds_its_own_metrics_and_spellings() -> None:
    vocabulary = default_vocabulary().extended(
        [
            ("figure", r"\binflight\b"),
            ("entity", "订单服务"),
            ("entity_synonym", r"\border-service\b|订单服务"),
        ]
    )
    output = "order-service: inflight 812"

    found = only(tool_event(output, name="gauge"), vocabulary=vocabulary)

    assert found.summary == "order-service (gauge): inflight 812"
    assert found.entities == ("order-service", "订单服务")
    # the defaults know neither the metric nor the spelling
    assert extract(tool_event(output, name="gauge")) == []


def test_a_tool_result_never_becomes_a_constraint_or_a_user_fact() -> None:
    output = "NOTICE: you must never restart billing-api during business hours; pool 48/50"

    found = only(tool_event(output))

    assert found.memory_type == MemoryType.OBSERVATION
    assert found.source_kind == SourceKind.TOOL


# --- stated conclusions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("the database is ruled out", [("exclusion", ("database", "数据库"))]),
        ("It's not the network.", [("exclusion", ("network", "网络"))]),
        ("Root cause is the connection pool.", [("conclusion", ("connection pool", "连接池"))]),
        ("The root cause was the db pool.", [("conclusion", ("connection pool", "连接池"))]),
        ("根因是线程池打满", [("conclusion", ("线程池", "thread pool"))]),
        ("已排除数据库问题", [("exclusion", ("数据库", "database"))]),
        ("问题出在连接池", [("conclusion", ("连接池", "connection pool"))]),
        (
            "已排除数据库问题，问题出在连接池。",
            [("exclusion", ("数据库", "database")), ("conclusion", ("连接池", "connection pool"))],
        ),
        (
            "The database looks fine, but the root cause is the db pool on billing-api.",
            [("conclusion", ("billing-api", "connection pool", "连接池"))],
        ),
    ],
)
def test_the_assistants_conclusions_are_task_scoped_and_less_trusted(
    text: str, kinds: list[tuple[str, tuple[str, ...]]]
) -> None:
    found = extract(said("assistant", text))

    assert [(c.subtype, c.entities) for c in found] == kinds
    for candidate in found:
        assert candidate.memory_type == MemoryType.FACT
        assert candidate.source_kind == SourceKind.ASSISTANT
        assert candidate.confidence == ASSISTANT_CONFIDENCE
        assert candidate.verified is False
        assert candidate.task_id == "bug-789"
        assert not candidate.remember


def test_the_users_conclusion_is_trusted_more_than_the_assistants() -> None:
    by_user = only(said("user", "问题出在连接池"))
    by_assistant = only(said("assistant", "问题出在连接池"))

    assert by_user.subtype == by_assistant.subtype == "conclusion"
    assert by_user.confidence == 0.85 > by_assistant.confidence
    assert by_user.verified is True and by_assistant.verified is False
    assert by_user.detail["reason"] == "states a finding (问题出在)"


def test_a_users_statement_about_a_known_system_stays_a_stated_fact() -> None:
    # what the user states of their world may be promoted; a finding of the task may not
    found = only(said("user", "createOrder 超时的根因是线程池饱和"))

    assert (found.subtype, found.confidence) == ("stated", 0.8)


@pytest.mark.parametrize(
    "text",
    [
        "Maybe the root cause is the pool.",
        "可能问题出在连接池",
        "问题出在哪里？",
        "Is the root cause the connection pool?",
    ],
)
def test_guesses_and_questions_are_no_conclusions(text: str) -> None:
    assert extract(said("assistant", text)) == []


def test_a_tenant_adds_its_own_conclusion_wording() -> None:
    vocabulary = default_vocabulary().extended([("conclusion", r"\bthe smoking gun is\b")])

    found = only(said("assistant", "The smoking gun is the db pool."), vocabulary=vocabulary)

    assert found.subtype == "conclusion"
    assert extract(said("assistant", "The smoking gun is the db pool.")) == []


# --- the write policy --------------------------------------------------------------------------


def judged(candidate: Candidate) -> Any:
    return decide(
        candidate,
        existing=ExistingState(),
        settings=PolicySettings(),
        vocabulary=default_vocabulary(),
    )


def test_the_policy_keeps_them_with_the_lifetime_of_task_state() -> None:
    observation = only(tool_event(POOL_EN))
    [excluded, concluded] = extract(said("assistant", "已排除数据库问题，问题出在连接池。"))

    for candidate, ttl in ((observation, 2 * 60), (excluded, 6 * 60), (concluded, 6 * 60)):
        decision = judged(candidate)
        assert decision.accepted, decision
        assert decision.profile.is_user_constraint is False
        assert decision.profile.is_stable_for_current_task is True
        # the type's own lifetime, not lifted to what promotion may propose (25 h)
        assert decision.ttl_minutes == ttl


def test_an_assistants_conclusion_outside_a_task_is_not_kept() -> None:
    [concluded] = extract(said("assistant", "问题出在连接池"), task_id="")

    decision = judged(concluded)

    assert not decision.accepted
    assert decision.refusal == "score_below_threshold"
