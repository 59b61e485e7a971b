"""The exemplars of the quarantine's screen by meaning, and the screen built from them.

The labelled set's tuning part (`tests/data/quarantine_labelled.jsonl`), embedded in query form,
ships as `memories/data/injection_exemplars.npz` (the model's name, the texts and their
digests, labels, reasons and vectors), written by `manage.py build_injection_exemplars` and read
once per process at first use. When the configured embedder is another model than the file's,
the file's texts are embedded with it at first use instead (logged once): vectors of two models
are not comparable.
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
from memoryproject.quarantine_meaning import Embed, Exemplars, MeaningScreen

logger = logging.getLogger(__name__)

EXEMPLAR_FILE = Path(__file__).resolve().parents[1] / "data" / "injection_exemplars.npz"
TUNING_PART = "tune"
# The labelled set's categories of hostile texts, as reason codes.
CATEGORY_REASONS = {
    "override": Reason.INSTRUCTION_OVERRIDE,
    "disclosure": Reason.PROMPT_DISCLOSURE,
    "role": Reason.ROLE_CHANGE,
    "marker": Reason.FAKE_MARKER,
}

_lock = threading.Lock()
_by_model: dict[str, Exemplars] = {}


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def tuning_rows(labelled: Path) -> list[tuple[str, str]]:
    """(text, reason) of the labelled set's tuning part; a benign text's reason is ""."""
    rows = []
    for line in labelled.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row["part"] == TUNING_PART:
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


def meaning_screen_of(*, model_name: str, embed: Embed) -> MeaningScreen:
    """The screen by meaning with the default cue words and the configured margin and floor."""
    return MeaningScreen(
        embed=embed,
        exemplars=exemplars_for(model_name=model_name, embed=embed),
        margin=settings.QUARANTINE_MEANING_MARGIN,
        floor=settings.QUARANTINE_MEANING_FLOOR,
        cues=default_vocabulary().patterns.get(INJECTION_CUE_KIND, ()),
    )
