"""Red lines: card, ID and account numbers, secrets and keys never reach a memory store.

One redaction step for every writer of memory or profile text (extraction, proposals, card
imports, profile patches, promotion edits, reflection) and for every reviewer's view of raw
text. It lives below every layer so each can import it; `Redactor.text` replaces what it finds
by `[REDACTED:<kind>]` and says whether anything else was left, so a writer can refuse a value
that was nothing but sensitive content.

Built-in detectors (they need checksums, so they are code, not vocabulary):
- `bank_card`: 13–19 digits (single spaces or dashes between them) that pass the Luhn check,
  or any such number near a card word (卡号, 银行卡, 信用卡, card, credit, debit);
- `id_card`: PRC resident ID numbers, 18 characters with a valid check character and birth
  date, or 15 digits with a valid birth date (also any 15/18-digit number near 身份证 / ID);
- `secret`: the value after a keyword (password, passwd, pwd, passcode, 密码, 口令, secret,
  token, api key, 密钥) and `is` / `是` / `为` / `:` / `=`; the keyword stays;
- `bearer_token`, `jwt`, `service_key` (sk-…, AKIA…, ghp_…, xox…-, AIza…, glpat-…,
  sk_live_…, our own mk_… keys, PEM private keys), `iban` (mod-97 check), `ssn`;
- `custom`: a tenant's own patterns (vocabulary kind `redaction`), given by the caller or read
  through the source the memories app registers (see `register_tenant_patterns`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from functools import lru_cache
from typing import Any

MARKER = "[REDACTED:{kind}]"
MARKER_PREFIX = "[REDACTED:"
MAX_PATTERN_CHARS = 500


@dataclass(frozen=True)
class _Span:
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
_SECRET_FIELD = re.compile(
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


def _id_numbers(text: str, context: str) -> Iterator[_Span]:
    named = bool(context) and _ID_WORD.search(context) is not None
    for match in _ID_RUN.finditer(text):
        word = _near(_ID_WORD, text, *match.span())
        if named or word is not None or prc_id_valid(match.group(0)):
            yield _Span(*match.span(), "id_card", (word,) if word else ())


def _card_numbers(text: str, context: str) -> Iterator[_Span]:
    named = bool(context) and _CARD_WORD.search(context) is not None
    for match in _DIGIT_RUN.finditer(text):
        digits = re.sub(r"\D", "", match.group(0))
        word = _near(_CARD_WORD, text, *match.span())
        if named or word is not None or luhn_valid(digits):
            yield _Span(*match.span(), "bank_card", (word,) if word else ())
        elif window := _luhn_window(match):
            yield _Span(*window, "bank_card")  # `qty 2 4111 1111 1111 1111`


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


def _secrets(text: str, context: str) -> Iterator[_Span]:
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
        yield _Span(start, end, "secret", (match.span("key"), match.span("sep")))


def _bearer(text: str, context: str) -> Iterator[_Span]:
    if "bearer" not in text.lower():
        return
    for match in _BEARER.finditer(text):
        if not text.startswith(MARKER_PREFIX, match.start("value")):
            yield _Span(*match.span("value"), "bearer_token", (match.span("key"),))


def _plain(pattern: re.Pattern[str], kind: str) -> Callable[[str, str], Iterator[_Span]]:
    def find(text: str, context: str) -> Iterator[_Span]:
        for match in pattern.finditer(text):
            yield _Span(*match.span(), kind)

    return find


def _ibans(text: str, context: str) -> Iterator[_Span]:
    for match in _IBAN.finditer(text):
        candidate = match.group(0)
        # The pattern may run into a following word in capitals: shorten group by group.
        while len(re.sub(r"[ -]", "", candidate)) >= 15:
            if iban_valid(re.sub(r"[ -]", "", candidate)):
                yield _Span(match.start(), match.start() + len(candidate), "iban")
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


def _service_keys(text: str, context: str) -> Iterator[_Span]:
    lowered = text.lower()
    if any(hint in lowered for hint in _KEY_HINTS):
        yield from _plain(_SERVICE_KEY, "service_key")(text, context)


# Where two findings overlap, the one starting first (at the same start, the longer) wins.
_DETECTORS: tuple[Callable[[str, str], Iterator[_Span]], ...] = (
    _service_keys,
    _plain(_JWT, "jwt"),
    _bearer,
    _ibans,
    _id_numbers,
    _card_numbers,
    _plain(_SSN, "ssn"),
    _secrets,
)


# --- the redactor ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Redacted:
    """A text after redaction, the kinds found, and whether nothing else was left in it."""

    text: str
    kinds: frozenset[str] = frozenset()
    only_sensitive: bool = False
    # The raw values replaced, with their kinds: kept in memory only, so a caller can redact
    # the same value where it stands alone (a bare entity of the same proposal).
    found: tuple[tuple[str, str], ...] = ()


@dataclass
class Report:
    """What redacting a structure found: the kinds, and the paths of values that held
    nothing but sensitive content (a writer refuses or drops those)."""

    kinds: set[str] = field(default_factory=set)
    emptied: list[str] = field(default_factory=list)
    found: dict[str, str] = field(default_factory=dict)  # raw value -> kind (in memory only)


class Redactor:
    """The built-in detectors plus a tenant's extra patterns (matched as `custom`)."""

    def __init__(
        self,
        extra: Sequence[re.Pattern[str]] = (),
        known: Sequence[tuple[re.Pattern[str], str]] = (),
    ) -> None:
        self._extra = tuple(extra)
        self._known = tuple(known)
        self._fragments: tuple[tuple[str, str], ...] = ()

    def _fragment_of(self, text: str) -> str | None:
        """The kind of the known value `text` is a piece of (of at least MIN_FRAGMENT_CHARS)."""
        piece = _SEPARATORS.sub("", text.strip()).lower()
        if len(piece) < MIN_FRAGMENT_CHARS:
            return None
        return next((kind for value, kind in self._fragments if piece in value), None)

    def knowing(self, found: dict[str, str]) -> Redactor:
        """This redactor, also redacting the given raw values (value -> kind) wherever they
        stand, alone or in other text: a value found sensitive in one field of a record (`my
        password is hunter2x06` in a summary) is sensitive in every other (an entity
        `hunter2x06`). Digits match with or without their spaces and dashes, and a text that
        is nothing but a piece of such a value (an entity an extractor cut out of a key) is
        redacted whole."""
        known = [*self._known]
        for value, kind in found.items():
            pattern = _known_pattern(value)
            if pattern is not None:
                known.append((pattern, kind))
        if not known:
            return self
        redactor = Redactor(self._extra, known)
        redactor._fragments = (
            *self._fragments,
            *(
                (_SEPARATORS.sub("", v).lower(), k)
                for v, k in found.items()
                if MARKER_PREFIX not in v
            ),
        )
        return redactor

    def text(self, text: str, *, context: str = "") -> Redacted:
        """`text` with every sensitive value replaced by `[REDACTED:<kind>]`.

        `context` names the field the text is the value of: under a card or ID word any
        such number counts, and a field named like a secret (`db_password`) is one whole.
        """
        if not text:
            return Redacted(text)
        if context and text.strip() and _SECRET_FIELD.search(context) and MARKER_PREFIX not in text:
            found = ((text.strip(), "secret"),)
            return Redacted(MARKER.format(kind="secret"), frozenset({"secret"}), True, found)
        if self._fragments and (kind := self._fragment_of(text)):
            # A piece of a value found elsewhere (`xR4nd0mT0k3n` of `glpat-xR4nd0mT0k3n…`).
            return Redacted(MARKER.format(kind=kind), frozenset({kind}), True, ((text, kind),))
        spans = [span for detect in _DETECTORS for span in detect(text, context)]
        spans += [
            _Span(*m.span(), "custom")
            for pattern in self._extra
            for m in pattern.finditer(text)
            if m.end() > m.start()
        ]
        spans += [
            _Span(*m.span(), kind)
            for pattern, kind in self._known
            for m in pattern.finditer(text)
            if m.end() > m.start()
        ]
        if not spans:
            return Redacted(text)
        kept: list[_Span] = []
        for span in sorted(spans, key=lambda s: (s.start, -(s.end - s.start))):
            if kept and span.start < kept[-1].end:
                # Inside (or across) a span already redacted; its keyword (`Bearer` before a
                # JWT) still belongs to the sensitive phrase.
                keywords = (*kept[-1].keywords, *span.keywords)
                kept[-1] = replace(kept[-1], keywords=keywords)
                continue
            kept.append(span)
        out, position = [], 0
        covered = bytearray(len(text))
        for span in kept:
            out += [text[position : span.start], MARKER.format(kind=span.kind)]
            position = span.end
            for start, end in ((span.start, span.end), *span.keywords):
                covered[start:end] = b"\x01" * (end - start)
        out.append(text[position:])
        return Redacted(
            text="".join(out),
            kinds=frozenset(span.kind for span in kept),
            only_sensitive=not any(
                char.isalnum() for char, hidden in zip(text, covered, strict=True) if not hidden
            ),
            found=tuple((text[span.start : span.end], span.kind) for span in kept),
        )

    def value(self, value: Any, *, path: str, report: Report, context: str = "") -> Any:
        """A JSON-like value with every string in it (dict keys too) redacted; a dict's key
        is the context of its value, and numbers count under a key too (`{"pin": 1234}`)."""
        if isinstance(value, str):
            redacted = self.text(value, context=context)
            report.kinds.update(redacted.kinds)
            report.found.update(redacted.found)
            if redacted.kinds and redacted.only_sensitive:
                report.emptied.append(path)
            return redacted.text
        if isinstance(value, int | float) and not isinstance(value, bool) and context:
            redacted = self.text(str(value), context=context)
            if redacted.kinds:
                report.kinds.update(redacted.kinds)
                report.found.update(redacted.found)
                report.emptied.append(path)
                return redacted.text
            return value
        if isinstance(value, list | tuple):
            return type(value)(
                self.value(v, path=f"{path}.{i}", report=report, context=context)
                for i, v in enumerate(value)
            )
        if isinstance(value, dict):
            return {
                self.value(k, path=f"{path}.{k}", report=report): self.value(
                    v, path=f"{path}.{k}", report=report, context=_key_context(str(k))
                )
                for k, v in value.items()
            }
        return value

    def strings(
        self, values: Iterable[str], *, path: str, report: Report, context: str = ""
    ) -> list[str]:
        """A list of strings redacted, without those that held nothing but sensitive content
        (their paths are in `report.emptied`)."""
        kept = []
        for index, value in enumerate(values):
            before = len(report.emptied)
            redacted = self.value(value, path=f"{path}.{index}", report=report, context=context)
            if len(report.emptied) == before:
                kept.append(redacted)
        return kept


