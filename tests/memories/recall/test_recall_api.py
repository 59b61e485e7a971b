"""Recall end to end through the API, against the real PostgreSQL, Redis, ES stand-in and Milvus."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.ltm.models import LtmCard
from memories.ltm.services import CardInput, cards_import, outbox_drain
from memories.recall import cache as recall_cache
from memories.recall.models import RecallEffectOutbox
from memories.recall.render import estimate_tokens
from memories.stm import store as stm_store_module
from memories.stm.store import stm_store
from memoryproject import redis_client
from memoryproject.redis_keys import Owner
from profiles import key_cache, throttling
from profiles.models import EndUser
from profiles.services.profile_versions import fact_set
from tests.factories import ProjectFactory

RECALL = reverse("memories:recall")
PROPOSALS = reverse("memories:proposals")
QUERY = "继续 bug456：createOrder 在 prod-k8s 超时，数据库已排除"

DIAGNOSIS = [
    {
        "memory_type": "fact",
        "subtype": "symptom",
        "summary": "createOrder 在 prod-k8s 超时（p99 超过 3 秒）",
        "entities": ["createOrder", "prod-k8s"],
        "canonical_fact_key": "bug456:createorder:symptom",
        "fact_value": "timeout",
    },
    {
        "memory_type": "fact",
        "subtype": "exclusion",
        "summary": "数据库已排除：连接数和慢查询都正常",
        "entities": ["数据库", "createOrder"],
        "canonical_fact_key": "bug456:excluded:数据库",
        "fact_value": "excluded",
    },
    {
        "memory_type": "decision",
        "subtype": "focus",
        "summary": "当前重点：线程池、下游延迟",
        "entities": ["线程池", "createOrder"],
        "canonical_fact_key": "bug456:focus",
        "fact_value": "线程池、下游延迟",
    },
]
PAST_CASE = CardInput(
    external_id="pool-case",
    memory_type="episodic_case",
    title="createOrder 超时案例",
    summary="历史上有一次类似的 createOrder 超时，根因是应用线程池饱和，扩容线程池后恢复",
    entities=["createOrder", "线程池"],
    tags=["timeout"],
)
UNRELATED = CardInput(
    external_id="deploy",
    memory_type="procedure",
    # Shares no term with the query: BM25 ratios against the best hit depend on the whole
    # index's statistics, so a shared term like "prod" would make the outcome order-dependent.
    summary="Deploy to the cn region only after the staging smoke tests pass",
)


def propose(client: APIClient, items: list[dict], *, user: str = "u_42", session: str = "s_1"):
    proposals = [
        {
            "user_id": user,
            "session_id": session,
            "task_id": "bug456",
            "confidence": 0.9,
            "importance": 0.8,
            "verified": True,
            **item,
        }
        for item in items
    ]
    response = client.post(PROPOSALS, {"proposals": proposals}, format="json")
    assert response.status_code == 201, response.json()
    results = response.json()["results"]
    assert all(r["item_id"] for r in results), results
    return [r["item_id"] for r in results]


def seed_profile(tenant, client: APIClient, capture) -> None:
    ProjectFactory(tenant=tenant, key="payment", default_env="prod-cn")
    with capture(execute=True):
        response = client.patch(
            reverse("profiles:profile", kwargs={"user_id": "u_42"}),
            {
                "profile": {"language": "zh-CN", "answer_style": "先结论后细节"},
                "roles": [
                    {"project": "payment", "role": "developer", "permission_scope": "read_only"}
                ],
            },
            format="json",
        )
    assert response.status_code == 200, response.json()


def import_cards(tenant, cards) -> dict[str, str]:
    results = cards_import(tenant=tenant, cards=cards)
    outbox_drain()
    return {card.external_id: card.memory_id for card, _ in results}


def start_session(client: APIClient, *, user: str = "u_42", session: str = "s_1") -> str:
    """The session's first event, appended by its user's agent (recall records only into an
    existing session of its user); a system event, so nothing is extracted from it."""
    response = client.post(
        reverse("transcripts:events", kwargs={"session_id": session}),
        {"user_id": user, "events": [{"id": "m_start", "role": "system", "content": "start"}]},
        format="json",
    )
    assert response.status_code == 201, response.json()
    return "m_start"


def recall(client: APIClient, **fields):
    body = {"user_id": "u_42", "session_id": "s_1", "query": QUERY, "explain": True, **fields}
    response = client.post(RECALL, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.fixture
def seeded(tenant, owner, trusted_owner, django_capture_on_commit_callbacks):
    seed_profile(tenant, trusted_owner, django_capture_on_commit_callbacks)
    ids = propose(owner, DIAGNOSIS)
    cards = import_cards(tenant, [PAST_CASE, UNRELATED])
    return {"stm": dict(zip(("symptom", "excluded", "focus"), ids, strict=True)), "cards": cards}


@pytest.mark.django_db
def test_the_design_example_end_to_end(owner: APIClient, seeded) -> None:
    body = recall(owner, task_id="bug456")

    sources = {item["memory_id"]: item["source"] for item in body["items"]}
    assert sources[seeded["stm"]["excluded"]] == "redis"
    assert sources[seeded["cards"]["pool-case"]] == "ltm"
    assert seeded["cards"]["deploy"] not in sources
    assert body["profile_block"]["language"] == "zh-CN"
    assert body["constraints_block"]["permission_scope"] == "read_only"
    assert body["runtime_metadata_block"] == {
        "tenant": body["runtime_metadata_block"]["tenant"],
        "project": "payment",
        "project_name": body["runtime_metadata_block"]["project_name"],
        "default_env": "prod-cn",
    }
    text = body["injection_text"]
    assert (
        text.index("用户/环境画像：")
        < text.index("当前任务短期记忆：")
        < text.index("相关长期经验：")
    )
    assert "- 当前任务: bug456" in text and "数据库已排除" in text and "线程池饱和" in text
    assert "- 权限: read_only" in text and "- 默认环境: prod-cn" in text
    assert body["degraded"] == [] and body["language"] == "zh"
    assert body["token_estimate"] <= body["budget_tokens"]

    explain = body["explain"]
    assert explain["query_profile"]["intent"] == "debug_continue"
    assert explain["routing"]["redis"]["asked"] is True
    assert explain["routing"]["ltm"]["asked"] is True and explain["routing"]["ltm_mode"] == "hybrid"
    assert set(explain["latency_ms"]) >= {"redis", "ltm", "total"}
    item = next(i for i in body["items"] if i["memory_id"] == seeded["stm"]["excluded"])
    assert set(item["score_parts"]) == {"recency", "relevance", "importance", "confidence"}
    assert item["score"] == pytest.approx(sum(item["score_parts"].values()), abs=1e-3)
    assert item["provenance"]["task_id"] == "bug456"


@pytest.mark.django_db
def test_long_term_memory_is_searched_only_when_it_holds_a_card_to_find(
    tenant, owner: APIClient
) -> None:
    query = "以前 createOrder 超时有类似的吗"
    empty = recall(owner, query=query)
    assert not any(name.startswith("ltm.") for name in empty["explain"]["latency_ms"])
    assert any("has an active card; not searched" in n for n in empty["explain"]["notes"])

    mine = import_cards(tenant, [replace(PAST_CASE, user_id="u_42")])
    body = recall(owner, query=query)
    assert {"ltm.lexical", "ltm.vector"} <= set(body["explain"]["latency_ms"])
    assert mine["pool-case"] in [item["memory_id"] for item in body["items"]]
    other = recall(owner, query=query, user_id="u_7")  # another user: nothing of u_42's
    assert not any(name.startswith("ltm.") for name in other["explain"]["latency_ms"])

    shared = import_cards(tenant, [UNRELATED])  # a card of no user: every user's search
    body = recall(owner, query=query, user_id="u_7")
    assert {"ltm.lexical", "ltm.vector"} <= set(body["explain"]["latency_ms"])
    assert shared["deploy"] not in [item["memory_id"] for item in body["items"]]


@pytest.mark.django_db
def test_english_profile_renders_english_sections(
    tenant, owner, django_capture_on_commit_callbacks
):
    ProjectFactory(tenant=tenant, key="payment", default_env="prod-cn")
    with django_capture_on_commit_callbacks(execute=True):
        owner.patch(
            reverse("profiles:profile", kwargs={"user_id": "u_42"}),
            {"profile": {"language": "en", "answer_style": "brief_first"}},
            format="json",
        )
    propose(
        owner,
        [{**DIAGNOSIS[1], "summary": "The database is ruled out: pool and slow log are fine"}],
    )

    body = recall(
        owner, query="continue bug456: is the database still ruled out?", task_id="bug456"
    )

    assert body["language"] == "en"
    assert body["injection_text"].startswith("User / environment profile:\n- Language: en")
    assert "Current task short-term memory:\n- Current task: bug456" in body["injection_text"]


@pytest.mark.django_db
def test_the_same_fact_in_both_layers_is_kept_once_from_redis(tenant, owner) -> None:
    summary = "createOrder timeouts with a healthy database were thread-pool saturation"
    [stm_id] = propose(
        owner, [{"memory_type": "fact", "summary": summary, "entities": ["createOrder"]}]
    )
    cards = import_cards(
        tenant, [CardInput(external_id="dup", memory_type="semantic_fact", summary=summary + ".")]
    )

    body = recall(owner, query="any similar createOrder timeouts before?")

    ids = [item["memory_id"] for item in body["items"]]
    assert stm_id in ids and cards["dup"] not in ids
    dropped = {d["memory_id"]: d["reason"] for d in body["explain"]["dropped"]}
    assert dropped[cards["dup"]] == f"duplicate of {stm_id} (fingerprint)"


@pytest.mark.django_db
def test_postgres_wins_a_permission_conflict(trusted_owner: APIClient, seeded) -> None:
    owner = trusted_owner  # a trusted writer: its rules are the user's word
    [claim] = propose(
        owner,
        [
            {
                "memory_type": "fact",
                "summary": "u_42 may deploy payment changes (read_write)",
                "canonical_fact_key": "permission.scope",
                "fact_value": "read_write",
                "task_id": "",
            }
        ],
    )

    body = recall(owner, query="我有什么权限？", layers=["postgres", "redis"])

    assert claim not in [item["memory_id"] for item in body["items"]]
    dropped = {d["memory_id"]: d["reason"] for d in body["explain"]["dropped"]}
    assert dropped[claim] == "conflicts with PostgreSQL's permission.scope = read_only"
    assert body["constraints_block"]["permission_scope"] == "read_only"


@pytest.mark.django_db
def test_a_permission_the_user_states_gets_its_key_and_postgres_wins(
    owner: APIClient, seeded, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(
            reverse("transcripts:events", kwargs={"session_id": "s_9"}),
            {
                "user_id": "u_42",
                "events": [
                    {
                        "id": "m-admin",
                        "role": "user",
                        "content": "我现在是管理员了，权限改成 admin 了",
                    }
                ],
            },
            format="json",
        )
    assert response.status_code == 201, response.json()

    body = recall(owner, query="我有什么权限？", layers=["postgres", "redis"])

    reasons = {d["reason"] for d in body["explain"]["dropped"] if d["source"] == "redis"}
    assert "conflicts with PostgreSQL's permission.scope = read_only" in reasons, reasons
    assert "admin" not in " ".join(item["text"] for item in body["items"])
    assert body["constraints_block"]["permission_scope"] == "read_only"
    assert body["explain"]["routing"]["postgres"]["reasons"] == ["asked by the caller"] or (
        body["explain"]["routing"]["postgres"]["asked"] is True
    )


@pytest.mark.django_db
def test_the_budget_is_kept_shortening_before_dropping(tenant, owner, seeded) -> None:
    long_content = "线程池配置 max=200，队列 1000；" * 40
    import_cards(
        tenant,
        [
            CardInput(
                external_id="long",
                memory_type="episodic_case",
                title="createOrder 线程池调优",
                summary="createOrder 超时时调大线程池",
                content=long_content,
                entities=["createOrder", "线程池"],
            )
        ],
    )

    roomy = recall(owner, task_id="bug456", budget_tokens=4000)
    assert roomy["token_estimate"] <= 4000
    assert not any(item["shortened"] for item in roomy["items"])

    tight = recall(owner, task_id="bug456", budget_tokens=200)
    assert tight["token_estimate"] <= 200
    assert any(item["shortened"] for item in tight["items"])
    assert "max=200" not in tight["injection_text"]

    tiny = recall(owner, task_id="bug456", budget_tokens=50)
    assert tiny["token_estimate"] <= 50
    for body in (roomy, tight, tiny):
        assert body["token_estimate"] == estimate_tokens(body["injection_text"])
    reasons = [d["reason"] for d in tiny["explain"]["dropped"]]
    assert "over the token budget" in reasons
    assert len(tiny["items"]) < len(tight["items"])


@pytest.mark.django_db
def test_each_recall_is_recorded_in_the_transcript_and_counts_access(
    tenant, owner: APIClient, seeded
) -> None:
    start_session(owner)
    body = recall(owner, task_id="bug456")
    injected = [item["memory_id"] for item in body["items"]]

    events = owner.get(reverse("transcripts:events", kwargs={"session_id": "s_1"})).json()
    recall_events = [e for e in events["events"] if e["metadata"].get("kind") == "recall"]
    assert len(recall_events) == 1
    event = recall_events[0]
    assert event["role"] == "system" and event["id"] == body["recall_id"]
    assert sorted(event["metadata"]["stm"] + event["metadata"]["ltm"]) == sorted(injected)
    assert {i["source"] for i in body["items"]} == {"redis", "ltm"}

    end_user = EndUser.objects.get(tenant=tenant, external_id="u_42")
    item = stm_store().get(owner=Owner(tenant.pk, end_user.pk), item_id=seeded["stm"]["excluded"])
    assert item is not None and item.recall_count == 1 and item.last_access_at > item.created_at
    card = LtmCard.objects.get(memory_id=seeded["cards"]["pool-case"])
    assert card.access_count == 1 and card.last_access_at is not None


@pytest.mark.django_db
def test_profile_changes_reach_the_next_recall(
    tenant, owner, trusted_owner, seeded, django_capture_on_commit_callbacks
):
    warm_up = recall(owner, query="写一首诗")
    assert warm_up["explain"]["query_profile"]["profile_cache_missing"] is True
    first = recall(owner, query="写一首诗")
    assert first["explain"]["query_profile"]["profile_cache_missing"] is False
    assert first["explain"]["routing"]["postgres"]["asked"] is False
    assert first["profile_block"]["answer_style"] == "先结论后细节"

    with django_capture_on_commit_callbacks(execute=True):
        trusted_owner.patch(
            reverse("profiles:profile", kwargs={"user_id": "u_42"}),
            {"profile": {"answer_style": "只给结论"}},
            format="json",
        )
    second = recall(owner, query="写一首诗")

    assert second["profile_block"]["answer_style"] == "只给结论"
    assert second["explain"]["query_profile"]["profile_cache_stale"] is True
    assert second["explain"]["routing"]["postgres"]["asked"] is True
    third = recall(owner, query="写一首诗")
    assert third["explain"]["routing"]["postgres"]["asked"] is False


@pytest.mark.django_db
def test_another_tenant_never_sees_these_memories(owner, stranger: APIClient, seeded) -> None:
    body = recall(stranger, task_id="bug456", layers=["postgres", "redis", "ltm"])

    assert body["items"] == []
    assert body["profile_block"] == {} and "permission_scope" not in body["injection_text"]
    assert "数据库" not in body["injection_text"] and "线程池" not in body["injection_text"]
    # Neither tenant has that session now: a recall creates none.
    events_url = reverse("transcripts:events", kwargs={"session_id": "s_1"})
    assert owner.get(events_url).status_code == 404
    assert stranger.get(events_url).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"session_id": "s_1", "query": "x"}, "user_id"),
        ({"user_id": "u_42", "session_id": "s_1", "query": "x", "layers": ["pg"]}, "layers.0"),
        (
            {"user_id": "u_42", "session_id": "s_1", "query": "x", "budget_tokens": 10},
            "budget_tokens",
        ),
        ({"user_id": "u_42", "session_id": "s_1", "query": "x", "k": 0}, "k"),
        (
            {"user_id": "u_42", "session_id": "s_1", "query": "x", "layers": ["ltm", "ltm"]},
            "layers",
        ),
        ({"user_id": "u 42", "session_id": "s_1", "query": "x"}, "user_id"),
    ],
)
def test_bad_input_is_400_and_records_nothing(owner: APIClient, body: dict, field: str) -> None:
    log_before = recall_cache.recall_log().peek(limit=1000)

    response = owner.post(RECALL, body, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and field in error["fields"]
    assert recall_cache.recall_log().peek(limit=1000) == log_before
    assert not EndUser.objects.exists()


@pytest.mark.django_db
def test_recall_needs_the_read_scope(tenant, client_for) -> None:
    writer = client_for(tenant, ("write",))
    response = writer.post(
        RECALL, {"user_id": "u_42", "session_id": "s_1", "query": "x"}, format="json"
    )
    assert response.status_code == 403


# --- degradation -----------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _clear_redis_getters() -> None:
    for getter in (
        stm_store_module.stm_store,
        stm_store_module.recall_stm_store,
        redis_client.recall_redis_connection,
        recall_cache.context_cache,
        recall_cache.recall_context_cache,
        recall_cache.recall_log,
        key_cache.api_key_cache,
        throttling._count_script,
    ):
        getter.cache_clear()


@pytest.fixture
def own_redis(settings) -> Iterator[subprocess.Popen]:
    """A Redis server of this test's own, which the test may stop."""
    port = _free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    caches = {**settings.CACHES, "default": {**settings.CACHES["default"]}}
    caches["default"]["LOCATION"] = f"redis://127.0.0.1:{port}/0"
    caches["default"]["OPTIONS"] = {"SOCKET_CONNECT_TIMEOUT": 0.5, "SOCKET_TIMEOUT": 0.5}
    settings.CACHES = caches
    _clear_redis_getters()
    stm_store().load_scripts()
    yield server
    server.terminate()
    server.wait(10)
    _clear_redis_getters()


