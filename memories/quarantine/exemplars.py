"""The exemplars of the quarantine's screen by meaning, and the screen built from them.

The labelled set's tuning part (`tests/data/quarantine_labelled.jsonl`), embedded in query form,
ships as `memories/data/injection_exemplars.npz` (the model's name, the texts and their
digests, labels, reasons and vectors), written by `manage.py build_injection_exemplars` and read
once per process at first use. When the configured embedder is another model than the file's,
the file's texts are embedded with it at first use instead (logged once): vectors of two models
are not comparable.

The screen's linear probe (`memoryproject.quarantine_meaning.Probe`) ships beside them as
`memories/data/injection_probe.npz`, trained by the same command on the tuning part and the
fresh parts written before the newest one (`PROBE_PARTS`), the newest kept apart to measure it
on. Its threshold is chosen at build time: above the scores of all but 1% of its benign
training texts and of all but `ORDINARY_ABOVE` of the ordinary conversation turns given to the
command (the LoCoMo development split). Under another embedder the probe is left out (logged
once): its weights belong to its model's vectors.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from django.conf import settings

from memories.vocabulary import INJECTION_CUE_KIND, default_vocabulary
from memoryproject.quarantine import Reason, normalised
from memoryproject.quarantine_meaning import Embed, Exemplars, MeaningScreen, Probe, probe_train

logger = logging.getLogger(__name__)

EXEMPLAR_FILE = Path(__file__).resolve().parents[1] / "data" / "injection_exemplars.npz"
PROBE_FILE = Path(__file__).resolve().parents[1] / "data" / "injection_probe.npz"
TUNING_PART = "tune"
# What the probe learns from; the newest fresh part (fresh4) stays out, to be measured on.
PROBE_PARTS = ("tune", "fresh", "fresh2", "fresh3")
# How many ordinary conversation turns the probe's threshold lets through (of 2,760 LoCoMo
# turns, 38 of which hold a cue word and are read at all).
ORDINARY_ABOVE = 2
BENIGN_ABOVE_SHARE = 0.01
# The labelled set's categories of hostile texts, as reason codes.
CATEGORY_REASONS = {
    "override": Reason.INSTRUCTION_OVERRIDE,
    "disclosure": Reason.PROMPT_DISCLOSURE,
    "role": Reason.ROLE_CHANGE,
    "marker": Reason.FAKE_MARKER,
}

_lock = threading.Lock()
_by_model: dict[str, Exemplars] = {}
_probes: dict[str, Probe | None] = {}


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def tuning_rows(labelled: Path, parts: tuple[str, ...] = (TUNING_PART,)) -> list[tuple[str, str]]:
    """(text, reason) of the labelled set's tuning part (or `parts`); a benign text's reason
    is ""."""
    rows = []
    for line in labelled.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row["part"] in parts:
            hostile = row["label"] == "hostile"
            rows.append((row["text"], CATEGORY_REASONS[row["category"]] if hostile else ""))
    return rows


def exemplars_embed(*, rows: Iterable[tuple[str, str]], embed: Embed, model_name: str) -> Exemplars:
    """The rows' texts embedded as the screen embeds what it reads: in query form, normalised
    like the patterns read (NFKC turns Chinese full-width punctuation into ASCII)."""
    listed = list(rows)
    vectors = np.stack(
        [np.asarray(embed(normalised(text)), dtype=np.float32) for text, _ in listed]
    )
    return Exemplars(
        model_name=model_name,
        texts=tuple(text for text, _ in listed),
        vectors=vectors,
        reasons=tuple(reason for _, reason in listed),
    )


def exemplars_save(exemplars: Exemplars, path: Path = EXEMPLAR_FILE) -> None:
    np.savez_compressed(
        path,
        model_name=np.array(exemplars.model_name),
        texts=np.array(exemplars.texts),
        digests=np.array([text_digest(text) for text in exemplars.texts]),
        labels=np.array(["hostile" if reason else "benign" for reason in exemplars.reasons]),
        reasons=np.array(exemplars.reasons),
        vectors=exemplars.vectors.astype(np.float16),
    )


def exemplars_load(path: Path = EXEMPLAR_FILE) -> Exemplars:
    with np.load(path, allow_pickle=False) as data:
        return Exemplars(
            model_name=str(data["model_name"]),
            texts=tuple(str(text) for text in data["texts"]),
            vectors=data["vectors"].astype(np.float32),
            reasons=tuple(str(reason) for reason in data["reasons"]),
        )


def exemplars_for(*, model_name: str, embed: Embed) -> Exemplars:
    """The shipped exemplars, or (another model) the shipped texts embedded with `embed`;
    once per process and model."""
    with _lock:
        if model_name not in _by_model:
            shipped = exemplars_load()
            if shipped.model_name != model_name:
                logger.warning(
                    "quarantine exemplars were embedded with %s, the embedder is %s: "
                    "embedding %d exemplars now",
                    shipped.model_name,
                    model_name,
                    len(shipped.texts),
                )
                shipped = exemplars_embed(
                    rows=zip(shipped.texts, shipped.reasons, strict=True),
                    embed=embed,
                    model_name=model_name,
                )
            _by_model[model_name] = shipped
        return _by_model[model_name]


def probe_build(
    *,
    rows: Iterable[tuple[str, str]],
    ordinary: Iterable[str],
    embed: Embed,
    model_name: str,
    screen: MeaningScreen,
) -> tuple[Probe, dict[str, int]]:
    """The probe trained on what the screen would read of each row (its cue sentences, each
    labelled with its text's label), and its threshold (see the module's docstring); with the
    counts it was built from."""
    vectors, hostile, benign_texts = [], [], []
    for text, reason in rows:
        sentences = [np.asarray(embed(s), dtype=np.float32) for s in screen.sentences(text)]
        vectors += sentences
        hostile += [bool(reason)] * len(sentences)
        if sentences and not reason:
            benign_texts.append(np.stack(sentences))
    weights, bias = probe_train(np.stack(vectors), np.array(hostile))
    unscored = Probe(model_name=model_name, weights=weights, bias=bias, threshold=0.0)

    def top(matrices: list[np.ndarray]) -> list[float]:
        return sorted((max(unscored.score(v) for v in m) for m in matrices), reverse=True)

    read = [np.stack([embed(s) for s in said]) for said in map(screen.sentences, ordinary) if said]
    benign_scores, ordinary_scores = top(benign_texts), top(read)
    bounds = [0.0, benign_scores[int(len(benign_scores) * BENIGN_ABOVE_SHARE)]]
    if len(ordinary_scores) > ORDINARY_ABOVE:
        bounds.append(ordinary_scores[ORDINARY_ABOVE])
    probe = Probe(model_name=model_name, weights=weights, bias=bias, threshold=max(bounds))
    counts = {
        "sentences": len(vectors),
        "hostile": int(sum(hostile)),
        "ordinary read": len(read),
    }
    return probe, counts


def probe_save(probe: Probe, path: Path = PROBE_FILE) -> None:
    np.savez_compressed(
        path,
        model_name=np.array(probe.model_name),
        weights=probe.weights.astype(np.float32),
        bias=np.array(probe.bias),
        threshold=np.array(probe.threshold),
    )


def probe_load(path: Path = PROBE_FILE) -> Probe:
    with np.load(path, allow_pickle=False) as data:
        return Probe(
            model_name=str(data["model_name"]),
            weights=data["weights"].astype(np.float32),
            bias=float(data["bias"]),
            threshold=float(data["threshold"]),
        )


def probe_for(model_name: str) -> Probe | None:
    """The shipped probe when it was trained on `model_name`'s vectors; once per process."""
    with _lock:
        if model_name not in _probes:
            shipped = probe_load() if PROBE_FILE.exists() else None
            if shipped is not None and shipped.model_name != model_name:
                logger.warning(
                    "the quarantine probe was trained on %s vectors, the embedder is %s: "
                    "the screen by meaning runs without it",
                    shipped.model_name,
                    model_name,
                )
                shipped = None
            _probes[model_name] = shipped
        return _probes[model_name]


def meaning_screen_of(*, model_name: str, embed: Embed, with_probe: bool = True) -> MeaningScreen:
    """The screen by meaning with the default cue words, the configured margin and floor, and
    the shipped probe."""
    return MeaningScreen(
        embed=embed,
        exemplars=exemplars_for(model_name=model_name, embed=embed),
        margin=settings.QUARANTINE_MEANING_MARGIN,
        floor=settings.QUARANTINE_MEANING_FLOOR,
        cues=default_vocabulary().patterns.get(INJECTION_CUE_KIND, ()),
        probe=probe_for(model_name) if with_probe else None,
    )