# The context of an entity or a tag: they name things, and a name shaped like a card or an ID
# number is one (`5500 0600 0000 0001` as an entity, though it fails the Luhn check).
NAMES_CONTEXT = "card / ID number"
# A value shorter than this is not looked for elsewhere: `pin: 42` would redact every 42.
MIN_KNOWN_CHARS = 4
MIN_FRAGMENT_CHARS = 6
_SEPARATORS = re.compile(r"[ -]")


def _key_context(key: str) -> str:
    """The context a JSON key gives its value: itself, or for a list of names, that."""
    return NAMES_CONTEXT if key in ("entities", "tags") else key


def _known_pattern(value: str) -> re.Pattern[str] | None:
    """A pattern finding `value` as a whole word; a number of letters and digits with spaces
    or dashes (a card, an IBAN) is found however it is spaced."""
    value = value.strip()
    if MARKER_PREFIX in value:
        return None
    compact = _SEPARATORS.sub("", value)
    if len(compact) < MIN_KNOWN_CHARS:
        return None
    if compact.isalnum() and any(char.isdigit() for char in compact):
        body = "[ -]?".join(re.escape(char) for char in compact)
    else:
        body = re.escape(value)
    return re.compile(rf"(?<![0-9A-Za-z]){body}(?![0-9A-Za-z])", re.IGNORECASE)


