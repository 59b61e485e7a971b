from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from memories.ltm.models import LtmCard, LtmOutbox
from memories.ltm.scope import CardDocument
from memories.ltm.search import card_search_index
from memories.ltm.selectors import ltm_search
from memories.ltm.services import CardInput, card_delete, cards_import, outbox_drain
from memories.ltm.text import bm25_text
from memories.ltm.vectors import vector_index

CARDS = [
    CardInput(
        external_id="pool",
        memory_type="semantic_fact",
        title="createOrder timeouts",
        summary="createOrder timeouts with a healthy database were mostly thread-pool saturation",
        entities=["createOrder", "payment-service"],
        tags=["timeout"],
    ),
    CardInput(
        external_id="zh-pool",
        memory_type="episodic_case",
        title="线程池饱和",
        summary="支付服务的线程池饱和导致下单接口超时，扩容线程池后恢复",
    ),
    CardInput(
        external_id="answer-style",
        user_id="u_42",
        memory_type="preference",
        summary="The user prefers the conclusion first, details after",
    ),
    CardInput(
        external_id="deploy",
        memory_type="procedure",
        summary="Deploy to prod-cn only after the staging smoke tests pass",
    ),
]


def ids(result) -> list[str]:
    return [h.memory_id for h in result.hits]


def import_cards(tenant, cards=CARDS) -> dict[str, str]:
    results = cards_import(tenant=tenant, cards=cards)
    outbox_drain()
    return {card.external_id: card.memory_id for card, _ in results}


@pytest.fixture
def empty_ltm():
    """Both indexes emptied (tests that compare them with the whole ledger need this)."""
    for index in (card_search_index(), vector_index()):
        index.drop()
        index.ensure()


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["lexical", "vector", "hybrid"])
def test_imported_cards_are_found_in_every_mode(tenant, mode) -> None:
    cards = import_cards(tenant)

    result = ltm_search(tenant=tenant, query="why does createOrder time out?", mode=mode, k=3)

    assert ids(result)[0] == cards["pool"]
    assert result.degraded is False
    hit = result.hits[0]
    assert hit.card["summary"].startswith("createOrder timeouts")
    if mode == "hybrid":
        assert hit.lexical_rank == 1 and hit.vector_rank is not None
        assert hit.score == pytest.approx(1 / 61 + 1 / (60 + hit.vector_rank))


@pytest.mark.django_db
def test_a_card_is_in_both_indexes_with_its_version(tenant) -> None:
    cards = import_cards(tenant)
    memory_id = cards["pool"]
    assert dict(card_search_index().versions())[memory_id] == 1
    assert dict(vector_index().versions())[memory_id] == 1
    assert not LtmOutbox.objects.exists()


@pytest.mark.django_db
def test_another_tenants_card_never_appears_even_as_nearest_vector(tenant, other_tenant) -> None:
    import_cards(other_tenant, [CARDS[0]])
    import_cards(tenant, [CARDS[3]])

    for mode in ("lexical", "vector", "hybrid"):
        result = ltm_search(tenant=tenant, query=CARDS[0].summary, mode=mode, k=10)
        assert {h.card["tenant_id"] for h in result.hits} <= {str(tenant.pk)}
        assert all("createOrder" not in h.card["summary"] for h in result.hits)


@pytest.mark.django_db
def test_user_scope_sees_own_and_shared_cards_only(tenant) -> None:
    other = CardInput(
        external_id="other-pref",
        user_id="u_7",
        memory_type="preference",
        summary="The user prefers every detail before the conclusion",
    )
    cards = import_cards(tenant, [*CARDS, other])

    for mode in ("lexical", "vector"):
        mine = ids(
            ltm_search(
                tenant=tenant, query="prefers conclusion details", mode=mode, k=10, user_id="u_42"
            )
        )
        assert cards["answer-style"] in mine and cards["other-pref"] not in mine
        assert cards["deploy"] in mine or mode == "lexical"  # shared cards are in scope


@pytest.mark.django_db
def test_chinese_queries_match_words_not_single_characters(tenant) -> None:
    cards = import_cards(tenant)

    by_word = ltm_search(tenant=tenant, query="线程池", mode="lexical", k=5)
    by_character_only = ltm_search(tenant=tenant, query="池塘 时间", mode="lexical", k=5)

    assert ids(by_word) == [cards["zh-pool"]]
    assert ids(by_character_only) == []


@pytest.mark.django_db
def test_updates_and_deletes_reach_both_indexes(tenant) -> None:
    cards = import_cards(tenant)
    changed = CardInput(external_id="deploy", memory_type="procedure", summary="Blue-green rollout")
    import_cards(tenant, [changed])

    assert ids(ltm_search(tenant=tenant, query="blue green rollout", mode="lexical")) == [
        cards["deploy"]
    ]
    assert dict(vector_index().versions())[cards["deploy"]] == 2

    card_delete(tenant=tenant, memory_id=cards["deploy"])
    outbox_drain()

    assert cards["deploy"] not in dict(card_search_index().versions())
    assert cards["deploy"] not in dict(vector_index().versions())
    for mode in ("lexical", "vector"):
        assert cards["deploy"] not in ids(ltm_search(tenant=tenant, query="rollout", mode=mode))


