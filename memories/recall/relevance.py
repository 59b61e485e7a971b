"""Does the user's memory hold what a query is about? Content terms and their coverage.

A query's content terms are its index terms (segmented Chinese, stemmed English, as
`bm25_text` makes them) without the words that say nothing about a memory: question words,
small talk, very common verbs (`memories/data/recall_common_words.txt`). A memory covers the
share of them its own terms contain. The lexical branches of long-term memory and history run
for every query with content terms (they are cheap); the best coverage among their hits, against
the relevance floor, decides whether the user's memory holds the query. Small talk has no content
terms or none that the memory holds, so it reaches no memory.

A memory holds a term when its own terms contain it, contain a longer or shorter form of the
same English stem ("allergy" and "allergic"), or contain a word the vocabulary's `related_terms`
give for it: a category word asks for the things it names ("cloud" is answered by "AWS", "宠物" by
"狗"), one direction only. A memory must hold at least `relevance_floor` of the content terms,
and two of them, or a name the query gives, or the query's only content term.

Measured on the LoCoMo development split (760 questions about the conversations, 111 unrelated
queries against each of the 5 users): one memory holding at least a third of the content terms
and at least two of them (or one name the query gives, such as "Caroline" or a vocabulary
entity) routes 96.7% of the questions and 2.1% of the unrelated queries; a share alone (any one
term) routed 15.4% of the unrelated queries. Questions of one content term are the short
questions agents ask ("How do I deploy?"); they are judged on the agent-question set
(`benchmarks/agent_questions.py`), see docs/recall.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from memories.ltm.text import bm25_terms
from memories.vocabulary import Vocabulary

COMMON_WORDS_FILE = Path(__file__).resolve().parents[1] / "data" / "recall_common_words.txt"
MIN_HELD_TERMS = 2  # content terms one memory must hold, unless one of them is a name
MIN_STEM_CHARS = 5  # an English stem this long holds its longer forms ("allerg" → "allergi")
RELATED_KIND = "related_terms"
_PRONOUNS = ("我们", "你们", "我", "你")
# Capitalised, yet no name of anything a memory is about.
_CALENDAR = frozenset(
    [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "mondays",
        "tuesdays",
        "wednesdays",
        "thursdays",
        "fridays",
        "saturdays",
        "sundays",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]
)
_WORDS = re.compile(r"[A-Za-z][\w'-]*")
_PERSONAL = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|we'd|we'll|us|our|ours|"
    r"ourselves|you|you're|you've|your|yours)\b",
    re.IGNORECASE,
)
_CJK = re.compile(r"[\u3400-\u9fff]")

# term -> the term sets (one per related word or phrase) that hold it
Alternates = Mapping[str, tuple[frozenset[str], ...]]


@cache
def _common_words() -> frozenset[str]:
    lines = COMMON_WORDS_FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(w for line in lines if not line.startswith("#") for w in line.split())


def content_terms(query: str) -> list[str]:
    """The query's index terms that could name something a memory holds, once each."""
    common = _common_words()
    seen: dict[str, None] = {}
    for raw in bm25_terms(query):
        term = _without_pronoun(raw)
        if term not in common and (len(term) > 1 or not term.isascii()):
            seen.setdefault(term, None)
    return list(seen)


def _without_pronoun(term: str) -> str:
    """A Chinese word the segmenter glued to the pronoun before it ("我住", "我们用") is the
    word alone: the pronoun says nothing of what a memory holds."""
    for pronoun in _PRONOUNS:
        if len(term) > len(pronoun) and term.startswith(pronoun) and not term.isascii():
            return term[len(pronoun) :]
    return term


def about_the_user(query: str) -> bool:
    """Whether a query names its user or the one it asks ("my", "we", "you"): an English question
    naming neither asks about the world ("How many Fridays are there in a year?"), and one
    shared word does not make it about the user's memory. Chinese leaves the pronoun out of
    questions about oneself ("测试服的网址是什么？"), so a Chinese query always counts."""
    return bool(_CJK.search(query)) or bool(_PERSONAL.search(query))


def query_names(query: str, entities: Sequence[str] = ()) -> set[str]:
    """Index terms of what the query names: capitalised words after the first (Caroline,
    Postgres) and the query's entities."""
    words = _WORDS.findall(query)
    named = [w for w in words[1:] if w[0].isupper() and w.lower() not in _CALENDAR] + list(entities)
    return {term for name in named for term in bm25_terms(name)}


def related_terms(
    terms: Sequence[str], vocabulary: Vocabulary
) -> dict[str, tuple[frozenset[str], ...]]:
    """For each content term the vocabulary relates words to, the term sets that hold it."""
    groups = _related_groups(_related_entries(vocabulary))
    return {term: tuple(members for members, _ in groups[term]) for term in terms if term in groups}


def related_words(terms: Sequence[str], vocabulary: Vocabulary) -> list[str]:
    """The words related to the content terms, as written, for the lexical searches."""
    groups = _related_groups(_related_entries(vocabulary))
    words = dict.fromkeys(word for term in terms for _, word in groups.get(term, ()))
    return list(words)


