"""One estimate that a memory answers the query, and the cut-off it decides
(`memories/recall/answering.py`)."""

from __future__ import annotations

from memories.recall.answering import (
    ANSWER_FLOOR,
    FIRST,
    FIRST_FLOOR,
    Question,
    answering,
    estimate_all,
)
from tests.memories.recall.pool_candidates import candidate


def test_the_estimate_drops_fast_behind_the_closest_memory() -> None:
    question = Question(terms=["deploy", "tool"], background=0.80)
    closest = candidate("user: I deploy with Terraform.", cosine=0.93)
    behind = candidate("user: Our CI runs on GitHub Actions.", cosine=0.88)
    far = candidate("user: I'm based in Lisbon.", cosine=0.84)

    estimate_all([far, behind, closest], question)

    assert closest.answer > behind.answer > far.answer
    assert closest.answer_parts["gap"] == 0.0
    assert behind.answer_parts["gap"] == 0.05
    assert closest.answer_parts["words"] == 0.25  # one of two words, no name: half its share


def test_words_raise_the_estimate_and_a_question_about_the_world_counts_them_less() -> None:
    terms = ["porto", "population"]
    holding = candidate("user: The population of Porto is what I study.", cosine=0.9)
    other = candidate("user: I'm based in Lisbon.", cosine=0.9)
    estimate_all([holding, other], Question(terms=terms, background=0.8))
    assert holding.answer_parts["firm"] == 1.0 and holding.answer > other.answer

    world = candidate("user: The population of Porto is what I study.", cosine=0.9)
    estimate_all([world], Question(terms=terms, background=0.8, about_world=True))
    assert world.answer_parts["words"] == 0.5 and world.answer < holding.answer


def test_an_item_of_the_task_asked_about_counts_as_answering() -> None:
    mine = candidate("ruled out the database", "redis", provenance={"task_id": "t1"})
    other = candidate("ruled out the cache", "redis", provenance={"task_id": "t2"})
    estimate_all([mine, other], Question(terms=[], task_id="t1", about_task=True))
    assert mine.answer_parts["task"] == 1.0 and other.answer_parts["task"] == 0.0
    assert mine.answer > other.answer
    assert mine.answer_parts["unknown"] == 1.0  # not embedded: its meaning is unknown


def test_the_cut_off_keeps_the_likely_answers_and_the_best_few_of_the_rest() -> None:
    likely = [candidate(f"likely-{n}", answer=ANSWER_FLOOR + 0.1) for n in range(2)]
    unlikely = [candidate(f"unlikely-{n}", answer=FIRST_FLOOR + 0.01 * n) for n in range(8)]
    hopeless = candidate("hopeless", answer=FIRST_FLOOR / 2)

    kept = answering([hopeless, *unlikely, *likely])

    ids = [c.memory_id for c in kept]
    assert ids[:2] == ["likely-0", "likely-1"]
    assert len(kept) == FIRST  # the likely two and the best three of the rest
    assert ids[2:] == ["unlikely-7", "unlikely-6", "unlikely-5"]
    assert "hopeless" not in ids


def test_a_named_time_puts_what_falls_outside_it_last() -> None:
    outside = candidate("outside", answer=0.9, provenance={"in_time_window": False})
    inside = candidate("inside", answer=0.4, provenance={"in_time_window": True})
    undated = candidate("undated", answer=0.5)  # a time unknown is no reason to put it last

    kept = answering([outside, undated, inside])

    assert [c.memory_id for c in kept] == ["undated", "inside", "outside"]
