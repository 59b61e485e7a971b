"""What a user's sentence states, read by meaning where the word lists found nothing.

The rule reading (`statements.py`) knows the shapes its patterns name; a user says the same in
many more ("Rent is 1,450 euros a month.", "少用表格", "I'd rather see metric units."). A linear
probe over the sentence's embedding (multinomial logistic regression) reads the kind a sentence
states: a fact, a constraint, a preference, a decision, or nothing to keep. It is trained by
`manage.py build_statement_probe` on the tuning parts of the labelled sets
(`tests/data/extraction_labelled.jsonl`, `tests/data/everyday_statements.jsonl`) and ships as
`memories/data/statement_probe.npz`; the held-out parts measure it. Under another embedder than
the file's the probe is left out (logged once): its weights belong to its model's vectors.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memories.ltm.embedder import embedder
from memoryproject.vectors import unit_rows

logger = logging.getLogger(__name__)

PROBE_FILE = Path(__file__).resolve().parents[1] / "data" / "statement_probe.npz"
NOTHING = "none"
KINDS = (NOTHING, "fact", "constraint", "preference", "decision")
# How the probe names a kind, in two steps: a sentence states something to keep when the
# probability that it states nothing is at most 1 - `keep`; it is a rule (a constraint or a
# preference, whichever is likelier) when those two together reach `rule`, a decision when that
# reaches `decision`, else a fact. A rule becomes a standing rule sent with every recall, so its
# floor is chosen where ordinary conversation (1,500 sentences of the LoCoMo development turns)
# reaches it for 7 sentences, against 96% of the tuning part's statements read right.
DEFAULT_FLOORS = {"keep": 0.8, "rule": 0.7, "decision": 0.6}
RULE_KINDS = ("constraint", "preference")


@dataclass(frozen=True)
class KindProbe:
    """Softmax over `weights · v + bias` for a sentence's unit vector `v`, one column a kind."""

    model_name: str
    kinds: tuple[str, ...]
    weights: np.ndarray  # (dim, kinds)
    bias: np.ndarray  # (kinds,)
    floors: dict[str, float]

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        logits = unit_rows(vectors) @ self.weights + self.bias
        logits = logits - logits.max(axis=-1, keepdims=True)
        odds = np.exp(logits)
        return odds / odds.sum(axis=-1, keepdims=True)

    def kinds_of(self, vectors: np.ndarray) -> list[tuple[str, float]]:
        """The kind each vector's sentence states ('none' below the floors), with the
        probability that it states something to keep."""
        found = []
        for row in self.probabilities(vectors):
            odds = dict(zip(self.kinds, (float(value) for value in row), strict=True))
            keep = 1.0 - odds[NOTHING]
            if keep < self.floors["keep"]:
                found.append((NOTHING, round(keep, 3)))
                continue
            rule = max(RULE_KINDS, key=lambda kind: odds[kind])
            if sum(odds[kind] for kind in RULE_KINDS) >= self.floors["rule"]:
                kind = rule
            elif odds["decision"] >= self.floors["decision"]:
                kind = "decision"
            else:
                kind = "fact"
            found.append((kind, round(keep, 3)))
        return found

    def save(self, path: Path = PROBE_FILE) -> None:
        np.savez_compressed(
            path,
            model_name=np.array(self.model_name),
            kinds=np.array(json.dumps(self.kinds)),
            weights=self.weights.astype(np.float32),
            bias=self.bias.astype(np.float32),
            floors=np.array(json.dumps(self.floors)),
        )


@dataclass(frozen=True)
class LabelledSentence:
    text: str
    kind: str
    lang: str
    tuning: bool  # in a tuning part (the probe learns from it) or held out


def labelled_sentences(*, extraction: Path, everyday: Path) -> list[LabelledSentence]:
    """The labelled sentences of both sets, each with the kind it states: an extraction row's
    strongest label (constraint, preference, decision, fact; none without one) and an everyday
    statement's `expect`."""
    rows = []
    for line in extraction.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            kind = next(
                (k for k in ("constraint", "preference", "decision", "fact") if k in row["labels"]),
                NOTHING,
            )
            rows.append(LabelledSentence(row["text"], kind, row["lang"], row["split"] == "tune"))
    for line in everyday.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows.append(
                LabelledSentence(row["text"], row["expect"], row["lang"], row["part"] == "tune")
            )
    return rows


def kind_probe_train(
    vectors: np.ndarray,
    labels: Sequence[str],
    *,
    model_name: str,
    l2: float = 0.1,
    epochs: int = 3000,
    rate: float = 2.0,
    floors: dict[str, float] | None = None,
) -> KindProbe:
    """A probe fitted by batch gradient descent (deterministic); each kind weighs the same in
    the loss whatever its count, and `l2` shrinks the weights toward 0."""
    xs = unit_rows(np.asarray(vectors, dtype=np.float64)).astype(np.float64)
    ys = np.array([KINDS.index(label) for label in labels])
    counts = np.bincount(ys, minlength=len(KINDS))
    if (counts == 0).any():
        missing = [kind for kind, count in zip(KINDS, counts, strict=True) if not count]
        raise ValueError(f"the probe needs rows of every kind; none of {missing}")
    n = len(ys)
    row_weight = 1.0 / (len(KINDS) * counts[ys])
    targets = np.eye(len(KINDS))[ys]
    weights, bias = np.zeros((xs.shape[1], len(KINDS))), np.zeros(len(KINDS))
    for _ in range(epochs):
        logits = xs @ weights + bias
        logits -= logits.max(axis=1, keepdims=True)
        odds = np.exp(logits)
        error = (odds / odds.sum(axis=1, keepdims=True) - targets) * row_weight[:, None]
        weights -= rate * (xs.T @ error + l2 * weights / n)
        bias -= rate * error.sum(axis=0)
    return KindProbe(
        model_name,
        KINDS,
        weights.astype(np.float32),
        bias.astype(np.float32),
        dict(floors or DEFAULT_FLOORS),
    )


_lock = threading.Lock()
_probes: dict[str, KindProbe | None] = {}


def kind_probe() -> KindProbe | None:
    """The shipped probe when it belongs to the configured embedder's model, else None."""
    model = embedder().model_name
    with _lock:
        if model not in _probes:
            _probes[model] = _load(model)
        return _probes[model]


def _load(model: str) -> KindProbe | None:
    if not PROBE_FILE.exists():
        logger.warning(
            "no statement probe at %s: sentences are read by the word lists alone", PROBE_FILE
        )
        return None
    with np.load(PROBE_FILE) as data:
        if str(data["model_name"]) != model:
            logger.warning(
                "the statement probe belongs to %s, not the configured %s: left out",
                data["model_name"],
                model,
            )
            return None
        return KindProbe(
            model_name=model,
            kinds=tuple(json.loads(str(data["kinds"]))),
            weights=data["weights"],
            bias=data["bias"],
            floors=json.loads(str(data["floors"])),
        )


def sentence_kinds(sentences: Sequence[str]) -> list[tuple[str, float]]:
    """The kind each sentence states by meaning, or ('none', 0) for all when no probe serves."""
    probe = kind_probe() if sentences else None
    if probe is None:
        return [(NOTHING, 0.0)] * len(sentences)
    return probe.kinds_of(embedder().embed_passages(list(sentences)))
