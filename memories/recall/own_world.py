"""Does a query ask about its user's own world, or about the world at large?

"What's my time zone?", "Which cloud are we on?", "组件库是哪个？" ask about the user's own setup,
people and places: their answer, if any, is in the user's memory, though often in other words
("I'm based in Lisbon"). "What is the capital of Canada?", "How do I reverse a string in
JavaScript?", "红烧肉怎么做？" ask about the world: a memory sharing a word or a topic with them
answers nothing. A query is scored by its closeness in meaning to written examples of both kinds
(`data/question_exemplars.tsv`): the mean cosine of its `NEAREST` closest "own" examples less
that of its closest "world" examples.

That score alone does not decide: a question about oneself that nothing in the memory is near
has no answer there. A memory answers a query when the query's score plus `MARGIN_WEIGHT` times
the memory's margin above the query's background (`semantic.py`) reaches the threshold of the
query's language (settings `RECALL_OWN_WORLD_EN`, `RECALL_OWN_WORLD_ZH`); the `MEMORIES`
nearest such memories join the recall. Weight, thresholds and count were chosen on the
agent-question set's tuning part, end to end, and are reported on its held-out part
(`benchmarks/agent_questions.py`, docs/recall.md).

The examples ship embedded (`data/question_exemplars.npz`, `manage.py build_question_exemplars`);
with another embedder configured they are embedded by it at first use instead (logged once).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
from django.conf import settings

from memories.ltm.embedder import embedder
from memoryproject.vectors import unit_rows

logger = logging.getLogger(__name__)

DATA = Path(__file__).resolve().parents[1] / "data"
EXEMPLAR_TEXTS = DATA / "question_exemplars.tsv"
EXEMPLAR_VECTORS = DATA / "question_exemplars.npz"
OWN, WORLD = "own", "world"
NEAREST = 5
MARGIN_WEIGHT = 0.3
MEMORIES = 3
# Below this score a query reads as one about the world at large: closer to those examples.
WORLD_BELOW = 0.0

Embed = Callable[[str], np.ndarray]


@dataclass(frozen=True)
class QuestionExemplars:
    model_name: str
    texts: tuple[str, ...]
    labels: tuple[str, ...]  # OWN or WORLD
    vectors: np.ndarray  # (n, dim), unit rows, query form

    @cached_property
    def own(self) -> np.ndarray:
        """Which rows are own examples (a boolean mask)."""
        return np.array([label == OWN for label in self.labels], dtype=bool)

    def score(self, query: np.ndarray | list[float]) -> float:
        """Mean cosine of the NEAREST closest own examples less that of the closest world ones."""
        cosines = self.vectors @ np.asarray(query, dtype=np.float32)
        return float(_top_mean(cosines[self.own]) - _top_mean(cosines[~self.own]))


def _top_mean(cosines: np.ndarray) -> float:
    if not len(cosines):
        return 0.0
    return float(np.sort(cosines)[-NEAREST:].mean())


def answers(score: float, margin: float, language: str) -> bool:
    """Whether a memory `margin` above the query's background answers a query of this score."""
    threshold = settings.RECALL_OWN_WORLD_ZH if language == "zh" else settings.RECALL_OWN_WORLD_EN
    return score + MARGIN_WEIGHT * margin >= threshold


def exemplar_rows(path: Path = EXEMPLAR_TEXTS) -> list[tuple[str, str]]:
    """(label, text) of the written examples."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, _, text = line.partition("\t")
        if label not in (OWN, WORLD) or not text.strip():
            raise ValueError(f"{path.name}: not 'own|world<TAB>text': {line!r}")
        rows.append((label, text.strip()))
    return rows


def exemplars_embed(
    *, embed: Embed, model_name: str, path: Path = EXEMPLAR_TEXTS
) -> QuestionExemplars:
    rows = exemplar_rows(path)
    vectors = np.stack([np.asarray(embed(text), dtype=np.float32) for _, text in rows])
    return QuestionExemplars(
        model_name=model_name,
        texts=tuple(text for _, text in rows),
        labels=tuple(label for label, _ in rows),
        vectors=unit_rows(vectors),
    )


def exemplars_save(exemplars: QuestionExemplars, path: Path = EXEMPLAR_VECTORS) -> None:
    np.savez_compressed(
        path,
        model_name=np.array(exemplars.model_name),
        texts=np.array(exemplars.texts),
        labels=np.array(exemplars.labels),
        vectors=exemplars.vectors.astype(np.float16),
    )


def exemplars_load(path: Path = EXEMPLAR_VECTORS) -> QuestionExemplars:
    with np.load(path, allow_pickle=False) as data:
        return QuestionExemplars(
            model_name=str(data["model_name"]),
            texts=tuple(str(text) for text in data["texts"]),
            labels=tuple(str(label) for label in data["labels"]),
            vectors=unit_rows(data["vectors"].astype(np.float32)),
        )


_lock = threading.Lock()
_by_model: dict[str, QuestionExemplars] = {}


def exemplars_for(*, model_name: str, embed: Embed) -> QuestionExemplars:
    """The shipped examples, or (another model, or texts edited since) the texts embedded with
    `embed`; once per process and model."""
    with _lock:
        if model_name not in _by_model:
            shipped = exemplars_load()
            written = tuple(text for _, text in exemplar_rows())
            if shipped.model_name != model_name or shipped.texts != written:
                logger.warning(
                    "question exemplars were embedded with %s (%d texts), the embedder is %s "
                    "(%d texts written): embedding them now",
                    shipped.model_name,
                    len(shipped.texts),
                    model_name,
                    len(written),
                )
                shipped = exemplars_embed(embed=embed, model_name=model_name)
            _by_model[model_name] = shipped
        return _by_model[model_name]


def own_world_score(query: np.ndarray | list[float]) -> float:
    """The query's score with the configured embedder's exemplars."""
    return _configured().score(query)


def warm_up() -> None:
    """Read the exemplars now rather than in the first recall."""
    _configured()


def _configured() -> QuestionExemplars:
    model = embedder()
    return exemplars_for(model_name=model.model_name, embed=model.embed_query)
