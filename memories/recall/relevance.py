"""Does the user's memory hold what a query is about? Content terms and their coverage.

A query's content terms are its index terms (segmented Chinese, stemmed English, as
`bm25_text` makes them) without the words that say nothing about a memory: question words,
small talk, very common verbs (`memories/data/recall_common_words.txt`). A memory covers the
share of them its own terms contain. The lexical branches of long-term memory and history run
for every query with content terms (they are cheap); the best coverage among their hits, against
the relevance floor, decides whether the user's memory holds the query. Small talk has no content
terms or none that the memory holds, so it reaches no memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from memories.ltm.text import bm25_terms

COMMON_WORDS_FILE = Path(__file__).resolve().parents[1] / "data" / "recall_common_words.txt"


@cache
def _common_words() -> frozenset[str]:
    lines = COMMON_WORDS_FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(w for line in lines if not line.startswith("#") for w in line.split())


def content_terms(query: str) -> list[str]:
    """The query's index terms that could name something a memory holds, once each."""
    common = _common_words()
    seen: dict[str, None] = {}
    for term in bm25_terms(query):
        if term not in common and (len(term) > 1 or not term.isascii()):
            seen.setdefault(term, None)
    return list(seen)


@lru_cache(maxsize=8192)
def _text_terms(text: str) -> frozenset[str]:
    return frozenset(bm25_terms(text))


def coverage(terms: Sequence[str], text: str) -> tuple[float, list[str]]:
    """The share of `terms` that `text` holds, and which ones."""
    if not terms:
        return 0.0, []
    held = _text_terms(text)
    shared = [t for t in terms if t in held]
    return len(shared) / len(terms), shared


@dataclass(frozen=True)
class Holding:
    """The best-covered memory among the lexical hits: its share and the terms it holds."""

    share: float
    terms: tuple[str, ...]
    memory_id: str = ""

    def holds(self, floor: float) -> bool:
        return bool(self.terms) and self.share >= floor


def best_holding(terms: Sequence[str], texts: Iterable[tuple[str, str]]) -> Holding:
    """The best coverage of `terms` among (memory_id, text) pairs."""
    best = Holding(0.0, ())
    for memory_id, text in texts:
        share, shared = coverage(terms, text)
        if share > best.share:
            best = Holding(round(share, 3), tuple(shared), memory_id)
    return best