def redact_record(
    redactor: Redactor, redact: Callable[[Redactor, Report], Any]
) -> tuple[Any, Report]:
    """Redact a record of several fields (a proposal, a card, a stored item) so that a value
    found in one field is redacted in all of them: `redact(redactor, report)` redacts every
    field; it runs again, knowing the values found, only when something was found."""
    report = Report()
    result = redact(redactor, report)
    if not report.found:
        return result, report
    again = Report()
    result = redact(redactor.knowing(dict(report.found)), again)
    return result, again


def redact_fields(
    redactor: Redactor,
    document: dict[str, Any],
    names: Sequence[str],
    *,
    contexts: dict[str, str] | None = None,
) -> tuple[dict[str, Any], Report]:
    """A copy of `document` with the named fields redacted as one record (see
    `redact_record`); `contexts` names a field's context (`fact_value`: its key)."""
    contexts = contexts or {}

    def redact(redactor: Redactor, report: Report) -> dict[str, Any]:
        out = dict(document)
        for name in names:
            if out.get(name) not in (None, ""):
                out[name] = redactor.value(
                    document[name], path=name, report=report, context=contexts.get(name, "")
                )
        return out

    redacted, report = redact_record(redactor, redact)
    return redacted, report


DEFAULT = Redactor()


def redact_text(text: str) -> str:
    """`text` redacted by the built-in detectors alone (for views of raw text)."""
    return DEFAULT.text(text).text