def _related_entries(vocabulary: Vocabulary) -> tuple[str, ...]:
    return tuple(p.pattern for p in vocabulary.patterns.get(RELATED_KIND, ()))


@lru_cache(maxsize=64)
def _related_groups(entries: tuple[str, ...]) -> dict[str, tuple[tuple[frozenset[str], str], ...]]:
    """'asked with: answered with' entries as index term -> (term set, word) of each answer."""
    groups: dict[str, dict[frozenset[str], str]] = {}
    for entry in entries:
        asked, _, answered = entry.partition(":")
        words = [word.strip() for word in answered.split("|") if word.strip()]
        members = [(frozenset(bm25_terms(word)), word) for word in words]
        for asking in asked.split("|"):
            for term in bm25_terms(asking):
                own = groups.setdefault(term, {})
                for terms, word in members:
                    if terms and terms != frozenset((term,)):
                        own.setdefault(terms, word)
    return {
        term: tuple((terms, word) for terms, word in sets.items())
        for term, sets in groups.items()
        if sets
    }


@dataclass(frozen=True)
class _TextTerms:
    text: str  # lower-cased
    terms: frozenset[str]
    stems: Mapping[str, tuple[str, ...]]  # first MIN_STEM_CHARS letters -> English terms


@lru_cache(maxsize=8192)
def _text_terms(text: str) -> _TextTerms:
    terms = frozenset(bm25_terms(text))
    stems: dict[str, list[str]] = {}
    for term in terms:
        if len(term) >= MIN_STEM_CHARS and term.isascii():
            stems.setdefault(term[:MIN_STEM_CHARS], []).append(term)
    return _TextTerms(text.lower(), terms, {head: tuple(f) for head, f in stems.items()})


def names_in(names: AbstractSet[str], text: str) -> bool:
    """Whether `text` holds one of `names` (index terms, as `query_names` gives them)."""
    return bool(names & _text_terms(text).terms)


def _holds_term(term: str, text: _TextTerms, alternates: Alternates) -> bool:
    if term in text.terms:
        return True
    if len(term) >= MIN_STEM_CHARS and term.isascii():
        for form in text.stems.get(term[:MIN_STEM_CHARS], ()):
            if form.startswith(term) or term.startswith(form):
                return True
    return any(_holds_word(members, text) for members in alternates.get(term, ()))


def _holds_word(members: frozenset[str], text: _TextTerms) -> bool:
    """A related word's terms are all the text's, or a Chinese word stands in its text (a
    segmenter can cut "狗叫" where the word is "狗")."""
    if members <= text.terms:
        return True
    return all(not term.isascii() and term in text.text for term in members)


def coverage(
    terms: Sequence[str], text: str, alternates: Alternates | None = None
) -> tuple[float, list[str]]:
    """The share of `terms` that `text` holds, and which ones."""
    if not terms:
        return 0.0, []
    held = _text_terms(text)
    shared = [t for t in terms if _holds_term(t, held, alternates or {})]
    return len(shared) / len(terms), shared


@dataclass(frozen=True)
class Holding:
    """The best-covered memory among the lexical hits: its share and the terms it holds."""

    share: float
    terms: tuple[str, ...]
    memory_id: str = ""
    of: int = 0  # how many content terms the query has

    def holds(self, floor: float, names: set[str] | frozenset[str] = frozenset()) -> bool:
        """At least `floor` of the content terms, and two of them, a name or the only one."""
        if not self.partly(floor):
            return False
        enough = min(MIN_HELD_TERMS, self.of) if self.of else MIN_HELD_TERMS
        return len(self.terms) >= enough or bool(names & set(self.terms))

    def firmly(self, floor: float, names: set[str] | frozenset[str] = frozenset()) -> bool:
        """Two content terms or a name: words enough to say so without their meaning."""
        if not self.partly(floor):
            return False
        return len(self.terms) >= MIN_HELD_TERMS or bool(names & set(self.terms))

    def partly(self, floor: float) -> bool:
        """At least `floor` of the content terms, one of them at least."""
        return bool(self.terms) and self.share >= floor


def best_holding(
    terms: Sequence[str], texts: Iterable[tuple[str, str]], alternates: Alternates | None = None
) -> Holding:
    """The best coverage of `terms` among (memory_id, text) pairs."""
    best = Holding(0.0, (), of=len(terms))
    for memory_id, text in texts:
        share, shared = coverage(terms, text, alternates)
        if share > best.share:
            best = Holding(round(share, 3), tuple(shared), memory_id, of=len(terms))
    return best


def holding_of(terms: Sequence[str], text: str, alternates: Alternates | None = None) -> Holding:
    """How one memory's text holds the query's terms."""
    share, shared = coverage(terms, text, alternates)
    return Holding(share, tuple(shared), of=len(terms))


def holds(
    terms: Sequence[str],
    text: str,
    *,
    floor: float,
    names: set[str],
    alternates: Alternates | None = None,
) -> bool:
    """Whether one memory's text holds the query (the same rule as `Holding.holds`)."""
    return holding_of(terms, text, alternates).holds(floor, names)
