"""Sensitive data is redacted before anything is written: identity-card and bank-card numbers
and the like never reach a memory store."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from memories.write.candidates import Candidate

_CN_ID = re.compile(r"(?<![0-9A-Za-z])\d{17}[\dXx](?![0-9A-Za-z])")
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_SSN = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)")
_SECRET = re.compile(
    r"(?i)\b(password|passwd|pwd|secret|api[_-]?key|token|密码|口令)\b\s*[:=：]\s*\S+"
)
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _valid_cn_id(number: str) -> bool:
    total = sum(int(d) * w for d, w in zip(number[:17], _ID_WEIGHTS, strict=True))
    return "10X98765432"[total % 11] == number[17].upper()


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card(match: re.Match[str]) -> bool:
    digits = re.sub(r"\D", "", match.group(0))
    return 13 <= len(digits) <= 19 and _luhn(digits)


_RULES: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], bool]], ...] = (
    ("id_card", _CN_ID, lambda m: _valid_cn_id(m.group(0))),
    ("bank_card", _CARD, _card),
    ("ssn", _SSN, lambda m: True),
    ("secret", _SECRET, lambda m: True),
)


def redact_text(text: str) -> tuple[str, set[str]]:
    """The text with sensitive values replaced by `[REDACTED:<kind>]`, and the kinds found."""
    found: set[str] = set()
    for kind, pattern, valid in _RULES:

        def substitute(match: re.Match[str], kind: str = kind, valid: Any = valid) -> str:
            if not valid(match):
                return match.group(0)
            found.add(kind)
            if kind == "secret":
                return f"{match.group(1)}: [REDACTED:{kind}]"
            return f"[REDACTED:{kind}]"

        text = pattern.sub(substitute, text)
    return text, found


def _redact_value(value: Any, found: set[str]) -> Any:
    if isinstance(value, str):
        text, kinds = redact_text(value)
        found.update(kinds)
        return text
    if isinstance(value, list | tuple):
        return type(value)(_redact_value(v, found) for v in value)
    if isinstance(value, dict):
        return {k: _redact_value(v, found) for k, v in value.items()}
    return value


def redact_candidate(candidate: Candidate) -> tuple[Candidate, set[str]]:
    """The candidate with every text field redacted, and the kinds of data removed."""
    found: set[str] = set()
    redacted = replace(
        candidate,
        summary=_redact_value(candidate.summary, found),
        detail=_redact_value(candidate.detail, found),
        entities=_redact_value(candidate.entities, found),
        tags=_redact_value(candidate.tags, found),
        fact_value=_redact_value(candidate.fact_value, found),
        canonical_fact_key=_redact_value(candidate.canonical_fact_key, found),
    )
    return redacted, found