@pytest.mark.django_db
def test_an_unindexed_card_is_not_searchable(tenant) -> None:
    cards_import(tenant=tenant, cards=[CARDS[0]])  # outbox not drained yet
    assert ids(ltm_search(tenant=tenant, query="createOrder", mode="hybrid")) == []


@pytest.mark.django_db
def test_the_ledger_wins_over_an_index_that_lags_behind(tenant, owner: APIClient) -> None:
    """A card archived or deleted in PostgreSQL is not served while both indexes, their
    outbox not drained yet, still hold it; its text is the ledger's, not the index's."""
    cards = import_cards(tenant)
    LtmCard.objects.filter(memory_id=cards["pool"]).update(status=LtmCard.Status.ARCHIVED)
    LtmCard.objects.filter(memory_id=cards["deploy"]).update(summary="Deploy with Terraform")
    assert cards["pool"] in dict(card_search_index().versions())

    for mode in ("lexical", "vector", "hybrid"):
        found = ltm_search(tenant=tenant, query="createOrder timeouts", mode=mode)
        assert cards["pool"] not in ids(found)
    body = owner.post(
        reverse("memories:recall"),
        {"user_id": "u_42", "session_id": "s_1", "query": "以前 createOrder 超时有类似的吗"},
        format="json",
    ).json()
    assert cards["pool"] not in [item.get("memory_id") for item in body["items"]]
    found = ltm_search(tenant=tenant, query="staging smoke tests", mode="lexical")
    assert [h.card["summary"] for h in found.hits] == ["Deploy with Terraform"]


