"""Does the user's memory hold what a query is about? Content terms and their coverage.

A query's content terms are its index terms (segmented Chinese, stemmed English, as
`bm25_text` makes them) without the words that say nothing about a memory: question words,
small talk, very common verbs (`memories/data/recall_common_words.txt`). A memory covers the
share of them its own terms contain. The lexical branches of long-term memory and history run
for every query with content terms (they are cheap); the best coverage among their hits, against
the relevance floor, decides whether the user's memory holds the query. Small talk has no content
terms or none that the memory holds, so it reaches no memory.

Measured on the LoCoMo development split (760 questions about the conversations, 111 unrelated
queries against each of the 5 users): one memory holding at least a third of the content terms
and at least two of them (or one name the query gives, such as "Caroline" or a vocabulary
entity) routes 96.7% of the questions and 2.1% of the unrelated queries; a share alone (any one
term) routed 15.4% of the unrelated queries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from memories.ltm.text import bm25_terms

COMMON_WORDS_FILE = Path(__file__).resolve().parents[1] / "data" / "recall_common_words.txt"
MIN_HELD_TERMS = 2  # content terms one memory must hold, unless one of them is a name
_WORDS = re.compile(r"[A-Za-z][\w'-]*")


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


def query_names(query: str, entities: Sequence[str] = ()) -> set[str]:
    """Index terms of what the query names: capitalised words after the first (Caroline,
    Postgres) and the query's entities."""
    words = _WORDS.findall(query)
    named = [w for w in words[1:] if w[0].isupper()] + list(entities)
    return {term for name in named for term in bm25_terms(name)}


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

    def holds(self, floor: float, names: set[str] | frozenset[str] = frozenset()) -> bool:
        """At least `floor` of the content terms, and two of them or a name."""
        if not self.terms or self.share < floor:
            return False
        return len(self.terms) >= MIN_HELD_TERMS or bool(names & set(self.terms))


def best_holding(terms: Sequence[str], texts: Iterable[tuple[str, str]]) -> Holding:
    """The best coverage of `terms` among (memory_id, text) pairs."""
    best = Holding(0.0, ())
    for memory_id, text in texts:
        share, shared = coverage(terms, text)
        if share > best.share:
            best = Holding(round(share, 3), tuple(shared), memory_id)
    return best


def holds(terms: Sequence[str], text: str, *, floor: float, names: set[str]) -> bool:
    """Whether one memory's text holds the query (the same rule as `Holding.holds`)."""
    share, shared = coverage(terms, text)
    return Holding(share, tuple(shared)).holds(floor, names)
