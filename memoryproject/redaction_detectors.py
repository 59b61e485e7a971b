"""The built-in detectors of the redaction step (they need checksums, so they are code, not
vocabulary), each finding spans of one kind in a text:
- `bank_card`: 13–19 digits (single spaces or dashes between them) that pass the Luhn check,
  or any such number near a card word (卡号, 银行卡, 信用卡, card, credit, debit);
- `id_card`: PRC resident ID numbers, 18 characters with a valid check character and birth
  date, or 15 digits with a valid birth date (also any 15/18-digit number near 身份证 / ID);
- `secret`: the value after a keyword (password, passwd, pwd, passcode, 密码, 口令, secret,
  token, api key, 密钥) and `is` / `是` / `为` / `:` / `=`; the keyword stays;
- `bearer_token`, `jwt`, `service_key` (sk-…, AKIA…, ghp_…, xox…-, AIza…, glpat-…,
  sk_live_…, our own mk_… keys, PEM private keys), `iban` (mod-97 check), `ssn`;
and the tenant's own patterns, which `memoryproject.redaction.Redactor` adds (as `custom`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date

MARKER = "[REDACTED:{kind}]"
MARKER_PREFIX = "[REDACTED:"  # text redacted before is not redacted again


@dataclass(frozen=True)
class Span:
    """One finding: where it stands in the text, and its kind."""

    start: int
    end: int
    kind: str
    # Further parts of the text that belong to the sensitive phrase (the keyword before a
    # secret or a card number): kept in the text, but not counted as other content.
    keywords: tuple[tuple[int, int], ...] = ()


# --- checks ------------------------------------------------------------------------------------
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _valid_birth(year: int, month: int, day: int) -> bool:
    try:
        born = date(year, month, day)
    except ValueError:
        return False
    return date(1880, 1, 1) <= born < date(2100, 1, 1)


def prc_id_valid(number: str) -> bool:
    """A resident ID number: 18 characters with its check character, or the older 15 digits."""
    if len(number) == 18:
        total = sum(int(d) * w for d, w in zip(number[:17], _ID_WEIGHTS, strict=True))
        if "10X98765432"[total % 11] != number[17].upper():
            return False
        return _valid_birth(int(number[6:10]), int(number[10:12]), int(number[12:14]))
    if len(number) == 15 and number.isdigit() and number[0] in "12345678":
        return _valid_birth(1900 + int(number[6:8]), int(number[8:10]), int(number[10:12]))
    return False


def iban_valid(compact: str) -> bool:
    """ISO 13616 mod-97 check of an IBAN without spaces."""
    if not 15 <= len(compact) <= 34 or not compact[:2].isalpha() or not compact[2:4].isdigit():
        return False
    moved = compact[4:] + compact[:4]
    digits = "".join(str(int(char, 36)) for char in moved)
    return int(digits) % 97 == 1


# --- detectors ---------------------------------------------------------------------------------
# Each pattern starts with what it consumes and looks behind afterwards: the regular
# expression engine then skips ahead to candidate characters instead of trying every position.
_DIGIT_RUN = re.compile(r"\d(?<!\d\d)(?<!\d[ -]\d)(?:[ -]?\d){12,18}(?!\d)")
_CARD_WORD = re.compile(
    r"卡号|银行卡|信用卡|借记卡|储蓄卡|(?<![A-Za-z])(?:card|credit|debit)s?(?![A-Za-z])", re.I
)
_ID_RUN = re.compile(r"\d(?<![0-9A-Za-z]\d)(?:\d{16}[\dXx]|\d{14})(?![0-9A-Za-z])")
_ID_WORD = re.compile(
    r"身份证|证件号|(?<![A-Za-z])(?:identity|id[ _-]?(?:card|number|no))(?![A-Za-z])", re.I
)
# A field named like a secret holds one, whatever its value looks like.
SECRET_FIELD = re.compile(
    r"(?:^|[^A-Za-z0-9])(?:password|passwd|pwd|passcode|secret|token|api[ _-]?key"
    r"|access[ _-]?key|private[ _-]?key|pin|cvv|cvc)$|密码|口令|密钥|秘钥|令牌",
    re.I,
)
# How far from a number a card or ID word may stand (characters before / after it).
_WORD_BEFORE, _WORD_AFTER = 24, 12

_SECRET_WORD = (
    r"(?<![A-Za-z0-9_])(?:passwords?|passwd|pwd|passcodes?|secrets?|tokens?|api[ _-]?keys?"
    r"|access[ _-]?keys?|private[ _-]?keys?)(?![A-Za-z])|密码|口令|密钥|秘钥|令牌"
)
# A quoted value, or a run up to whitespace, CJK text or punctuation, or a quote.
_VALUE = (
    r"(?:\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|“[^”\n]{1,200}”"
    r"|[^\s\u3000-\u303f\u3400-\u9fff\uff00-\uffef\"']+)"
)
_SECRET = re.compile(
    rf"(?P<key>{_SECRET_WORD})[\"']?"
    r"(?:\s+(?:for|of|to|on)\s+[\w.@/-]{1,40})?"  # the password for prod-db is …
    r"(?P<sep>\s*(?:[:=：]|是|为|\bis\b|\bwas\b)\s*|(?<=[码令钥牌])\s+)"  # 密码 X too
    rf"(?P<value>{_VALUE})",
    re.I,
)
# After "password is" these say something about it, they are not it.
_NOT_SECRETS = frozenset(
    re.findall(
        r"\w+",
        "wrong incorrect invalid required expired correct empty missing set unset not too the a "
        "an being needed changed reset ok fine blank null none weak strong same different "
        "ignored rejected accepted stored hashed encrypted rotated revoked valid here there in at",
    )
)
_TRAILING = ".,;:!?)]}>"

_BEARER = re.compile(r"(?P<key>\bbearer)\s+(?P<value>[A-Za-z0-9\-._~+/]{8,}=*)", re.I)
_JWT = re.compile(
    r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"
)
_SERVICE_KEY = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-(?:ant-|proj-|live-)?[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic and look-alikes
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|mk_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}"  # this service's own API keys
    r")(?![A-Za-z0-9_-])"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"
)
_IBAN = re.compile(r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]\d{2}(?:[ -]?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_SSN = re.compile(r"\d(?<![\d-]\d)\d{2}-\d{2}-\d{4}(?![\d-])")


def _near(word: re.Pattern[str], text: str, start: int, end: int) -> tuple[int, int] | None:
    """The span of the nearest `word` shortly before, or else shortly after, [start, end)."""
    before = list(word.finditer(text, max(0, start - _WORD_BEFORE), start))
    if before:
        return before[-1].span()
    after = word.search(text, end, min(len(text), end + _WORD_AFTER))
    return after.span() if after else None


def _id_numbers(text: str, context: str) -> Iterator[Span]:
    named = bool(context) and _ID_WORD.search(context) is not None
    for match in _ID_RUN.finditer(text):
        word = _near(_ID_WORD, text, *match.span())
        if named or word is not None or prc_id_valid(match.group(0)):
            yield Span(*match.span(), "id_card", (word,) if word else ())


def _card_numbers(text: str, context: str) -> Iterator[Span]:
    named = bool(context) and _CARD_WORD.search(context) is not None
    for match in _DIGIT_RUN.finditer(text):
        digits = re.sub(r"\D", "", match.group(0))
        word = _near(_CARD_WORD, text, *match.span())
        if named or word is not None or luhn_valid(digits):
            yield Span(*match.span(), "bank_card", (word,) if word else ())
        elif window := _luhn_window(match):
            yield Span(*window, "bank_card")  # `qty 2 4111 1111 1111 1111`


def _luhn_window(match: re.Match[str]) -> tuple[int, int] | None:
    """The first run of whole digit groups inside a grouped number that passes Luhn."""
    groups = [
        (m.start() + match.start(), m.end() + match.start())
        for m in re.finditer(r"\d+", match.group(0))
    ]
    for first in range(len(groups)):
        for last in range(len(groups) - 1, first - 1, -1):
            if (first, last) == (0, len(groups) - 1):
                continue  # the whole number, already tried
            start, end = groups[first][0], groups[last][1]
            digits = re.sub(r"\D", "", match.string[start:end])
            if 13 <= len(digits) <= 19 and luhn_valid(digits):
                return start, end
    return None


_SECRET_HINTS = ("pass", "pwd", "secret", "token", "key", "密码", "口令", "密钥", "秘钥", "令牌")


def _secrets(text: str, context: str) -> Iterator[Span]:
    lowered = text.lower()
    if not any(hint in lowered for hint in _SECRET_HINTS):
        return
    for match in _SECRET.finditer(text):
        value = match.group("value")
        start, end = match.span("value")
        if value[0] in "\"'“":
            start, end = start + 1, end - 1
        else:
            stripped = value.rstrip(_TRAILING) or value
            end = start + len(stripped)
            value = stripped
            separator = match.group("sep").strip().lower()
            if separator in {"is", "was", "是", "为"} and value.lower() in _NOT_SECRETS:
                continue
        if text.startswith(MARKER_PREFIX, start):
            continue
        yield Span(start, end, "secret", (match.span("key"), match.span("sep")))


def _bearer(text: str, context: str) -> Iterator[Span]:
    if "bearer" not in text.lower():
        return
    for match in _BEARER.finditer(text):
        if not text.startswith(MARKER_PREFIX, match.start("value")):
            yield Span(*match.span("value"), "bearer_token", (match.span("key"),))


def _plain(pattern: re.Pattern[str], kind: str) -> Callable[[str, str], Iterator[Span]]:
    def find(text: str, context: str) -> Iterator[Span]:
        for match in pattern.finditer(text):
            yield Span(*match.span(), kind)

    return find


def _ibans(text: str, context: str) -> Iterator[Span]:
    for match in _IBAN.finditer(text):
        candidate = match.group(0)
        # The pattern may run into a following word in capitals: shorten group by group.
        while len(re.sub(r"[ -]", "", candidate)) >= 15:
            if iban_valid(re.sub(r"[ -]", "", candidate)):
                yield Span(match.start(), match.start() + len(candidate), "iban")
                break
            cut = max(candidate.rfind(" "), candidate.rfind("-"))
            if cut <= 4:
                break
            candidate = candidate[:cut]


_KEY_HINTS = (
    *("sk-", "sk_", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox"),
    *("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa", "aiza", "glpat-"),
    *("mk_", "-----begin"),
)


def _service_keys(text: str, context: str) -> Iterator[Span]:
    lowered = text.lower()
    if any(hint in lowered for hint in _KEY_HINTS):
        yield from _plain(_SERVICE_KEY, "service_key")(text, context)


# Where two findings overlap, the one starting first (at the same start, the longer) wins.
DETECTORS: tuple[Callable[[str, str], Iterator[Span]], ...] = (
    _service_keys,
    _plain(_JWT, "jwt"),
    _bearer,
    _ibans,
    _id_numbers,
    _card_numbers,
    _plain(_SSN, "ssn"),
    _secrets,
)