@pytest.mark.django_db
def test_recall_answers_without_redis(
    tenant, owner, own_redis, django_capture_on_commit_callbacks
) -> None:
    seed_profile(tenant, owner, django_capture_on_commit_callbacks)
    start_session(owner)
    stm_id = propose(owner, DIAGNOSIS[1:2])[0]
    cards = import_cards(tenant, [PAST_CASE])
    assert stm_id in [i["memory_id"] for i in recall(owner, task_id="bug456")["items"]]

    own_redis.terminate()
    own_redis.wait(10)
    body = recall(owner, task_id="bug456")

    assert "redis" in body["degraded"]
    ids = [item["memory_id"] for item in body["items"]]
    assert stm_id not in ids and cards["pool-case"] in ids  # long-term memory stepped in
    assert body["constraints_block"]["permission_scope"] == "read_only"  # read from PostgreSQL
    assert "相关长期经验：" in body["injection_text"]
    # The record is kept in PostgreSQL until Redis is back (test_outages.py drains it).
    kept = RecallEffectOutbox.objects.filter(tenant=tenant).values_list("record", flat=True)
    assert [record["recall_id"] for record in kept] == [body["recall_id"]]


@pytest.mark.django_db
def test_recall_answers_without_the_vector_server(owner, seeded, settings) -> None:
    from memories.ltm import vectors

    settings.MILVUS_URI = f"http://127.0.0.1:{_free_port()}"
    settings.LTM_BRANCH_TIMEOUT_SECONDS = 0.5
    vectors.vector_index.cache_clear()
    try:
        body = recall(owner, task_id="bug456", query=QUERY + "，以前有类似的吗？")
    finally:
        settings.MILVUS_URI = settings.MILVUS_URI  # restored by the fixture after the test
        vectors.vector_index.cache_clear()

    assert body["degraded"] == ["ltm.vector"]
    assert body["explain"]["routing"]["ltm_mode"] == "hybrid"
    ids = [item["memory_id"] for item in body["items"]]
    assert seeded["cards"]["pool-case"] in ids and seeded["stm"]["excluded"] in ids


