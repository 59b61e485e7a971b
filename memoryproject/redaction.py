"""Red lines: card, ID and account numbers, secrets and keys never reach a memory store.

One redaction step for every writer of memory or profile text (extraction, proposals, card
imports, profile patches, promotion edits, reflection) and for every reviewer's view of raw
text. It lives below every layer so each can import it; `Redactor.text` replaces what it finds
by `[REDACTED:<kind>]` and says whether anything else was left, so a writer can refuse a value
that was nothing but sensitive content.

The built-in detectors are in `memoryproject.redaction_detectors`; a tenant's own patterns
(vocabulary kind `redaction`, matched as `custom`) are given by the caller or read through the
source the memories app registers (see `register_tenant_patterns`), and checked before they are
stored by `memoryproject.redaction_patterns`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memoryproject.redaction_detectors import (
    DETECTORS,
    MARKER,
    MARKER_PREFIX,
    SECRET_FIELD,
    Span,
)


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
        if context and text.strip() and SECRET_FIELD.search(context) and MARKER_PREFIX not in text:
            found = ((text.strip(), "secret"),)
            return Redacted(MARKER.format(kind="secret"), frozenset({"secret"}), True, found)
        if self._fragments and (kind := self._fragment_of(text)):
            # A piece of a value found elsewhere (`xR4nd0mT0k3n` of `glpat-xR4nd0mT0k3n…`).
            return Redacted(MARKER.format(kind=kind), frozenset({kind}), True, ((text, kind),))
        spans = [span for detect in DETECTORS for span in detect(text, context)]
        spans += [
            Span(*m.span(), "custom")
            for pattern in self._extra
            for m in pattern.finditer(text)
            if m.end() > m.start()
        ]
        spans += [
            Span(*m.span(), kind)
            for pattern, kind in self._known
            for m in pattern.finditer(text)
            if m.end() > m.start()
        ]
        if not spans:
            return Redacted(text)
        kept: list[Span] = []
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
