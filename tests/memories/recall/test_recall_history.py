"""Recall with history, routing that asks, time windows and short-term memory across sessions,
through the API against the real stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memories.recall.context import ContextBlocks
from memories.recall.relevance import best_holding, content_terms
from memories.recall.render import fit_and_render
from memories.recall.timefilter import parse_time_query, reanchor

RECALL = reverse("memories:recall")
PROPOSALS = reverse("memories:proposals")
MAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
JULY = datetime(2023, 7, 14, 18, 0, tzinfo=UTC)


def append(client: APIClient, session: str, user: str, events: list[dict], capture) -> None:
    with capture(execute=True):
        response = client.post(
            reverse("transcripts:events", kwargs={"session_id": session}),
            {"user_id": user, "events": events},
            format="json",
        )
    assert response.status_code == 201, response.json()


def turn(event_id: str, role: str, content: str, at: datetime) -> dict:
    return {"id": event_id, "role": role, "content": content, "created_at": at.isoformat()}


def recall(client: APIClient, **fields) -> dict:
    body = {"user_id": "u_1", "session_id": "s-new", "explain": True, **fields}
    response = client.post(RECALL, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.fixture
def past(owner: APIClient, django_capture_on_commit_callbacks) -> None:
    """Two earlier sessions of u_1: a camping trip in May, a pottery class in July."""
    append(
        owner,
        "s-may",
        "u_1",
        [
            turn("may-1", "user", "We went camping at Lake Tahoe with the kids.", MAY),
            turn("may-2", "assistant", "That sounds lovely! Did you swim?", MAY),
            turn("may-3", "user", "Yes, the water was freezing.", MAY + timedelta(minutes=1)),
        ],
        django_capture_on_commit_callbacks,
    )
    append(
        owner,
        "s-july",
        "u_1",
        [
            turn("jul-1", "user", "I signed up for a pottery class on Thursdays.", JULY),
            turn("jul-2", "user", "We also went camping again, in the mountains.", JULY),
        ],
        django_capture_on_commit_callbacks,
    )
    expire_short_term_items(owner, "u_1")


def expire_short_term_items(client: APIClient, user: str) -> None:
    """What extraction made of those turns is gone, as it would be months later: only history
    still holds what was said."""
    listed = client.get(reverse("memories:stm"), {"user_id": user, "limit": 200})
    assert listed.status_code == 200, listed.json()
    for item in listed.json()["items"]:
        deleted = client.delete(reverse("memories:item", kwargs={"item_id": item["id"]}))
        assert deleted.status_code == 204, deleted.content


@pytest.mark.django_db
def test_a_question_about_the_past_reaches_history_without_history_words(owner, past) -> None:
    body = recall(owner, query="Where did we go camping with the kids?")

    routing = body["explain"]["routing"]
    assert routing["history"]["asked"] is True
    assert any("memory holds" in reason for reason in routing["history"]["reasons"])
    first = body["items"][0]
    assert first["source"] == "history" and first["provenance"]["event_ids"] == ["may-1"]
    assert first["provenance"]["session_id"] == "s-may"
    assert first["provenance"]["occurred_at"].startswith("2023-05-08")
    # Its own section, each turn reported speech: attributed, dated and quoted, the user's too.
    assert 'From earlier conversations:\n- (user said, 2023-05-08) "' in body["injection_text"]


@pytest.mark.django_db
def test_a_dated_question_finds_the_dated_turn(owner, past) -> None:
    body = recall(owner, query="What did we do when we went camping in July 2023?")

    assert body["explain"]["query_profile"]["time"]["window"]["start"].startswith("2023-07-01")
    first = body["items"][0]
    assert first["provenance"]["event_ids"] == ["jul-2"]
    assert first["provenance"]["in_time_window"] is True
    # The May trip is outside the window: lowered (here below the weak-match line) or after.
    for item in body["items"]:
        if item["provenance"].get("event_ids") == ["may-1"]:
            assert item["provenance"]["in_time_window"] is False
            assert item["score"] < first["score"]
    undated = recall(owner, query="What did we do when we went camping?")
    assert undated["items"][0]["provenance"]["event_ids"] != ["jul-2"] or any(
        i["provenance"].get("event_ids") == ["may-1"] for i in undated["items"]
    )


@pytest.mark.django_db
def test_small_talk_and_unrelated_questions_inject_nothing(owner, past) -> None:
    for query in ("今天天气怎么样？", "你好", "What is the speed of light?", "Tell me a joke"):
        body = recall(owner, query=query)

        assert body["items"] == [], query
        routing = body["explain"]["routing"]
        assert routing["history"]["asked"] is False and routing["ltm"]["asked"] is False
        # The decision keeps its reason.
        because = routing["history"]["not_asked_because"]
        assert because and ("relevance floor" in because[0] or "no content terms" in because[0])


@pytest.mark.django_db
def test_history_gives_way_to_a_short_term_item_saying_the_same(
    owner, django_capture_on_commit_callbacks
) -> None:
    # Given the same sentence as a short-term fact (made from that very event) and in history
    append(
        owner,
        "s-pg",
        "u_1",
        [turn("pg-1", "user", "Our staging database is Postgres 15.", JULY)],
        django_capture_on_commit_callbacks,
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(
            PROPOSALS,
            {
                "proposals": [
                    {
                        "user_id": "u_1",
                        "session_id": "s-pg",
                        "memory_type": "fact",
                        "summary": "Our staging database is Postgres 15.",
                        "entities": ["Postgres"],
                        "confidence": 0.9,
                        "importance": 0.8,
                        "source": {"message_ids": ["pg-1"]},
                        "verified": True,
                    }
                ]
            },
            format="json",
        )
    assert response.status_code == 201, response.json()
    assert response.json()["results"][0]["item_id"]

    # When a new session asks about it
    body = recall(owner, query="Which database version runs on staging?")

    # Then the short-term item answers, and the history entry of the same event gives way
    sources = [i["source"] for i in body["items"]]
    assert sources and sources[0] == "redis"
    assert "history" not in sources
    dropped = body["explain"]["dropped"]
    assert any(d["source"] == "history" and "duplicate of" in d["reason"] for d in dropped)


@pytest.mark.django_db
def test_the_friday_constraint_reaches_a_new_session(
    owner, django_capture_on_commit_callbacks
) -> None:
    # Given a constraint stated in one session (the write path makes it a short-term item)
    append(
        owner,
        "s-ops",
        "u_1",
        [
            {
                "id": "ops-1",
                "role": "user",
                "content": "Please never run migrations on Fridays.",
            }
        ],
        django_capture_on_commit_callbacks,
    )
    stm = owner.get(reverse("memories:stm"), {"user_id": "u_1", "type": "constraint"}).json()
    assert [i["memory_type"] for i in stm["items"]] == ["constraint"], stm

    # When a new session asks
    body = recall(
        owner, session_id="s-monday", query="Can I run the database migration today? It is Friday."
    )

    # Then the constraint is injected
    assert "never run migrations on Fridays" in body["injection_text"]
    rule_ids = [r["memory_id"] for r in body["constraints_block"].get("standing", [])]
    item_ids = [i["memory_id"] for i in body["items"]]
    assert stm["items"][0]["id"] in rule_ids + item_ids
    # and an unrelated question in yet another session still carries the user's standing rule
    other = recall(owner, session_id="s-other", query="Tell me a joke")
    assert other["items"] == []
    assert [r["memory_id"] for r in other["constraints_block"]["standing"]] == [
        stm["items"][0]["id"]
    ]
    assert "Constraint: " in other["injection_text"] or "约束: " in other["injection_text"]


@pytest.mark.django_db
def test_the_recall_record_names_the_history_entries_and_standing_rules_it_injected(
    owner, past, django_capture_on_commit_callbacks
) -> None:
    # Given a standing constraint from one session and a new session the user has started
    rule = [{"id": "ops-1", "role": "user", "content": "Please never run migrations on Fridays."}]
    append(owner, "s-ops", "u_1", rule, django_capture_on_commit_callbacks)
    hello = [{"id": "now-1", "role": "user", "content": "Hi there!"}]
    append(owner, "s-now", "u_1", hello, django_capture_on_commit_callbacks)

    # When the new session recalls the camping trip
    body = recall(owner, session_id="s-now", query="Where did we go camping with the kids?")

    # Then its transcript record lists the history entries (with their events) and the rule
    history = [i for i in body["items"] if i["source"] == "history"]
    standing = [r["memory_id"] for r in body["constraints_block"]["standing"]]
    assert history and standing
    events = owner.get(reverse("transcripts:events", kwargs={"session_id": "s-now"})).json()
    (record,) = [e for e in events["events"] if e["metadata"].get("kind") == "recall"]
    assert record["id"] == body["recall_id"]
    assert record["metadata"]["history"] == [
        {
            "entry_id": item["memory_id"],
            "event_ids": item["provenance"]["event_ids"],
            "session_id": item["provenance"]["session_id"],
        }
        for item in history
    ]
    assert record["metadata"]["history"][0]["event_ids"] == ["may-1"]
    assert record["metadata"]["standing"] == standing
    assert history[0]["memory_id"] in record["content"]
    assert record["content"].endswith(f"; standing rules {', '.join(standing)}")


def test_a_standing_preference_cut_for_budget_is_not_named_as_injected() -> None:
    rules = [
        {"memory_id": "stm_c", "memory_type": "constraint", "text": "Never deploy on Fridays"},
        {"memory_id": "stm_p", "memory_type": "preference", "text": "Answers in tables " * 20},
    ]
    blocks = ContextBlocks(profile={}, constraints={"standing": rules}, runtime={})

    roomy = fit_and_render(blocks=blocks, candidates=[], budget_tokens=1000, language="en")
    tight = fit_and_render(blocks=blocks, candidates=[], budget_tokens=20, language="en")

    assert roomy.standing == ["stm_c", "stm_p"]
    assert tight.standing == ["stm_c"] and "tables" not in tight.text


@pytest.mark.django_db
def test_routing_explains_each_decision(owner, past) -> None:
    body = recall(owner, query="Where did we go camping with the kids?")
    routing = body["explain"]["routing"]

    for layer in ("postgres", "redis", "ltm", "history"):
        decision = routing[layer]
        assert decision["reasons"] if decision["asked"] else decision["not_asked_because"]
    profile = body["explain"]["query_profile"]
    assert profile["memory_holds"] is True
    assert {"camp", "kid"} <= set(profile["held_terms"])


@pytest.mark.django_db
def test_history_can_be_forced_or_left_out_by_the_caller(owner, past) -> None:
    without = recall(owner, query="Where did we go camping?", layers=["postgres", "ltm"])
    assert all(i["source"] != "history" for i in without["items"])
    assert without["explain"]["routing"]["history"]["not_asked_because"] == [
        "skipped by the caller"
    ]


@pytest.mark.django_db
def test_another_user_never_sees_this_history(owner, stranger, past) -> None:
    assert recall(owner, user_id="u_2", query="Where did we go camping?")["items"] == []
    assert recall(stranger, query="Where did we go camping?")["items"] == []


# --- without stores ----------------------------------------------------------------------------
NOW = datetime(2025, 6, 18, 12, 0, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did Caroline do in May 2023?", "2023-05-01", "2023-06-01"),
        ("What happened on 8 May, 2023?", "2023-05-08", "2023-05-09"),
        ("the party on May 8, 2023", "2023-05-08", "2023-05-09"),
        ("2023年5月我们去了哪里", "2023-05-01", "2023-06-01"),
        ("what did we discuss last week", "2025-06-09", "2025-06-16"),
        ("上周我们聊了什么", "2025-06-09", "2025-06-16"),
        ("去年五月去了哪里", "2024-05-01", "2024-06-01"),
        ("what did I say yesterday", "2025-06-17", "2025-06-18"),
        ("昨天的会议", "2025-06-17", "2025-06-18"),
        ("the day before yesterday", "2025-06-16", "2025-06-17"),
        ("last month", "2025-05-01", "2025-06-01"),
        ("during 2022", "2022-01-01", "2023-01-01"),
    ],
)
def test_time_expressions_name_a_window(query: str, start: str, end: str) -> None:
    window = parse_time_query(query, now=NOW).window

    assert window is not None
    assert (window.start.date().isoformat(), window.end.date().isoformat()) == (start, end)


def test_when_questions_ask_for_a_time_without_naming_one() -> None:
    for query in ("When did Caroline go to the support group?", "我们什么时候去的露营"):
        parsed = parse_time_query(query, now=NOW)
        assert parsed.window is None and parsed.asks_time is True
    assert parse_time_query("What is Kubernetes?", now=NOW).asks_time is False


def test_relative_windows_move_to_the_newest_memory_when_it_is_older() -> None:
    parsed = parse_time_query("what did we talk about last week", now=NOW)
    newest = datetime(2023, 10, 20, 9, 0, tzinfo=UTC)  # a Friday

    moved = reanchor(parsed, newest=newest).window
    assert moved is not None
    assert (moved.start.date().isoformat(), moved.end.date().isoformat()) == (
        "2023-10-09",
        "2023-10-16",
    )
    # A memory inside the window anchored at the request time leaves it where it is.
    assert reanchor(parsed, newest=NOW - timedelta(days=5)).window == parsed.window
    # Explicit dates never move.
    explicit = parse_time_query("in May 2023", now=NOW)
    assert reanchor(explicit, newest=newest).window == explicit.window


def test_content_terms_leave_out_small_talk() -> None:
    assert content_terms("你好") == [] and content_terms("ok") == []
    assert content_terms("What is the weather like today?") == ["weather"]
    assert set(content_terms("Which year did Audrey adopt her dogs?")) == {"audrey", "adopt", "dog"}
    holding = best_holding(
        content_terms("Which year did Audrey adopt her dogs?"),
        [("a", "Audrey: I adopted two dogs from the shelter"), ("b", "Audrey: hello")],
    )
    assert holding.memory_id == "a" and holding.share == 1.0 and holding.holds(0.5)
