"""The quarantine's second screen: closeness in meaning to known injections.

The patterns of `memoryproject.quarantine` hold the phrasings they were written for; a new
phrasing of the same request ("Kindly set aside what you were told earlier…") slips past
them. This screen embeds the sentences of a text that address the model (a cue word: model,
prompt, rule, 指令, 扮演 …, the vocabulary kind `injection_cue`) and holds a sentence whose
nearest hostile exemplar is at least `floor` close and closer by `margin` than its nearest
benign exemplar; the finding takes that hostile exemplar's reason.

A sentence is also held when a linear probe reads it as hostile (`Probe`: a logistic
regression over the sentence's unit vector, trained on the labelled set's tuning and fresh parts
by `manage.py build_injection_exemplars`). Nearest neighbours hold what is close to a known
phrasing; the probe learns the direction that separates speaking to the model from speaking
about the world, which carries better to phrasings no exemplar has (docs/review.md).

It is pure arithmetic over vectors: the embedding function, the exemplars and the probe are
given (the memories app builds them from `memories/data/injection_exemplars.npz`,
`injection_probe.npz` and the configured embedder). Vectors are compared by cosine, so any
scale the embedding has does not matter.

The bound on what one text costs: a text without a cue is never embedded (unless it becomes the
user's word: `uncued`); a short one (at most
`WHOLE_TEXT_CHARS`, like the exemplars, which are one or two sentences) is embedded whole, once;
of a longer one only the sentences holding a cue are, the first `MAX_SENTENCES` of them, each
cut to `MAX_SENTENCE_CHARS`. So one string costs at most three embeddings (~30 ms each on the
default embedder, less when Redis has the query's vector).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from memoryproject.quarantine import Finding, normalised
from memoryproject.vectors import unit_rows

WHOLE_TEXT_CHARS = 240
MAX_SENTENCES = 3
MAX_SENTENCE_CHARS = 400
_EXCERPT_CHARS = 160
# A sentence ends at . ! ? ; (followed by a space), at 。！？； (Chinese puts no space after
# them) or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")

Embed = Callable[[str], np.ndarray]


@dataclass(frozen=True)
class Exemplars:
    """Labelled texts embedded in query form: hostile ones with their reason, benign ones."""

    model_name: str
    texts: tuple[str, ...]
    vectors: np.ndarray  # (n, dim), one row per text
    reasons: tuple[str, ...]  # a hostile text's reason code; "" for a benign one

    @property
    def hostile(self) -> np.ndarray:
        return np.array([bool(reason) for reason in self.reasons], dtype=bool)

    @cached_property
    def unit_vectors(self) -> np.ndarray:
        """The vectors scaled to length 1, worked out once (every screen built shares them)."""
        return unit_rows(self.vectors)


@dataclass(frozen=True)
class Probe:
    """A linear reading of a sentence's unit vector: hostile when `weights · v + bias` (the
    log-odds of a logistic regression) exceeds `threshold`."""

    model_name: str
    weights: np.ndarray  # (dim,)
    bias: float
    threshold: float

    def score(self, vector: np.ndarray) -> float:
        return float(unit_rows(vector) @ self.weights + self.bias)


def probe_train(
    vectors: np.ndarray,
    hostile: np.ndarray,
    *,
    benign_share: float = 0.5,
    l2: float = 1.0,
    epochs: int = 1500,
    rate: float = 0.5,
) -> tuple[np.ndarray, float]:
    """Weights and bias of a logistic regression over unit vectors (batch gradient descent,
    deterministic): hostile rows weigh `1 - benign_share` of the loss, benign ones the rest,
    whatever their counts; `l2` shrinks the weights toward 0."""
    xs = unit_rows(np.asarray(vectors, dtype=np.float64))
    ys = np.asarray(hostile, dtype=np.float64)
    n, positives = len(ys), float(ys.sum())
    if not 0 < positives < n:
        raise ValueError("the probe needs hostile and benign rows")
    row_weight = np.where(ys == 1, (1 - benign_share) / positives, benign_share / (n - positives))
    weights, bias = np.zeros(xs.shape[1]), 0.0
    for _ in range(epochs):
        error = (1 / (1 + np.exp(-(xs @ weights + bias))) - ys) * row_weight
        weights -= rate * (xs.T @ error + l2 * weights / n)
        bias -= rate * float(error.sum())
    return weights.astype(np.float32), float(bias)


@dataclass(frozen=True)
class Closeness:
    """How close one sentence is to the nearest hostile and the nearest benign exemplar, and
    whether the probe reads it as hostile."""

    hostile: float
    benign: float
    reason: str  # the nearest hostile exemplar's
    probed: bool = False


def held_by(closeness: Closeness, *, margin: float, floor: float) -> bool:
    """Whether a sentence this close reads as hostile: the probe says so, or it is near enough
    to a hostile exemplar and nearer to it than to any benign one by the margin."""
    near = closeness.hostile >= floor and closeness.hostile - closeness.benign >= margin
    return closeness.probed or near


class MeaningScreen:
    """Holds a text one of whose cue sentences reads like a hostile exemplar."""

    def __init__(
        self,
        *,
        embed: Embed,
        exemplars: Exemplars,
        margin: float,
        floor: float,
        cues: Sequence[re.Pattern[str]],
        every_sentence: bool = False,
        probe: Probe | None = None,
    ) -> None:
        hostile = exemplars.hostile
        if not hostile.any() or hostile.all():
            raise ValueError("the exemplars need hostile and benign texts")
        unit = exemplars.unit_vectors
        self._embed = embed
        self._exemplars = exemplars
        self._hostile = unit[hostile]
        self._hostile_reasons = tuple(r for r in exemplars.reasons if r)
        self._benign = unit[~hostile]
        self.margin = margin
        self.floor = floor
        self.cues = tuple(cues)
        self.every_sentence = every_sentence
        self.probe = probe

    def with_cues(self, cues: Sequence[re.Pattern[str]]) -> MeaningScreen:
        """The same exemplars and thresholds with other cue patterns (a tenant's vocabulary)."""
        return MeaningScreen(
            embed=self._embed,
            exemplars=self._exemplars,
            margin=self.margin,
            floor=self.floor,
            cues=cues,
            every_sentence=self.every_sentence,
            probe=self.probe,
        )

    def uncued(self) -> MeaningScreen:
        """The same screen for a text that becomes the user's word (a user's statement, a rule,
        a profile value): its sentences are embedded with or without a cue, those with one
        first, still at most `MAX_SENTENCES` of them."""
        return MeaningScreen(
            embed=self._embed,
            exemplars=self._exemplars,
            margin=self.margin,
            floor=self.floor,
            cues=self.cues,
            every_sentence=True,
            probe=self.probe,
        )

    def has_cue(self, text: str) -> bool:
        return any(cue.search(text) for cue in self.cues)

    def sentences(self, text: str) -> list[str]:
        """What is worth embedding: a short text with a cue whole; of a longer one the
        sentences holding a cue, at most `MAX_SENTENCES`."""
        readable = normalised(text).strip()
        if len(readable) <= WHOLE_TEXT_CHARS:
            wanted = readable and (self.every_sentence or self.has_cue(readable))
            return [readable] if wanted else []
        sentences = [part.strip() for part in _SENTENCE_END.split(readable) if part.strip()]
        cued = [sentence for sentence in sentences if self.has_cue(sentence)]
        if self.every_sentence:
            cued += [sentence for sentence in sentences if sentence not in cued]
        return [sentence[:MAX_SENTENCE_CHARS] for sentence in cued[:MAX_SENTENCES]]

    def closeness(self, vector: np.ndarray) -> Closeness:
        unit = unit_rows(vector)
        to_hostile = self._hostile @ unit
        nearest = int(to_hostile.argmax())
        probe = self.probe
        return Closeness(
            hostile=float(to_hostile[nearest]),
            benign=float((self._benign @ unit).max()),
            reason=self._hostile_reasons[nearest],
            probed=probe is not None and probe.score(vector) > probe.threshold,
        )

    def text(self, text: str, *, path: str = "") -> Finding | None:
        """The first cue sentence that reads like a hostile exemplar, as a finding."""
        for sentence in self.sentences(text):
            closeness = self.closeness(self._embed(sentence))
            if held_by(closeness, margin=self.margin, floor=self.floor):
                return Finding(closeness.reason, sentence[:_EXCERPT_CHARS].strip(), path)
        return None


def exemplars_subset(exemplars: Exemplars, keep: np.ndarray) -> Exemplars:
    """The exemplars whose rows `keep` selects (a text left out of its own neighbours)."""
    indexes = np.flatnonzero(keep)
    return replace(
        exemplars,
        texts=tuple(exemplars.texts[i] for i in indexes),
        vectors=exemplars.vectors[indexes],
        reasons=tuple(exemplars.reasons[i] for i in indexes),
    )
