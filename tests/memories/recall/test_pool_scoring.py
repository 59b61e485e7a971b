"""The pool's score parts (`memories/recall/pool.py`): a card adds trust, not relevance, and is
as recent as what it remembers."""

from __future__ import annotations

from memories.recall.dedup import deduplicate
from memories.recall.pool import Weights, card_closeness, rescore
from tests.memories.recall.pool_candidates import NOW, candidate

DAY = 86400.0


def test_a_loosely_related_card_does_not_outrank_the_turn_that_answers() -> None:
    answer = candidate(
        "turn", "history", updated_at=NOW - 400 * DAY, occurred_at=NOW - 400 * DAY, cosine=0.88
    )
    # the best of the cards by rank, made today from a turn of the same conversation
    loose = candidate("card", "ltm", occurred_at=NOW - 400 * DAY, cosine=0.79, importance=0.6)
    pool = [loose, answer]

    rescore(pool, weights=Weights(), now=NOW)

    assert [c.memory_id for c in pool] == ["turn", "card"]
    assert loose.parts["recency"] < 0.01  # dated by what it remembers, not by its approval
    assert loose.relevance < 0.5


def test_a_card_as_close_as_the_turn_keeps_its_relevance() -> None:
    assert card_closeness(0.9, 0.88, floor=0.75) == 1.0
    assert card_closeness(0.0, 0.88, floor=0.75) == 1.0  # found by words only: unknown closeness
    assert card_closeness(0.8, 0.88, floor=0.75) == (0.8 - 0.75) / (0.88 - 0.75)
    assert card_closeness(0.7, 0.88, floor=0.75) == 0.0


def test_a_short_term_item_is_as_recent_as_its_statement_was_said() -> None:
    said_long_ago = candidate(
        "item", "redis", memory_type="fact", said_at=NOW - 400 * DAY, raw_relevance=1.0
    )
    said_now = candidate("fresh", "redis", memory_type="fact", raw_relevance=1.0)

    rescore([said_long_ago, said_now], weights=Weights(), now=NOW)

    assert said_long_ago.parts["recency"] < 0.01  # extracted today from a turn of last year
    assert said_now.parts["recency"] == Weights().recency


def test_a_users_turn_saying_more_than_an_item_is_no_duplicate_of_it() -> None:
    item = candidate(
        "item",
        "redis",
        memory_type="fact",
        text="I upgraded my gym membership",
        core="I upgraded my gym membership",
        provenance={"message_ids": ["m-1"]},
    )
    turn = "I upgraded my gym membership; it's the Anytime 24/7 plan now."
    said = candidate(
        "said", "history", text=turn, core=turn, provenance={"event_ids": ["m-1"], "role": "user"}
    )
    echoed = candidate(
        "echo",
        "history",
        text="Right: I upgraded my gym membership",
        core="Right: I upgraded my gym membership",
        provenance={"event_ids": ["m-2"], "role": "assistant"},
    )
    whole = candidate(
        "whole",
        "history",
        text="I upgraded my gym membership.",
        core="I upgraded my gym membership.",
        provenance={"event_ids": ["m-3"], "role": "user"},
    )

    kept, dropped = deduplicate([item, said, echoed, whole])

    assert [c.memory_id for c in kept] == ["item", "said"]
    assert {d.memory_id: d.reason for d in dropped} == {
        "echo": "duplicate of item (said_in_history)",
        "whole": "duplicate of item (said_in_history)",
    }


def test_a_statement_only_its_meaning_read_is_injected_as_the_users_quoted_words() -> None:
    from memories.recall.render import LABELS, _line

    guessed = candidate(
        "guess", "redis", memory_type="fact", read_by_meaning=True, source_kind="user"
    )
    guessed.trust = "trusted"
    read = candidate("read", "redis", memory_type="fact", source_kind="user")
    read.trust = "trusted"

    assert _line(guessed, "Rent is 1,450 euros a month", LABELS["en"]).startswith("(user said, ")
    assert _line(read, "I live in Porto", LABELS["en"]) == "I live in Porto"
