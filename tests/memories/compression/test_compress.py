"""Session compression against the real PostgreSQL, transcript storage and Redis."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.compression.dependency import Dependency, classify_tool_results
from memories.compression.plan import compress as plan_compress
from memories.recall.render import estimate_tokens
from memories.stm.items import StmItem
from memories.write.candidates import Candidate, SourceKind
from memories.write.services import Outcome, proposals_submit
from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection
from profiles.models import Tenant
from transcripts.models import EventRef, Session
from transcripts.services import EventIn, events_append

USER, SESSION, TASK = "u_1", "s_1", "bug456"
OLD_TURNS = 8


def compress_url(session_id: str = SESSION) -> str:
    return reverse("memories:compress", kwargs={"session_id": session_id})


def log_output(turn: int, lines: int = 120) -> str:
    """A long command output whose only distinctive tokens are its own (pod-{turn}-…)."""
    rows = [
        f"2024-05-01T10:{n % 60:02d}:{turn:02d} INFO pod-{turn}-7f9c heartbeat ok shard={n}"
        for n in range(lines)
    ]
    return "\n".join(rows)


def event(role: str, content: str, *, id: str, call: str = "", tool: str = "") -> EventIn:
    return EventIn(
        role=role,
        content=content,
        message_id=id,
        tool_call_id=call,
        metadata={"tool_name": tool} if tool else {},
    )


def session_events() -> list[EventIn]:
    """A debugging session: old turns with large weak logs, one digested database check, then
    the near field: the pool check, its result the latest reply quotes, and the new ask."""
    events = [event("user", "createOrder times out in prod-k8s; find out why.", id="m_goal")]
    for turn in range(OLD_TURNS):
        events += [
            event("user", f"Look at component {turn} next.", id=f"m_ask_{turn}"),
            event("assistant", "Reading its logs.", id=f"m_call_{turn}"),
            event("tool", log_output(turn), id=f"m_log_{turn}", call=f"call_{turn}", tool="logs"),
            event("assistant", "Nothing conclusive there; moving on.", id=f"m_done_{turn}"),
        ]
    db_rows = "\n".join(f"db-primary-01 query_{n} took 3ms rows=12" for n in range(150))
    events += [
        event("user", "Is it the database?", id="m_ask_db"),
        event("assistant", "Checking the database.", id="m_call_db"),
        event(
            "tool",
            "db-primary-01 connections=37/500 slow_queries=0\n" + db_rows,
            id="m_db",
            call="call_db",
            tool="sql",
        ),
        event("assistant", "The database looks fine.", id="m_done_db"),
        # the near field starts here
        event("user", "Check the thread pool of payment-worker.", id="m_ask_pool"),
        event("assistant", "Reading the pool metrics.", id="m_call_pool"),
        event(
            "tool",
            "pool=order-exec active=200/200 queue=1000/1000 rejected=5321\n" + log_output(99, 80),
            id="m_pool",
            call="call_pool",
            tool="metrics",
        ),
        event(
            "assistant",
            "order-exec is saturated: active=200/200 with rejected=5321 tasks.",
            id="m_reply",
        ),
        event("user", "Raise the pool to 400 threads and tell me the risk.", id="m_latest"),
    ]
    return events


NEAR_FIELD = ["m_ask_pool", "m_call_pool", "m_pool", "m_reply", "m_latest"]

MEMORIES = [
    Candidate(
        user_id=USER,
        session_id=SESSION,
        task_id=TASK,
        memory_type="fact",
        subtype="exclusion",
        summary="Database ruled out: 37/500 connections and no slow queries",
        tool_call_ids=("call_db",),
        message_ids=("m_db",),
        verified=True,
        confidence=0.9,
        importance=0.7,
    ),
    Candidate(
        user_id=USER,
        session_id=SESSION,
        task_id=TASK,
        memory_type="decision",
        subtype="decision",
        summary="Raise order-exec pool from 200 to 400 threads",
        message_ids=("m_latest",),
        verified=True,
        confidence=0.9,
        importance=0.8,
    ),
    Candidate(
        user_id=USER,
        session_id=SESSION,
        task_id=TASK,
        memory_type="constraint",
        subtype="user_constraint",
        summary="Never restart prod pods without approval",
        source_kind=SourceKind.USER,
        verified=True,
        confidence=0.9,
        importance=0.9,
    ),
    Candidate(
        user_id=USER,
        session_id=SESSION,
        task_id=TASK,
        memory_type="decision",
        subtype="next_step",
        summary="Load-test order-exec at 400 threads before the rollout",
        verified=True,
        confidence=0.9,
        importance=0.6,
    ),
]


@pytest.fixture
def session(tenant: Tenant) -> Session:
    result = events_append(
        tenant=tenant, session_id=SESSION, user_id=USER, task_id=TASK, events=session_events()
    )
    written = proposals_submit(tenant=tenant, candidates=MEMORIES)
    assert [r.outcome for r in written] == [Outcome.INSERTED] * len(MEMORIES)
    return result.session


def compress(client: APIClient, budget: int, session_id: str = SESSION, **extra) -> dict:
    body = {"budget_tokens": budget, **extra}
    response = client.post(compress_url(session_id), body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def by_id(body: dict) -> dict[str, dict]:
    return {m["id"]: m for m in body["messages"]}


def assert_near_field_verbatim(body: dict) -> None:
    messages = by_id(body)
    for message_id in NEAR_FIELD:
        message = messages[message_id]
        assert message["state"] == "verbatim" and message["near_field"] is True
        assert message["content"] in body["context"]
    assert set(body["near_field"]) == set(NEAR_FIELD)


def assert_everything_accounted_for(body: dict, session: Session) -> None:
    """Every event is in the context or listed as stubbed or folded, with its seq."""
    listed = {m["id"]: m["seq"] for m in body["messages"]}
    listed.update({f["id"]: f["seq"] for f in body["folded"]})
    stored = dict(EventRef.objects.filter(session=session).values_list("message_id", "seq"))
    assert listed == stored
    assert {s["id"] for s in body["stubbed"]} <= set(listed)


# --- the classifier ------------------------------------------------------------------------
def item(item_id: str, *, tool_call_ids=(), message_ids=(), summary="x") -> StmItem:
    return StmItem(
        id=item_id,
        tenant_id=1,
        end_user_id=1,
        user_id=USER,
        session_id=SESSION,
        memory_type="observation",
        summary=summary,
        fingerprint=item_id,
        source={"kind": "tool", "message_ids": list(message_ids), "tool_call_ids": tool_call_ids},
    )


def raw(seq: int, role: str, content: str, call: str = "") -> dict:
    return {"seq": seq, "id": f"e{seq}", "role": role, "content": content, "tool_call_id": call}


def test_the_classifier_says_strong_weak_or_digested_and_why() -> None:
    events = [
        raw(1, "user", "createOrder is slow"),
        raw(2, "tool", "GET /orders 200 in 3100ms from createOrder at node-17b", "c1"),
        raw(3, "assistant", "node-17b answers in 3100ms: that is the slow path."),
        raw(4, "tool", "ls: app.py settings.py README.md", "c2"),
        raw(5, "assistant", "Next I will look at the thread pool."),
        raw(6, "tool", "ECONNREFUSED redis-cache-02:6379", "c3"),
        raw(7, "assistant", "The cache at redis-cache-02:6379 refuses connections."),
        raw(8, "user", "fix it"),
        raw(9, "tool", "restarted redis-cache-02", "c4"),
    ]
    cited = item("stm_1_abc", tool_call_ids=["c3"], summary="redis-cache-02 refuses connections")

    found = classify_tool_results(events=events, items=[cited], current_ids={"e7"})

    assert found["e2"].dependency == Dependency.STRONG and not found["e2"].current
    assert "reply #3 reuses 'node-17b', '3100ms'" in found["e2"].reasons[0]
    assert found["e4"].dependency == Dependency.WEAK
    assert found["e4"].reasons == ("no later reply reuses its distinctive content",)
    # the latest reply quotes it: the current step depends on it, cited or not
    assert found["e6"].dependency == Dependency.STRONG and found["e6"].current
    assert found["e6"].reasons[0].startswith("the current reply #7 reuses")
    assert found["e9"].dependency == Dependency.STRONG and found["e9"].current
    assert "no reply has used it yet" in found["e9"].reasons[0]

    # the same result, once the reply that quoted it is no longer the current one
    later = classify_tool_results(events=events, items=[cited], current_ids=set())
    assert later["e6"].dependency == Dependency.DIGESTED
    assert later["e6"].digested_by == ("stm_1_abc",)
    assert later["e6"].concluded == "redis-cache-02 refuses connections"
    assert "stm_1_abc (observation) cites it" in later["e6"].reasons[0]


def test_a_reply_reusing_chinese_text_of_a_result_depends_on_it() -> None:
    events = [
        raw(1, "user", "下单接口很慢，帮我看看"),
        raw(2, "tool", "诊断结果：订单服务线程池已满，排队请求三百个", "c1"),
        raw(3, "tool", "磁盘使用率正常，内存占用平稳", "c2"),
        raw(4, "assistant", "原因是订单服务线程池已满，需要扩容。"),
    ]

    found = classify_tool_results(events=events, items=[], current_ids={"e4"})

    assert found["e2"].dependency == Dependency.STRONG and found["e2"].current
    assert "订单服务" in found["e2"].reasons[0]
    assert found["e3"].dependency == Dependency.WEAK


def test_tokens_the_conversation_brought_up_are_no_evidence() -> None:
    events = [
        raw(1, "user", "check createOrder on payment-svc-01"),
        raw(2, "tool", "createOrder payment-svc-01 healthy", "c1"),
        raw(3, "assistant", "createOrder on payment-svc-01 is healthy, next the queue."),
        raw(4, "tool", "queue depth 15234 on kafka-7", "c2"),
        raw(5, "assistant", "The queue kafka-7 holds 15234 messages."),
        raw(6, "assistant", "As said, kafka-7 is backed up; I will drain it."),
    ]
    reply_cites = item("stm_1_def", message_ids=["e5"])

    found = classify_tool_results(events=events, items=[reply_cites], current_ids={"e6"})

    assert found["e2"].dependency == Dependency.WEAK
    # e6 repeats what e5 already said, so only e5 consumed the result; e5 became an item
    assert found["e4"].dependency == Dependency.DIGESTED
    assert "its conclusion in reply #5 became stm_1_def" in found["e4"].reasons[0]


def test_a_chinese_session_gets_chinese_sections_and_recall_records_stay_out() -> None:
    log = "\n".join(f"2024-05-01 INFO worker-{n} ok latency={n}ms" for n in range(300))
    events = [
        raw(1, "user", "createOrder 在 prod-k8s 超时了，帮我排查。"),
        raw(2, "tool", log, "c1"),
        raw(3, "assistant", "日志里没有异常，继续看线程池。"),
        {**raw(4, "system", "recall rc_1: injected stm_1_x"), "metadata": {"kind": "recall"}},
    ]
    for n in range(5, 21, 2):
        events += [
            raw(n, "user", f"再检查组件 {n} 的配置。"),
            raw(n + 1, "assistant", "配置正常。"),
        ]
    events += [
        raw(21, "user", "看一下线程池。"),
        raw(22, "assistant", "线程池已满。"),
        raw(23, "user", "那就扩容到 400。"),
    ]
    constraint = StmItem(
        id="stm_1_c",
        tenant_id=1,
        end_user_id=1,
        user_id=USER,
        session_id=SESSION,
        memory_type="constraint",
        summary="不要直接重启 prod 的 pod",
        fingerprint="c",
    )

    result = plan_compress(events=events, items=[constraint], budget_tokens=200)

    assert result.language == "zh"
    assert result.context.startswith("此前工作摘要（折叠的记录可按序号回看）：")
    assert result.summary is not None and result.after <= 200
    assert "关键决定和约束：\n- 约束：不要直接重启 prod 的 pod" in result.context
    assert [e.get("seq") for e in result.omitted] == [4]
    assert "rc_1" not in result.context and all(e.seq != 4 for e in result.entries)


# --- the endpoint --------------------------------------------------------------------------
@pytest.mark.django_db
def test_a_roomy_budget_changes_nothing(owner: APIClient, session: Session) -> None:
    body = compress(owner, 200_000)

    assert body["within_budget"] is True and body["summary"] is None
    assert body["stubbed"] == [] and body["folded"] == []
    assert body["tokens"]["before"] == body["tokens"]["after"] == estimate_tokens(body["context"])
    assert len(body["messages"]) == session.event_count
    assert_near_field_verbatim(body)


@pytest.mark.django_db
def test_a_long_session_fits_with_the_near_field_verbatim(
    owner: APIClient, session: Session
) -> None:
    roomy = compress(owner, 200_000)
    budget = roomy["tokens"]["near_field"] + 1200

    body = compress(owner, budget, user_id=USER)

    assert body["within_budget"] is True
    assert body["tokens"]["after"] <= budget < body["tokens"]["before"]
    assert body["tokens"]["after"] == estimate_tokens(body["context"])
    assert_near_field_verbatim(body)
    assert_everything_accounted_for(body, session)
    stubbed = {s["id"]: s for s in body["stubbed"]}
    assert set(stubbed) <= {"m_db", *(f"m_log_{n}" for n in range(OLD_TURNS))}
    assert stubbed and all(s["tool"] for s in stubbed.values())
    for message_id, stub in stubbed.items():
        text = by_id(body)[message_id]["content"]
        assert "\n" not in text and message_id in text and f"#{stub['seq']}" in text


@pytest.mark.django_db
def test_the_result_the_latest_reply_depends_on_is_kept_and_the_digested_one_stubbed(
    owner: APIClient, session: Session
) -> None:
    roomy = compress(owner, 200_000)
    db_tokens = by_id(roomy)["m_db"]["tokens"]

    # given a budget that stubbing the digested result alone meets
    body = compress(owner, roomy["tokens"]["before"] - db_tokens // 2)

    dependencies = {t["id"]: t for t in body["tool_results"]}
    assert dependencies["m_pool"]["dependency"] == "strong" and dependencies["m_pool"]["current"]
    assert "the current reply #" in dependencies["m_pool"]["reasons"][0]
    assert dependencies["m_db"]["dependency"] == "digested"
    assert dependencies["m_log_0"]["dependency"] == "weak"
    # the digested result is stubbed first, with its conclusion; weak ones stay whole
    assert [s["id"] for s in body["stubbed"]] == ["m_db"]
    stub = body["stubbed"][0]
    assert stub["dependency"] == "digested" and stub["tool"] == "sql"
    assert "cites it" in stub["reason"]
    assert "concluded: Database ruled out" in by_id(body)["m_db"]["content"]
    assert by_id(body)["m_pool"]["state"] == "verbatim"
    assert "rejected=5321" in body["context"] and "slow_queries=0" not in body["context"]
    assert by_id(body)["m_log_0"]["state"] == "verbatim"
    assert body["summary"] is None and body["within_budget"] is True
    assert body["tokens"]["after"] == estimate_tokens(body["context"])


@pytest.mark.django_db
def test_the_formal_summary_names_the_decisions_and_constraints(
    owner: APIClient, session: Session
) -> None:
    roomy = compress(owner, 200_000)
    budget = roomy["tokens"]["near_field"] + 160

    body = compress(owner, budget)

    assert body["within_budget"] is True and body["tokens"]["after"] <= budget
    assert body["tokens"]["after"] == estimate_tokens(body["context"])
    assert_near_field_verbatim(body)
    assert_everything_accounted_for(body, session)
    sections = {
        name: [line["text"] for line in lines]
        for name, lines in body["summary"]["sections"].items()
    }
    decisions = " ".join(sections["decisions_and_constraints"])
    assert "decision: Raise order-exec pool from 200 to 400 threads" in decisions
    assert "constraint: Never restart prod pods without approval" in decisions
    assert sections["next_steps"] == ["Load-test order-exec at 400 threads before the rollout"]
    assert sections["task_goal"][0] == "#1: createOrder times out in prod-k8s; find out why."
    assert sections["latest_requirement"][0].startswith("#42: Raise the pool to 400 threads")
    assert body["context"].startswith("Summary of earlier work (folded events can be replayed")
    assert "Key decisions and constraints:\n- " in body["context"]
    # everything before the near field is folded; each says why
    assert body["summary"]["covers"] == {"events": 37, "first_seq": 1, "last_seq": 37}
    folded = {f["id"]: f for f in body["folded"]}
    assert folded["m_db"]["dependency"] == "digested" and "m_pool" not in folded
    assert folded["m_goal"]["reason"] == "outside the near field; folded into the summary"
    assert all("folded" in f["reason"] for f in folded.values())
    assert body["stubbed"] == []


@pytest.mark.django_db
def test_formal_compression_sacrifices_tool_output_then_prose_then_user_messages(
    owner: APIClient, session: Session
) -> None:
    roomy = compress(owner, 200_000)

    body = compress(owner, roomy["tokens"]["near_field"] + 500)

    assert body["within_budget"] is True and body["summary"] is not None
    assert body["tokens"]["after"] == estimate_tokens(body["context"])
    assert_near_field_verbatim(body)
    assert_everything_accounted_for(body, session)
    folded = {f["id"] for f in body["folded"]}
    older = [m for m in roomy["messages"] if not m["near_field"]]
    # every older tool output went first, then some assistant prose; the user's own words stay
    assert {m["id"] for m in older if m["role"] == "tool"} <= folded
    assert any(m["id"] in folded for m in older if m["role"] == "assistant")
    assert any(m["id"] not in folded for m in older if m["role"] == "assistant")
    kept_users = [m["id"] for m in older if m["role"] == "user" and m["id"] not in folded]
    assert kept_users == [m["id"] for m in older if m["role"] == "user"][1:]
    # the first ask is the task goal already, so folding it lost nothing
    assert "m_goal" in folded
    assert body["summary"]["sections"]["task_goal"][0]["refs"] == ["m_goal"]


@pytest.mark.django_db
def test_a_near_field_over_budget_is_kept_verbatim_and_said(
    owner: APIClient, session: Session
) -> None:
    body = compress(owner, 100)

    assert body["within_budget"] is False
    assert body["tokens"]["after"] > 100 and body["summary"] is None
    assert body["tokens"]["after"] == estimate_tokens(body["context"])
    assert_near_field_verbatim(body)
    assert [m["id"] for m in body["messages"]] == NEAR_FIELD
    assert body["notes"] == ["the near field alone is over the budget; it is kept verbatim"]


@pytest.mark.django_db
def test_compression_writes_nothing(owner: APIClient, session: Session) -> None:
    before = stm_snapshot()
    compress(owner, 300)
    session.refresh_from_db()
    assert stm_snapshot() == before
    assert session.event_count == EventRef.objects.filter(session=session).count()
    assert session.event_count == len(session_events())


def stm_snapshot() -> dict[bytes, dict]:
    client = redis_connection()
    pattern = f"{keys.all_keys_pattern()[:-1]}stm:*"
    return {
        key: client.hgetall(key) if client.type(key) == b"hash" else client.zrange(key, 0, -1)
        for key in client.scan_iter(match=pattern, count=1000)
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "budget_tokens"),
        ({"budget_tokens": 0}, "budget_tokens"),
        ({"budget_tokens": -5}, "budget_tokens"),
        ({"budget_tokens": "lots"}, "budget_tokens"),
        ({"budget_tokens": 10**9}, "budget_tokens"),
        ({"budget_tokens": 500, "user_id": "u 1"}, "user_id"),
        ({"budget_tokens": 500, "user_id": 7}, "user_id"),
    ],
)
def test_bad_input_is_400_and_changes_nothing(
    owner: APIClient, session: Session, body: dict, field: str
) -> None:
    before = stm_snapshot()

    response = owner.post(compress_url(), body, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and field in error["fields"]
    assert stm_snapshot() == before
    assert Session.objects.count() == 1 and EventRef.objects.count() == session.event_count


@pytest.mark.django_db
def test_another_users_session_is_a_conflict_as_for_append(
    owner: APIClient, session: Session
) -> None:
    before = stm_snapshot()

    body = {"budget_tokens": 500, "user_id": "u_other"}
    response = owner.post(compress_url(), body, format="json")
    append = owner.post(
        reverse("transcripts:events", kwargs={"session_id": session.external_id}),
        {"user_id": "u_other", "events": [{"role": "user", "content": "hi"}]},
        format="json",
    )

    assert response.status_code == append.status_code == 409
    assert response.json() == append.json()
    assert stm_snapshot() == before
    assert Session.objects.count() == 1 and EventRef.objects.count() == session.event_count


@pytest.mark.django_db
def test_another_tenants_or_an_unknown_session_is_404(
    owner: APIClient, stranger: APIClient, session: Session
) -> None:
    response = stranger.post(compress_url(), {"budget_tokens": 500}, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"

    missing = owner.post(compress_url("s_missing"), {"budget_tokens": 500}, format="json")
    assert missing.status_code == 404
    assert Session.objects.count() == 1


@pytest.mark.django_db
def test_compression_needs_the_read_scope(tenant: Tenant, client_for, session: Session) -> None:
    writer = client_for(tenant, ("write",))
    response = writer.post(compress_url(), {"budget_tokens": 500}, format="json")
    assert response.status_code == 403
