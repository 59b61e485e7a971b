"""The agent-questions set (tests/data/agent_questions.json) is well formed: ids unique, every
expected statement said by that persona, each persona in one split, large and bilingual; the
near questions share a word with a statement, and the one-word topics are short."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[2] / "data" / "agent_questions.json"
LANGS = {"en", "zh"}
SPLITS = {"tune", "heldout"}
CATEGORIES = {
    *("preference", "tool", "environment", "person", "place", "constraint", "project"),
    *("personal", "as_i_said", "follow_up"),
}
WORDINGS = {"lexical", "paraphrase"}
ASKED_IN = {"new", "session", "task"}


@pytest.fixture(scope="module")
def personas() -> list[dict[str, Any]]:
    return json.loads(DATA.read_text(encoding="utf-8"))["personas"]


def cases_of(personas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [case for persona in personas for case in persona["cases"]]


def unrelated_of(personas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [question for persona in personas for question in persona["unrelated"]]


def near_of(personas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [question for persona in personas for question in persona["near"]]


def topics_of(personas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [topic for persona in personas for topic in persona["topics"]]


def statements_of(persona: dict[str, Any]) -> dict[str, tuple[dict, dict]]:
    return {st["id"]: (s, st) for s in persona["sessions"] for st in s["statements"]}


def length_of(question: str, lang: str) -> str:
    """The set's rule: at most 5 English words, or 10 Chinese characters and Latin words."""
    if lang == "en":
        return "short" if len(re.findall(r"[A-Za-z0-9][\w'.-]*", question)) <= 5 else "long"
    units = len(re.findall(r"[\u4e00-\u9fff]", question)) + len(
        re.findall(r"[A-Za-z0-9]+", question)
    )
    return "short" if units <= 10 else "long"


def test_ids_are_unique(personas: list[dict[str, Any]]) -> None:
    assert len({p["id"] for p in personas}) == len(personas)
    for persona in personas:
        statement_ids = [st["id"] for s in persona["sessions"] for st in s["statements"]]
        assert len(set(statement_ids)) == len(statement_ids), persona["id"]
        assert len({s["id"] for s in persona["sessions"]}) == len(persona["sessions"])
    questions = [
        *cases_of(personas),
        *unrelated_of(personas),
        *near_of(personas),
        *topics_of(personas),
    ]
    question_ids = [q["id"] for q in questions]
    assert len(set(question_ids)) == len(question_ids)


def test_every_expected_statement_was_said_by_the_persona(
    personas: list[dict[str, Any]],
) -> None:
    for persona in personas:
        said = statements_of(persona)
        for case in persona["cases"]:
            assert case["expects"], case["id"]
            missing = [sid for sid in case["expects"] if sid not in said]
            assert not missing, (case["id"], missing)


def test_each_persona_is_in_one_split_and_the_splits_are_halves(
    personas: list[dict[str, Any]],
) -> None:
    for persona in personas:
        assert persona["split"] in SPLITS
        splits = {q["split"] for q in [*persona["cases"], *persona["unrelated"]]}
        assert splits == {persona["split"]}, persona["id"]
    for lang in LANGS:
        counts = Counter(c["split"] for c in cases_of(personas) if c["lang"] == lang)
        assert set(counts) == SPLITS, lang
        assert 0.4 <= counts["tune"] / sum(counts.values()) <= 0.6, (lang, counts)


def test_the_set_is_large_and_bilingual(personas: list[dict[str, Any]]) -> None:
    cases, unrelated = cases_of(personas), unrelated_of(personas)
    assert len(cases) >= 300
    assert len(unrelated) >= 200
    by_lang = Counter(c["lang"] for c in cases)
    assert set(by_lang) == LANGS
    assert all(0.4 <= n / len(cases) <= 0.6 for n in by_lang.values()), by_lang
    assert all(n >= 100 for n in Counter(u["lang"] for u in unrelated).values())
    assert set(Counter(u["lang"] for u in unrelated)) == LANGS
    # Short questions and paraphrases are what the set is for.
    for lang in LANGS:
        mine = [c for c in cases if c["lang"] == lang]
        assert sum(c["length"] == "short" for c in mine) >= len(mine) / 3, lang
        assert sum(c["wording"] == "paraphrase" for c in mine) >= len(mine) / 3, lang
        assert sum(c["asked_in"] == "new" for c in mine) >= len(mine) / 2, lang


