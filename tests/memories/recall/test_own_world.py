"""Whether a query asks about its user's own world or about the world at large
(`memories/recall/own_world.py`): the written examples, their shipped vectors, the score and
the rule that turns it into "this memory answers"; with the embedder recall uses."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from django.test import override_settings

from memories.ltm.embedder import embedder
from memories.recall.own_world import (
    OWN,
    WORLD,
    answers,
    exemplar_rows,
    exemplars_embed,
    exemplars_for,
    exemplars_load,
    exemplars_save,
    own_world_score,
)

AGENT_QUESTIONS = Path(__file__).resolve().parents[2] / "data" / "agent_questions.json"


def score(query: str) -> float:
    return own_world_score(embedder().embed_query(query))


def test_the_shipped_vectors_are_those_of_the_written_examples_with_the_configured_model() -> None:
    shipped = exemplars_load()
    rows = exemplar_rows()
    assert shipped.model_name == embedder().model_name
    assert shipped.texts == tuple(text for _, text in rows)
    assert shipped.labels == tuple(label for label, _ in rows)
    assert shipped.vectors.shape == (len(rows), 384)
    # both kinds, in both languages, in about equal measure
    for label in (OWN, WORLD):
        texts = [text for kind, text in rows if kind == label]
        chinese = [text for text in texts if any("\u4e00" <= ch <= "\u9fff" for ch in text)]
        assert len(texts) >= 200 and len(chinese) >= 80, (label, len(texts), len(chinese))


def test_no_example_is_a_copy_of_a_benchmark_question() -> None:
    data = json.loads(AGENT_QUESTIONS.read_text(encoding="utf-8"))
    questions = [
        case["question"]
        for persona in data["personas"]
        for case in [*persona["cases"], *persona["unrelated"]]
    ]
    model = embedder()
    asked = np.stack([np.asarray(model.embed_query(q), dtype=np.float32) for q in questions])
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)
    closest = (exemplars_load().vectors @ asked.T).max(axis=1)
    assert float(closest.max()) < 0.95


@pytest.mark.parametrize(
    "query",
    ["Which city do I live in?", "What's the name of our staging cluster?", "我女儿几岁了？"],
)
def test_a_question_about_oneself_scores_above_zero(query: str) -> None:
    assert score(query) > 0


@pytest.mark.parametrize(
    "query",
    ["How many moons does Jupiter have?", "How do I reverse a list in Go?", "水的沸点是多少度？"],
)
def test_a_question_about_the_world_scores_below_zero(query: str) -> None:
    assert score(query) < 0


@override_settings(RECALL_OWN_WORLD_EN=0.04, RECALL_OWN_WORLD_ZH=0.02)
def test_a_memory_answers_when_score_and_margin_together_reach_the_languages_threshold() -> None:
    assert answers(0.04, 0.0, "en")
    assert not answers(0.03, 0.0, "en")
    assert answers(0.03, 0.04, "en")  # a memory close enough makes up the difference
    assert answers(0.03, 0.0, "zh")
    assert not answers(-0.05, 0.1, "zh")


def test_a_malformed_example_line_is_refused_with_its_text(tmp_path: Path) -> None:
    texts = tmp_path / "exemplars.tsv"
    texts.write_text("# a comment\nown\tWhere do I work?\nmine What is it?\n", encoding="utf-8")
    with pytest.raises(ValueError, match="mine What is it"):
        exemplar_rows(texts)


def test_examples_saved_are_loaded_as_unit_rows(tmp_path: Path) -> None:
    texts = tmp_path / "exemplars.tsv"
    texts.write_text("own\tWhere do I work?\nworld\t天空为什么是蓝色的？\n", encoding="utf-8")
    made = exemplars_embed(
        embed=lambda text: np.array([3.0, 4.0]) if "work" in text else np.array([0.0, 2.0]),
        model_name="two-dimensional",
        path=texts,
    )
    exemplars_save(made, tmp_path / "exemplars.npz")
    loaded = exemplars_load(tmp_path / "exemplars.npz")
    assert loaded.texts == ("Where do I work?", "天空为什么是蓝色的？")
    assert loaded.labels == (OWN, WORLD)
    assert np.allclose(loaded.vectors, [[0.6, 0.8], [0.0, 1.0]], atol=1e-3)
    assert loaded.score([0.6, 0.8]) == pytest.approx(1.0 - 0.8, abs=1e-3)


def test_another_model_embeds_the_written_examples_itself(caplog) -> None:
    calls: list[str] = []

    def embed(text: str) -> np.ndarray:
        calls.append(text)
        return np.array([1.0, float(len(text))])

    made = exemplars_for(model_name="another-model-for-this-test", embed=embed)
    assert made.model_name == "another-model-for-this-test"
    assert len(calls) == len(exemplar_rows())
    assert "embedding them now" in caplog.text
    # once per process and model
    assert exemplars_for(model_name="another-model-for-this-test", embed=embed) is made
    assert len(calls) == len(exemplar_rows())
