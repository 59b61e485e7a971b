"""Reading a tool's output: the tool's name, the figures it reports ("db pool 48/50") and the
lines around its signals (errors, statuses, timeouts), for the rule extractor."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memories.vocabulary import Vocabulary

# A tool output this short is read whole; a longer one only around its signal lines, so
# entities from unrelated log lines do not end up on the observation.
WHOLE_OUTPUT_LINES = 20
SIGNAL_CONTEXT_LINES = 2
MAX_FIGURES = 6
MAX_TOOL_NAME_CHARS = 64
# A tool's name from the event's metadata, as history and compression read it.
TOOL_NAME_KEYS = ("tool_name", "tool", "name")
_TOOL_NAME = re.compile(r"[\w.:/@-]+")

# The value of a figure: a number, a ratio ("48/50") and a unit; not part of a date, a time or a
# version ("2025-01-01", "10:02:30", "1.2.3").
_NUMBER = r"\d+(?:[.,]\d+)?"
_UNIT = (
    r"(?:%|ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|[kmgt]i?b|b|k|m|/s|"
    r"rps|qps|req/s|ops/s|毫秒|秒|分钟|小时|个|次|条)"
)
_VALUE = (
    rf"(?<![\w.:/,-])[~≈]?{_NUMBER}(?:\s?/\s?{_NUMBER})?(?:\s?{_UNIT})?"
    r"(?![.:/-]?\d)(?![A-Za-z])"
)
_QUALIFIER = r"(?:\s(?:in use|used|busy|idle|free|queued|waiting|pending|active))?"
# After a metric's name: separators, at most one linking word, then the value.
_VALUE_AFTER = re.compile(
    r"""(?:["'\s]*[:=：]\s*["']?|\s*)"""
    r"(?:(?:is|was|at|of|now|currently|为|是|达到|约|现在|当前)\s*[:=：]?\s*)?"
    rf"(?P<value>{_VALUE})(?P<qualifier>{_QUALIFIER})",
    re.IGNORECASE | re.ASCII,
)
# Before it ("48/50 connections", "93% CPU"), with nothing but spaces between.
_VALUE_BEFORE = re.compile(rf"(?P<value>{_VALUE})\s*$", re.IGNORECASE | re.ASCII)
_BEFORE_WINDOW = 24


@dataclass(frozen=True)
class Figure:
    """One figure a tool result reports: a metric's name and its value, as written."""

    name: str
    value: str
    text: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "value": self.value}


def read_figures(text: str, vocabulary: Vocabulary, *, limit: int = MAX_FIGURES) -> list[Figure]:
    """The figures of `text`, in order: a `figure` name with a value right after it (or right
    before it), the first value of each name only, at most `limit`."""
    spans = sorted(
        (match.start(), match.end())
        for pattern in vocabulary.patterns.get("figure", ())
        for match in pattern.finditer(text)
        if match.end() > match.start()
    )
    # A name inside a longer one ("pool" in "db pool") is the longer one's.
    names = [
        (start, end)
        for start, end in spans
        if not any(s <= start and end <= e and (e - s) > (end - start) for s, e in spans)
    ]
    found: list[Figure] = []
    seen: set[str] = set()
    taken_until = 0
    for start, end in dict.fromkeys(names):
        if start < taken_until:
            continue  # part of the figure read just before
        name = " ".join(text[start:end].split())
        after = _VALUE_AFTER.match(text, end)
        if after:
            value = " ".join(after.group("value").split())
            qualifier = " ".join(after.group("qualifier").split())
            figure = Figure(name, value, " ".join(filter(None, (name, value, qualifier))))
            stop = after.end()
        else:
            window = text[max(taken_until, start - _BEFORE_WINDOW) : start]
            before = _VALUE_BEFORE.search(window)
            if before is None:
                continue
            value = " ".join(before.group("value").split())
            figure = Figure(name, value, f"{value} {name}")
            stop = end
        taken_until = stop
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        found.append(figure)
        if len(found) >= limit:
            break
    return found


def tool_name(event: Mapping[str, Any]) -> str:
    """The tool's name from the event's metadata (`tool_name`, `tool` or `name`): one short
    word of letters, digits and `_ . : / @ -` ("psql_stats", "k8s.get_pods"), else ''."""
    metadata = event.get("metadata")
    if not isinstance(metadata, Mapping):
        return ""
    for key in TOOL_NAME_KEYS:
        value = metadata.get(key)
        if not isinstance(value, str):
            continue
        value = value.strip()
        if 0 < len(value) <= MAX_TOOL_NAME_CHARS and _TOOL_NAME.fullmatch(value):
            return value
    return ""


def signal_region(output: str, vocabulary: Vocabulary) -> tuple[str, str]:
    """The lines of a tool output around its signals, or all of a short output; and, apart,
    the lines that hold the signals themselves.

    Errors, HTTP statuses and timeouts bring the lines around them; a line holding a figure
    is kept alone. A long output without either (a pasted log) gives nothing.
    """
    lines = output.splitlines()
    if len(lines) <= WHOLE_OUTPUT_LINES:
        return output, output
    keep: set[int] = set()
    core: set[int] = set()
    for number, line in enumerate(lines):
        if any(vocabulary.matches(kind, line) for kind in ("error_name", "status_code", "timeout")):
            first = max(0, number - SIGNAL_CONTEXT_LINES)
            keep.update(range(first, number + SIGNAL_CONTEXT_LINES + 1))
            core.add(number)
        elif len(keep) < WHOLE_OUTPUT_LINES and read_figures(line, vocabulary, limit=1):
            keep.add(number)
            core.add(number)

    def joined(numbers: set[int]) -> str:
        return "\n".join(lines[number] for number in sorted(numbers) if number < len(lines))

    return joined(keep), joined(core)