def redact_json(value: Any, redactor: Redactor = DEFAULT, *, context: str = "") -> Any:
    """A JSON-like value redacted for display, as one record (see `redact_record`)."""
    redacted, _ = redact_record(
        redactor,
        lambda redactor, report: redactor.value(value, path="", report=report, context=context),
    )
    return redacted


# --- tenants' own patterns ---------------------------------------------------------------------
TenantPatterns = Callable[[Any], Sequence[re.Pattern[str]]]
_tenant_patterns: list[TenantPatterns] = []


def register_tenant_patterns(source: TenantPatterns) -> None:
    """Let an app above this one supply a tenant's extra patterns.

    The patterns are vocabulary entries of the memories app, but Layer 1 (profiles) writes
    text too and must not import memories. So the memories app registers a small reader here
    when it starts (`MemoriesConfig.ready`), and every writer, whatever its layer, asks
    `redactor_for(tenant)`; without the memories app the built-in detectors still apply.
    """
    if source not in _tenant_patterns:
        _tenant_patterns.append(source)


def redactor_for(tenant: Any) -> Redactor:
    """The built-in detectors plus the tenant's own patterns."""
    extra = [pattern for source in _tenant_patterns for pattern in source(tenant)]
    return Redactor(extra) if extra else DEFAULT


# --- checking a tenant's pattern ---------------------------------------------------------------
_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
_PROBE_LENGTH = 5000
_PROBE_BUDGET_SECONDS = 0.1
_PROBE_TIMEOUT_SECONDS = 3.0
_PROBE = r"""
import json, re, sys, time
pattern = re.compile(json.load(sys.stdin), re.IGNORECASE)
n = int(sys.argv[1])
probes = ["a" * n, "a" * n + "!", "1" * n + "x", " " * n + "x", "1 " * (n // 2) + "x",
          "测" * n, "aA1 -_.:=@/" * (n // 11), "ab" * (n // 2) + "!", "\n" * n + "x"]
worst = 0.0
for probe in probes:
    started = time.perf_counter()
    for _ in pattern.finditer(probe):
        pass
    worst = max(worst, time.perf_counter() - started)
print(worst)
"""


def _nested_repeat(items: Any, inside_repeat: bool = False) -> bool:
    """Whether a parsed pattern repeats something that itself repeats (`(a+)+`)."""
    from re import _parser  # type: ignore[attr-defined]

    for op, argument in items:
        name = str(op)
        if name in _REPEATS:
            low, high, sub = argument
            repeats = high == _parser.MAXREPEAT or high > 1
            if repeats and inside_repeat:
                return True
            if _nested_repeat(sub, inside_repeat or repeats):
                return True
        elif name == "SUBPATTERN":
            if _nested_repeat(argument[-1], inside_repeat):
                return True
        elif name == "BRANCH":
            if any(_nested_repeat(branch, inside_repeat) for branch in argument[1]):
                return True
        elif name in ("ASSERT", "ASSERT_NOT"):
            if _nested_repeat(argument[1], inside_repeat):
                return True
        elif name in ("GROUPREF", "GROUPREF_EXISTS"):
            return True  # backreferences make matching exponential in general
    return False


def pattern_problem(pattern: str) -> str | None:
    """Why a tenant's redaction pattern is refused, or None when it is safe to run.

    Refused: not a regular expression, longer than 500 characters, matching the empty text,
    nested repetition or backreferences, or slow on a set of adversarial 5,000-character
    probes (run in a child process with a hard timeout, so a catastrophic pattern cannot hang
    the caller).
    """
    from re import _parser  # type: ignore[attr-defined]

    if len(pattern) > MAX_PATTERN_CHARS:
        return f"Longer than {MAX_PATTERN_CHARS} characters."
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
        parsed = _parser.parse(pattern, re.IGNORECASE)
    except (re.error, OverflowError, RecursionError) as exc:
        return f"Not a valid pattern: {exc}"
    if compiled.fullmatch("") is not None:
        return "Matches the empty text."
    if _nested_repeat(list(parsed)):
        return "Repeats a repetition or uses a backreference, which can take exponential time."
    return _probe_problem(pattern)


@lru_cache(maxsize=256)
def _probe_problem(pattern: str) -> str | None:
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", _PROBE, str(_PROBE_LENGTH)],
            input=json.dumps(pattern),
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "Too slow on long input (catastrophic backtracking)."
    if done.returncode != 0:
        return "Could not be tried on sample input."
    if float(done.stdout.strip() or "inf") > _PROBE_BUDGET_SECONDS:
        return "Too slow on long input (it backtracks heavily)."
    return None