@pytest.mark.django_db
def test_preferences_and_facts_come_from_postgres(
    tenant, owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    project = ProjectFactory(tenant=tenant, key="payment", default_env="prod-cn")
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.patch(
            reverse("profiles:profile", kwargs={"user_id": "u_42"}),
            {
                "preferences": [{"key": "preference.answer_style", "value": "brief_first"}],
                "roles": [{"project": "payment", "role": "sre", "permission_scope": "admin"}],
                "facts": [{"key": "config.deploy_window", "value": "22:00-02:00"}],
            },
            format="json",
        )
        assert response.status_code == 200, response.json()
        fact_set(
            tenant=tenant, key="project_metadata.default_env", value="prod-k8s", project=project
        )
        fact_set(tenant=tenant, key="config.region", value="cn-north")

    body = recall(owner, query="what are my preferences?")

    assert body["profile_block"]["preferences"] == {"preference.answer_style": "brief_first"}
    facts = {f["key"]: f["value"] for f in body["constraints_block"]["facts"]}
    assert facts == {
        "config.deploy_window": "22:00-02:00",
        "config.region": "cn-north",
        "project_metadata.default_env": "prod-k8s",
    }
    # A project fact overrides the project's own default environment.
    assert body["runtime_metadata_block"]["default_env"] == "prod-k8s"
    assert body["constraints_block"]["permission_scope"] == "admin"
    assert body["explain"]["routing"]["postgres"]["asked"] is True
    assert "- preference.answer_style: brief_first" in body["injection_text"]


def recall_policy_form(tenant_pk: int, **changes) -> dict:
    form = {
        "tenant": tenant_pk,
        "recency_weight": 0.25,
        "relevance_weight": 0.45,
        "importance_weight": 0.25,
        "confidence_weight": 0.05,
        "recency_decay_per_hour": 0.03,
        "min_relevance": 0.3,
        "default_k": 8,
        "default_budget_tokens": 800,
        "redis_sufficient_count": 2,
        "session_recent_minutes": 30,
        "history_enabled": "on",
        "fusion_lexical_weight": 1.25,
        "fusion_vector_weight": 1.0,
        "fusion_rrf_k": 5,
        "relevance_floor": 0.34,
        "time_boost": 0.5,
        "history_depth": 30,
    }
    form.update(changes)
    return form


@pytest.mark.django_db
def test_a_tenant_admin_tunes_recall_in_the_admin(
    tenant, other_tenant, owner: APIClient, seeded, django_capture_on_commit_callbacks
) -> None:
    from django.test import Client

    from memories.audit.models import AuditEvent
    from memories.policies.models import RecallPolicy
    from tests.factories import MembershipFactory, StaffUserFactory

    staff = StaffUserFactory()
    MembershipFactory(user=staff, tenant=tenant)
    admin = Client()
    admin.force_login(staff)
    add = reverse("admin:memories_recallpolicy_add")
    recall(owner, task_id="bug456")  # caches the tenant's context with the default policy

    zero = {name: 0 for name in ("recency", "relevance", "importance", "confidence")}
    refused = admin.post(
        add, recall_policy_form(tenant.pk, **{f"{n}_weight": v for n, v in zero.items()})
    )
    foreign = admin.post(add, recall_policy_form(other_tenant.pk))
    with django_capture_on_commit_callbacks(execute=True):
        saved = admin.post(add, recall_policy_form(tenant.pk, relevance_weight=1.0, default_k=1))

    assert "At least one score weight must be positive" in refused.content.decode()
    assert "Select a valid choice" in foreign.content.decode()
    assert saved.status_code == 302
    assert list(RecallPolicy.objects.values_list("tenant_id", flat=True)) == [tenant.pk]
    change = AuditEvent.objects.get(tenant=tenant, action="policy_change")
    assert (change.object_type, change.actor) == ("recallpolicy", f"staff:{staff.pk}:{staff}")
    assert change.after_sha256 and not change.before_sha256
    body = recall(owner, task_id="bug456")
    assert len(body["items"]) == 1
    assert body["items"][0]["score_parts"]["relevance"] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.django_db
def test_applying_recall_effects_twice_records_each_recall_once(
    tenant, owner: APIClient, seeded
) -> None:
    from memories.recall.effects import recall_effects_apply

    start = start_session(owner)
    first = recall(owner, task_id="bug456")
    second = recall(owner, task_id="bug456", query="下一步做什么？")
    events_url = reverse("transcripts:events", kwargs={"session_id": "s_1"})
    records = [
        {
            "recall_id": body["recall_id"],
            "tenant_id": tenant.pk,
            "user_id": "u_42",
            "end_user_id": EndUser.objects.get(tenant=tenant, external_id="u_42").pk,
            "session_id": "s_1",
            "task_id": "bug456",
            "at": time.time(),
            "stm": [i["memory_id"] for i in body["items"] if i["source"] == "redis"],
            "ltm": [i["memory_id"] for i in body["items"] if i["source"] == "ltm"],
            "degraded": [],
        }
        for body in (first, second)
    ]

    recall_effects_apply(records=records[1:])  # the second recall's event, delivered again

    ids = [e["id"] for e in owner.get(events_url).json()["events"]]
    assert ids == [start, first["recall_id"], second["recall_id"]]


@pytest.mark.django_db
def test_a_task_step_is_answered_without_probing_earlier_memory(owner, seeded) -> None:
    response = owner.post(
        RECALL,
        {
            "user_id": "u_42",
            "session_id": "s_1",
            "task_id": "bug456",
            "query": "继续 bug456，下一步做什么？",
            "explain": True,
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    routing = response.json()["explain"]["routing"]
    assert routing["redis"]["asked"] is True
    assert routing["ltm"]["asked"] is False and routing["history"]["asked"] is False
    assert "not probed" in routing["ltm"]["not_asked_because"][0]
    assert "store.elasticsearch" not in response["Server-Timing"]
    assert "store.milvus" not in response["Server-Timing"]


@pytest.mark.django_db
def test_the_cut_off_injects_what_of_the_top_k_answers(owner: APIClient, seeded) -> None:
    # the same task holds observations about other things too
    others = [
        "前端按钮改成蓝色",
        "周报发给产品组",
        "会议改到周四",
        "新同事下周入职",
        "午饭订了披萨",
    ]
    propose(owner, [{"memory_type": "observation", "summary": text} for text in others])
    query = "createOrder 超时以前有类似的吗？"
    full = recall(owner, task_id="bug456", query=query, k=10, cutoff=False)
    cut = recall(owner, task_id="bug456", query=query, k=10)

    full_ids = [item["memory_id"] for item in full["items"]]
    cut_ids = [item["memory_id"] for item in cut["items"]]
    assert set(cut_ids) <= set(full_ids) and len(cut_ids) < len(full_ids)
    estimates = [item["answers"] for item in cut["items"]]
    assert estimates == sorted(estimates, reverse=True)
    assert all(0 <= item["answers"] <= 1 for item in full["items"])
    assert {"margin", "gap", "words", "task"} <= set(cut["items"][0]["answer_parts"])
    reasons = {d["memory_id"]: d["reason"] for d in cut["explain"]["dropped"]}
    for memory_id in set(full_ids) - set(cut_ids):
        assert reasons[memory_id].startswith("does not answer"), reasons
    assert cut["token_estimate"] < full["token_estimate"]


@pytest.mark.django_db
def test_cutoff_must_be_a_boolean(owner: APIClient) -> None:
    body = {"user_id": "u_42", "session_id": "s_1", "query": "x", "cutoff": "no"}
    response = owner.post(RECALL, body, format="json")
    assert response.status_code == 400
    assert "cutoff" in json.dumps(response.json())
