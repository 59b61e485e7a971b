"""The text Elasticsearch ranks: Chinese segmented into words, English lower-cased and stemmed.

The service builds `bm25_text` itself and the index splits it on whitespace only, so ranking
does not depend on which analyzers an Elasticsearch install has.
"""

from __future__ import annotations

import logging
import re
import threading
from functools import cache, lru_cache
from pathlib import Path

import jieba
import snowballstemmer

jieba.setLogLevel(logging.WARNING)

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN_TOKEN = re.compile(r"[a-z0-9]+(?:[._'-][a-z0-9]+)*")
STOPWORDS_FILE = Path(__file__).resolve().parents[1] / "data" / "stopwords.txt"


@cache
def _stopwords() -> frozenset[str]:
    lines = STOPWORDS_FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(w for line in lines if not line.startswith("#") for w in line.split())


_local = threading.local()


def _stemmer() -> snowballstemmer.stemmer:
    """This thread's stemmer: a Snowball stemmer keeps the word it works on in itself, so one
    shared by recall's branch threads garbles words or fails mid-word."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return stemmer


# Recall stems and segments the texts of a hundred or more memories per request, and their
# words and phrases repeat: remembering each one's result turns most of that time into lookups.
# Only short ones are remembered, so a pasted blob cannot fill the caches' memory.
CACHED_WORD_CHARS = 40
CACHED_RUN_CHARS = 64


def _stem(word: str) -> str:
    if len(word) > CACHED_WORD_CHARS:
        return _stemmer().stemWord(word)
    return _cached_stem(word)


@lru_cache(maxsize=65536)
def _cached_stem(word: str) -> str:
    return _stemmer().stemWord(word)


def _latin_terms(text: str) -> list[str]:
    tokens = [t for t in _LATIN_TOKEN.findall(text.lower()) if t not in _stopwords()]
    # split identifiers like create_order / payment-service into parts too, keeping the whole
    parts = [p for t in tokens for p in re.split(r"[._'-]", t) if p and p != t]
    return [_stem(word) for word in tokens + parts]


def _segmented(run: str) -> tuple[str, ...]:
    """The words of one run of Chinese characters, for search."""
    if len(run) > CACHED_RUN_CHARS:
        return tuple(jieba.lcut_for_search(run))
    return _cached_segments(run)


@lru_cache(maxsize=16384)
def _cached_segments(run: str) -> tuple[str, ...]:
    return tuple(jieba.lcut_for_search(run))


def _chinese_terms(text: str) -> list[str]:
    return [
        word
        for run in _CJK.findall(text)
        for word in _segmented(run)
        if word.strip() and word not in _stopwords()
    ]


def warm_up() -> None:
    """Load the segmenter's dictionary now rather than in the first request that needs it."""
    jieba.initialize()
    _stopwords()


_CAMEL = re.compile(r"\b([a-z]+(?:[A-Z][a-z0-9]*)+)\b")
_UPPER = re.compile(r"([A-Z])")


def _camel_parts(text: str) -> str:
    """createOrder -> "createOrder create Order", so both the API name and its words match."""
    return _CAMEL.sub(lambda m: m.group(1) + " " + _UPPER.sub(r" \1", m.group(1)), text)


def bm25_terms(text: str) -> list[str]:
    """The index terms of `text`: segmented Chinese words, stemmed English words."""
    text = _camel_parts(text)
    return _chinese_terms(text) + _latin_terms(_CJK.sub(" ", text))


def bm25_text(text: str) -> str:
    """`bm25_terms` joined by spaces: what goes into the `bm25_text` field and its queries."""
    return " ".join(bm25_terms(text))