@pytest.fixture
def own_vector_server(tmp_path, settings):
    """A Milvus server of this test's own (the one scripts/stores.sh runs), so it can stop it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    launcher = Path(__file__).resolve().parents[3] / "scripts" / "local_milvus.py"
    process = subprocess.Popen(
        [sys.executable, str(launcher), str(tmp_path), f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as conn:
            if conn.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    settings.MILVUS_URI = f"http://127.0.0.1:{port}"
    settings.LTM_BRANCH_TIMEOUT_SECONDS = 1.5
    vector_index.cache_clear()
    vector_index().ensure()
    yield process
    process.kill()
    process.wait()
    vector_index.cache_clear()


@pytest.mark.django_db
def test_hybrid_degrades_to_lexical_when_the_vector_server_stops(tenant, own_vector_server):
    cards = import_cards(tenant)
    assert ltm_search(tenant=tenant, query="createOrder timeout").degraded is False

    own_vector_server.kill()
    own_vector_server.wait()
    result = ltm_search(tenant=tenant, query="createOrder timeout", mode="hybrid")

    assert result.degraded is True and result.failed_branches == ("vector",)
    assert ids(result)[0] == cards["pool"]
    assert result.hits[0].vector_rank is None
    with pytest.raises(Exception) as raised:
        ltm_search(tenant=tenant, query="createOrder timeout", mode="vector")
    assert raised.type.__name__ == "StoreUnavailable"


@pytest.mark.django_db
def test_reindex_after_losing_an_index_restores_identical_results(tenant, empty_ltm) -> None:
    import_cards(tenant)
    queries = ["createOrder timeout", "线程池", "conclusion first", "deploy prod-cn"]
    before = {q: ids(ltm_search(tenant=tenant, query=q, k=4)) for q in queries}

    vector_index().drop()
    card_search_index().drop()
    call_command("reindex_ltm")

    after = {q: ids(ltm_search(tenant=tenant, query=q, k=4)) for q in queries}
    assert after == before and all(before.values())


@pytest.mark.django_db
def test_drift_is_found_and_repaired(tenant, empty_ltm, capsys) -> None:
    cards = import_cards(tenant)
    # inject: one card missing from Milvus, one stale in Elasticsearch, one stray document
    vector_index().remove(ids=[cards["pool"]])
    LtmCard.objects.filter(memory_id=cards["deploy"]).update(version=5)
    card_search_index().upsert(
        documents=[CardDocument("ltm_stray", 1, {"tenant_id": str(tenant.pk), "status": "active"})]
    )

    with pytest.raises(CommandError):
        call_command("check_ltm_drift")
    report = capsys.readouterr().out
    assert f"missing  milvus         {cards['pool']}" in report
    assert f"stale    elasticsearch  {cards['deploy']}" in report
    assert "extra    elasticsearch  ltm_stray" in report

    call_command("check_ltm_drift", "--repair")
    call_command("check_ltm_drift")
    assert "no drift" in capsys.readouterr().out


@pytest.mark.django_db
def test_api_import_read_search_and_isolation(owner: APIClient, stranger: APIClient) -> None:
    response = owner.post(
        reverse("memories:ltm-import"),
        {"cards": [{"id": "c1", "memory_type": "semantic_fact", "summary": CARDS[0].summary}]},
        format="json",
    )
    assert response.status_code == 201, response.json()
    memory_id = response.json()["cards"][0]["memory_id"]
    outbox_drain()

    card = owner.get(reverse("memories:ltm-card", kwargs={"memory_id": memory_id})).json()
    search = owner.post(reverse("memories:ltm-search"), {"query": "createOrder"}, format="json")
    theirs = stranger.post(reverse("memories:ltm-search"), {"query": "createOrder"}, format="json")

    assert card["summary"] == CARDS[0].summary and card["version"] == 1
    assert [h["memory_id"] for h in search.json()["hits"]] == [memory_id]
    assert theirs.json()["hits"] == []
    assert (
        stranger.get(reverse("memories:ltm-card", kwargs={"memory_id": memory_id})).status_code
        == 404
    )


@pytest.mark.django_db
def test_bad_imports_are_400_and_write_nothing(owner: APIClient, tenant, client_for) -> None:
    url = reverse("memories:ltm-import")
    bad = [
        {"cards": []},
        {"cards": [{"memory_type": "gossip", "summary": "x"}]},
        {"cards": [{"memory_type": "procedure"}]},
        {"cards": [{"memory_type": "procedure", "summary": "x", "project": "nope"}]},
        {"cards": [{"id": "a", "memory_type": "procedure", "summary": "x"}] * 2},
    ]
    for body in bad:
        response = owner.post(url, body, format="json")
        assert response.status_code == 400, (body, response.json())
    writer = client_for(tenant, ("read", "write"))
    assert (
        writer.post(
            url, {"cards": [{"memory_type": "procedure", "summary": "x"}]}, format="json"
        ).status_code
        == 403
    )
    assert LtmCard.objects.count() == 0 and LtmOutbox.objects.count() == 0


@pytest.mark.django_db
def test_a_query_without_index_terms_skips_the_lexical_branch(tenant) -> None:
    import_cards(tenant)
    assert bm25_text("what is it?") == ""
    hybrid = ltm_search(tenant=tenant, query="what is it?", mode="hybrid")
    lexical = ltm_search(tenant=tenant, query="what is it?", mode="lexical")

    assert lexical.hits == [] and lexical.degraded is False
    assert hybrid.hits and hybrid.degraded is False  # the vector branch answered alone
    assert all(hit.lexical_rank is None and hit.vector_rank for hit in hybrid.hits)


@pytest.mark.django_db
def test_a_card_keeps_its_event_time_and_a_dated_question_finds_the_dated_card(
    owner: APIClient, django_capture_on_commit_callbacks
) -> None:
    cards = [
        {
            "id": "trip-may",
            "user_id": "u_time",
            "memory_type": "episodic_case",
            "summary": "Melanie went camping with her kids at the lake",
            "occurred_at": "2023-05-20T10:00:00Z",
        },
        {
            "id": "trip-oct",
            "user_id": "u_time",
            "memory_type": "episodic_case",
            "summary": "Melanie went camping with her kids in the mountains",
            "occurred_at": "2023-10-14T10:00:00Z",
        },
    ]
    with django_capture_on_commit_callbacks(execute=True):
        imported = owner.post(reverse("memories:ltm-import"), {"cards": cards}, format="json")
    assert imported.status_code == 201, imported.json()
    outbox_drain()
    answer = imported.json()["cards"]
    memory_ids = {"trip-may": answer[0]["memory_id"], "trip-oct": answer[1]["memory_id"]}
    shown = owner.get(reverse("memories:ltm-card", kwargs={"memory_id": memory_ids["trip-may"]}))
    assert shown.json()["occurred_at"].startswith("2023-05-20")

    recalled = owner.post(
        reverse("memories:recall"),
        {"user_id": "u_time", "session_id": "s_q", "query": "Where did Melanie camp in May 2023?"},
        format="json",
    ).json()
    first = recalled["items"][0]
    assert first["memory_id"] == memory_ids["trip-may"], recalled["items"]
    assert "2023-05-20" in recalled["injection_text"]
    october = owner.post(
        reverse("memories:recall"),
        {
            "user_id": "u_time",
            "session_id": "s_q",
            "query": "Where did Melanie camp in October 2023?",
        },
        format="json",
    ).json()
    assert october["items"][0]["memory_id"] == memory_ids["trip-oct"], october["items"]


@pytest.mark.django_db
def test_a_card_event_time_must_be_a_datetime(owner: APIClient) -> None:
    bad = {"memory_type": "episodic_case", "summary": "x", "occurred_at": "last May"}
    response = owner.post(reverse("memories:ltm-import"), {"cards": [bad]}, format="json")
    assert response.status_code == 400
    assert "cards.0.occurred_at" in response.json()["error"]["fields"]
    assert LtmCard.objects.count() == 0