def test_fields_hold_known_values(personas: list[dict[str, Any]]) -> None:
    for persona in personas:
        assert persona["lang"] in LANGS
        assert 2 <= len(persona["sessions"]) <= 3, persona["id"]
        ages = [s["days_ago"] for s in persona["sessions"]]
        assert ages == sorted(ages, reverse=True) and min(ages) >= 1, persona["id"]
        for session in persona["sessions"]:
            assert re.fullmatch(r"\d\d:\d\d", session["at"]), session
            assert session["statements"] and all(st["text"].strip() for st in session["statements"])
        said = statements_of(persona)
        for case in persona["cases"]:
            assert case["lang"] == persona["lang"], case["id"]
            assert case["category"] in CATEGORIES, case["id"]
            assert case["wording"] in WORDINGS, case["id"]
            assert case["asked_in"] in ASKED_IN, case["id"]
            assert case["length"] == length_of(case["question"], case["lang"]), case["id"]
            if case["asked_in"] != "new":
                # Asked in the expected statements' own session, or carrying on its task.
                sessions = {said[sid][0]["id"] for sid in case["expects"]}
                assert len(sessions) == 1, case["id"]
                assert said[case["expects"][0]][0]["task_id"], case["id"]
        for question in persona["unrelated"]:
            assert question["lang"] == persona["lang"], question["id"]
            assert question["category"] == "unrelated", question["id"]


def test_unrelated_questions_are_not_cases_and_shared_words_are_shared(
    personas: list[dict[str, Any]],
) -> None:
    asked = {c["question"] for c in cases_of(personas)}
    for persona in personas:
        texts = " ".join(st["text"].lower() for _, st in statements_of(persona).values())
        for question in persona["unrelated"]:
            assert question["question"] not in asked, question["id"]
            if question.get("shares_word"):
                assert question["shares_word"].lower() in texts, question["id"]
                assert question["shares_word"].lower() in question["question"].lower()


def keyword_in(word: str, text: str, lang: str) -> bool:
    """Whether a topic's word (or, in English, a plain inflection of it) is in the text."""
    word = word.strip("?？ ").lower()
    if lang == "zh":
        return word in text
    stem = word.removesuffix("s")
    return re.search(r"\b" + re.escape(stem), text.lower()) is not None


def test_near_questions_share_a_word_with_a_statement_of_the_persona(
    personas: list[dict[str, Any]],
) -> None:
    asked = {q["question"] for q in [*cases_of(personas), *unrelated_of(personas)]}
    for persona in personas:
        said = statements_of(persona)
        for question in persona["near"]:
            qid = question["id"]
            assert qid.startswith(persona["id"] + "-n"), qid
            assert question["category"] == "near", qid
            assert question["lang"] == persona["lang"], qid
            assert question["split"] == persona["split"], qid
            assert question["question"] not in asked, qid
            assert question["statement"] in said, qid
            missing = [sid for sid in question["may_inject"] if sid not in said]
            assert not missing, (qid, missing)
            word = question["shares_word"].lower()
            assert word.strip() and word in question["question"].lower(), qid
            assert word in said[question["statement"]][1]["text"].lower(), qid
        # Injecting a statement should rarely change the answer to a near question.
        injecting = sum(bool(q["may_inject"]) for q in persona["near"])
        assert injecting <= max(1, len(persona["near"]) // 5), persona["id"]


def test_topics_are_short_keywords_the_persona_answered(
    personas: list[dict[str, Any]],
) -> None:
    for persona in personas:
        said = statements_of(persona)
        for topic in persona["topics"]:
            tid = topic["id"]
            assert tid.startswith(persona["id"] + "-t"), tid
            assert topic["category"] == "topic", tid
            assert topic["lang"] == persona["lang"], tid
            assert topic["split"] == persona["split"], tid
            assert topic["asked_in"] == "new", tid
            assert topic["length"] == "short" == length_of(topic["question"], topic["lang"]), tid
            assert topic["expects"], tid
            missing = [sid for sid in topic["expects"] if sid not in said]
            assert not missing, (tid, missing)
            texts = [said[sid][1]["text"] for sid in topic["expects"]]
            found = any(keyword_in(topic["question"], t, topic["lang"]) for t in texts)
            assert topic["wording"] in WORDINGS, tid
            assert found == (topic["wording"] == "lexical"), tid


def test_near_questions_and_topics_are_many_in_both_languages_and_splits(
    personas: list[dict[str, Any]],
) -> None:
    near, topics = near_of(personas), topics_of(personas)
    assert len(near) >= 100
    assert len(topics) >= 50
    for questions in (near, topics):
        assert {q["lang"] for q in questions} == LANGS
        assert {q["split"] for q in questions} == SPLITS
    wordings = Counter(t["wording"] for t in topics)
    assert all(wordings[w] >= len(topics) / 3 for w in WORDINGS), wordings
