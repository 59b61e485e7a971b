"""Word lists and patterns the rule-based extractors and the query profile use.

Defaults live in `memories/data/vocabulary.json`; a tenant extends any kind with
`VocabularyEntry` rows (admin), so no pattern lives in code. This module reads no table (the
model validates its rows with it); `memories.policies.selectors` reads a tenant's entries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from memoryproject.quarantine import InjectionScreen, Reason, meaning_screen
from memoryproject.redaction import DEFAULT, Redactor

DATA_FILE = Path(__file__).resolve().parent / "data" / "vocabulary.json"
CASE_SENSITIVE_KINDS = frozenset({"error_name", "entity_pattern"})
# Latin names in mixed text: `\b` and `\w` see a Chinese character as a boundary, so
# "billing-api的连接池" names billing-api (Chinese puts no space between words).
ASCII_KINDS = frozenset({"error_name", "status_code", "entity_pattern", "figure"})
SYNONYM_KIND = "entity_synonym"
DICTIONARY_KIND = "entity"
REDACTION_KIND = "redaction"  # a tenant's own patterns of sensitive data, redacted on writes
# Patterns of text that reads as an instruction to the model, quarantined on writes: kind ->
# the reason a held text is given.
INJECTION_KINDS = {
    "injection_override": Reason.INSTRUCTION_OVERRIDE,
    "injection_disclosure": Reason.PROMPT_DISCLOSURE,
    "injection_role": Reason.ROLE_CHANGE,
    "injection_marker": Reason.FAKE_MARKER,
}
# Words that address the model: the screen by meaning embeds only sentences holding one.
INJECTION_CUE_KIND = "injection_cue"
# Kinds a tenant's entry of runs on every write: each is tried on hostile input when saved.
GUARDED_KINDS = frozenset({REDACTION_KIND, INJECTION_CUE_KIND, *INJECTION_KINDS})


def compile_pattern(kind: str, pattern: str) -> re.Pattern[str]:
    flags = 0 if kind in CASE_SENSITIVE_KINDS else re.IGNORECASE
    if kind in ASCII_KINDS:
        flags |= re.ASCII
    return re.compile(pattern, flags)


@dataclass(frozen=True)
class Vocabulary:
    """Compiled patterns by kind, plus the dictionary of known entities."""

    patterns: Mapping[str, tuple[re.Pattern[str], ...]]
    entities: tuple[str, ...]

    def matches(self, kind: str, text: str) -> bool:
        return any(p.search(text) for p in self.patterns.get(kind, ()))

    def findall(self, kind: str, text: str) -> list[str]:
        """Every match of the kind's patterns, in order of appearance, without repeats."""
        found: list[tuple[int, str]] = []
        for pattern in self.patterns.get(kind, ()):
            for match in pattern.finditer(text):
                value = match.group(match.lastindex or 0) if match.groups() else match.group(0)
                found.append((match.start(), value.strip()))
        return _unique(value for _, value in sorted(found))

    def find_entities(self, text: str) -> list[str]:
        """Dictionary terms (case-insensitive) and pattern-matched entities in `text`.

        A hit inside a longer hit (`k8s` in `prod-k8s`) is dropped.
        """
        spans: list[tuple[int, int, str]] = []
        for term in self.entities:
            match = _term_pattern(term).search(text)
            if match:
                spans.append((match.start(), match.end(), term))
        for pattern in self.patterns.get("entity_pattern", ()):
            spans.extend((m.start(), m.end(), m.group(0)) for m in pattern.finditer(text))
        kept = [
            (start, value)
            for start, end, value in spans
            if not any(s <= start and end <= e and (e - s) > (end - start) for s, e, _ in spans)
        ]
        return _unique(value for _, value in sorted(kept))

    def synonyms(self, names: Iterable[str]) -> list[str]:
        """Dictionary terms that spell the same thing as one of `names`: those an
        `entity_synonym` pattern matches whole when it matches one of the names whole
        ("db pool" → "connection pool", "连接池")."""
        given = [name.strip() for name in names if name.strip()]
        found: list[str] = []
        for pattern in self.patterns.get(SYNONYM_KIND, ()):
            if any(pattern.fullmatch(name) for name in given):
                found.extend(term for term in self.entities if pattern.fullmatch(term))
        return _unique(found)

    def synonyms_in(self, text: str) -> list[str]:
        """Dictionary terms spelling the same thing as a spelling `text` holds ("the db pool is
        saturated" → "connection pool", "连接池")."""
        found: list[str] = []
        for pattern in self.patterns.get(SYNONYM_KIND, ()):
            if pattern.search(text):
                found.extend(term for term in self.entities if pattern.fullmatch(term))
        return _unique(found)

    def extended(self, entries: Iterable[tuple[str, str]]) -> Vocabulary:
        """A copy with extra (kind, value) entries: dictionary terms or patterns."""
        patterns = {kind: list(values) for kind, values in self.patterns.items()}
        entities = list(self.entities)
        for kind, value in entries:
            if kind == DICTIONARY_KIND:
                entities.append(value)
            else:
                patterns.setdefault(kind, []).append(compile_pattern(kind, value))
        return Vocabulary(
            patterns={kind: tuple(values) for kind, values in patterns.items()},
            entities=tuple(_unique(entities)),
        )


@lru_cache(maxsize=4096)
def _term_pattern(term: str) -> re.Pattern[str]:
    """A dictionary term as a pattern; Latin terms match whole words only (not `redis` in
    `redistribute`), Chinese terms anywhere (Chinese has no spaces between words)."""
    escaped = re.escape(term)
    if term.isascii():
        escaped = rf"(?<![A-Za-z0-9_]){escaped}(?![A-Za-z0-9_])"
    return re.compile(escaped, re.IGNORECASE)


def _unique(values: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    result = []
    for value in values:
        key = value.lower()
        if value and key not in seen:
            seen.add(key)
            result.append(value)
    return result


@cache
def default_vocabulary() -> Vocabulary:
    raw = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    patterns = {
        kind: tuple(compile_pattern(kind, p) for p in values)
        for kind, values in raw.items()
        if not kind.startswith("_") and kind != DICTIONARY_KIND
    }
    return Vocabulary(patterns=patterns, entities=tuple(raw.get(DICTIONARY_KIND, ())))


def vocabulary_kinds() -> list[str]:
    raw = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    return [kind for kind in raw if not kind.startswith("_")]


def redactor_of(vocabulary: Vocabulary) -> Redactor:
    """The built-in redaction detectors plus the vocabulary's `redaction` patterns."""
    extra = vocabulary.patterns.get(REDACTION_KIND, ())
    return Redactor(extra) if extra else DEFAULT


def screen_of(vocabulary: Vocabulary, *, by_meaning: bool = False) -> InjectionScreen:
    """The quarantine screen of the vocabulary's injection patterns; `by_meaning` adds the
    screen by meaning (unless switched off), reading the vocabulary's cue words."""
    meaning = meaning_screen() if by_meaning else None
    return InjectionScreen(
        {reason: vocabulary.patterns.get(kind, ()) for kind, reason in INJECTION_KINDS.items()},
        meaning=meaning.with_cues(vocabulary.patterns.get(INJECTION_CUE_KIND, ()))
        if meaning is not None
        else None,
    )
