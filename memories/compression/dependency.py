"""How much the work still depends on each tool result: strong, weak or digested.

Rules, no model. A reply *consumes* a tool result when it reuses distinctive tokens that first
came from that result (identifiers, numbers, paths, error names) or quotes one of its lines.
A token the conversation itself (user, assistant or system messages) had already used is no
evidence, and neither is one an earlier reply already reused: the reply carries it then.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memories.stm.items import StmItem


class Dependency:
    STRONG = "strong"  # a reply directly consumes it; without it the reply does not hold
    WEAK = "weak"  # background: the replies after it mainly move the task on
    DIGESTED = "digested"  # its key information became a short-term item
    ALL = (STRONG, WEAK, DIGESTED)


# Identifier-like runs: letters and digits joined by . : / - _ (paths, IPs, hosts, versions).
_TOKEN = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.:/\-]*[A-Za-z0-9_])?")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_DIGIT = re.compile(r"\d")
_SPACES = re.compile(r"\s+")
# Chinese has no spaces to split identifiers off: runs of Han characters are compared as
# overlapping four-character shingles (three characters are often one common word).
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]{4,}")
HAN_SHINGLE = 4
MAX_HAN_SHINGLES = 4000  # per text: a long Chinese log is judged by its first part
# Upper-case words every log and query is full of; longer upper-case words (ECONNREFUSED,
# ETIMEDOUT) are specific enough to count.
_COMMON_UPPER = frozenset(
    {
        "ERROR",
        "ERRORS",
        "WARN",
        "WARNING",
        "INFO",
        "DEBUG",
        "TRACE",
        "FATAL",
        "NOTICE",
        "FAILED",
        "FAILURE",
        "SUCCESS",
        "STATUS",
        "SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "CREATE",
        "RETURN",
        "PASSED",
        "SKIPPED",
    }
)
MIN_TOKEN_CHARS = 3
SPECIFIC_TOKEN_CHARS = 6  # a token this long is evidence on its own
STRONG_EVIDENCE = 2
MIN_QUOTE_CHARS = 24
MAX_QUOTE_LINES = 300
SHOWN_TOKENS = 3


@dataclass(frozen=True)
class ToolDependency:
    """One tool result's dependency, with the reasons and the evidence behind it."""

    event_id: str
    seq: int
    dependency: str
    reasons: tuple[str, ...]
    current: bool = False  # the current step (the near field) depends on it
    consumers: tuple[str, ...] = ()  # ids of replies that consume it
    digested_by: tuple[str, ...] = ()  # ids of short-term items holding its conclusion
    concluded: str = ""  # the summary of the item that digested it


@dataclass
class _Use:
    """What one reply took from one tool result."""

    reply: Mapping[str, Any]
    tokens: list[str] = field(default_factory=list)
    quotes: list[str] = field(default_factory=list)

    @property
    def weight(self) -> int:
        specific = sum(2 if len(t) >= SPECIFIC_TOKEN_CHARS else 1 for t in self.tokens)
        return specific + 2 * len(self.quotes)

    @property
    def strong(self) -> bool:
        return self.weight >= STRONG_EVIDENCE

    def evidence(self) -> str:
        parts = []
        if self.tokens:
            shown = ", ".join(f"'{t}'" for t in self.tokens[:SHOWN_TOKENS])
            more = len(self.tokens) - SHOWN_TOKENS
            parts.append(f"reuses {shown}" + (f" and {more} more" if more > 0 else ""))
        if self.quotes:
            parts.append(f"quotes '{_clip(self.quotes[0], 60)}'")
        return " and ".join(parts)


def distinctive_tokens(text: str) -> list[str]:
    """Identifier-like tokens of `text`, lower-cased, in order, without repeats.

    Plain words (`error`, `Timeout`, `read-only`) are not distinctive; camelCase names,
    tokens with digits (`503`, `p99`, `10.0.3.7`), paths, dotted or underscored names, long
    upper-case codes and four-character shingles of Chinese text are.
    """
    found: dict[str, None] = {}
    # Logs repeat the same tokens on every line: judge each distinct token once.
    for token in dict.fromkeys(_TOKEN.findall(text)):
        if len(token) >= MIN_TOKEN_CHARS and _is_distinctive(token):
            found.setdefault(token.lower(), None)
    shingles = 0
    for run in _HAN_RUN.findall(text):
        for start in range(len(run) - HAN_SHINGLE + 1):
            found.setdefault(run[start : start + HAN_SHINGLE], None)
            shingles += 1
        if shingles >= MAX_HAN_SHINGLES:
            break
    return list(found)


def _is_distinctive(token: str) -> bool:
    if token.isalpha():
        if token.isupper():
            return len(token) >= SPECIFIC_TOKEN_CHARS and token not in _COMMON_UPPER
        return _CAMEL.search(token) is not None
    if _DIGIT.search(token):
        return True
    # Joined words: `app.py`, `os_path`, `/var/log`; a hyphenated English word is not.
    return len(token) > MIN_TOKEN_CHARS and not token.replace("-", "").isalpha()


def classify_tool_results(
    *,
    events: Sequence[Mapping[str, Any]],
    items: Sequence[StmItem],
    current_ids: Collection[str],
) -> dict[str, ToolDependency]:
    """Each tool result's dependency, keyed by its event id.

    `events` are the conversation in order; `items` the session's short-term items (their
    `source` cites message and tool-call ids); `current_ids` the replies of the near field.
    Rules, first match wins:
    1. no reply after it yet: strong (the next model turn works on it);
    2. a reply of the near field consumes it: strong, and the current step depends on it;
    3. a short-term item cites it, or cites a reply that consumed it: digested;
    4. an earlier reply consumes it: strong;
    5. otherwise: weak.
    """
    uses = _uses(events)
    citing = _citations(items)
    last_reply = max((i for i, e in enumerate(events) if e.get("role") == "assistant"), default=-1)
    result: dict[str, ToolDependency] = {}
    for index, event in enumerate(events):
        if event.get("role") != "tool":
            continue
        event_id = str(event.get("id", ""))
        found = uses.get(index, [])
        strong = [u for u in found if u.strong]
        digesters = _digesters(event, strong, citing)
        dependency, reasons, current = _judge(
            pending=index > last_reply,
            found=found,
            strong=strong,
            by_current=[u for u in strong if str(u.reply.get("id", "")) in current_ids],
            digesters=digesters,
        )
        result[event_id] = ToolDependency(
            event_id=event_id,
            seq=int(event.get("seq", 0)),
            dependency=dependency,
            reasons=tuple(reasons),
            current=current,
            consumers=tuple(str(u.reply.get("id", "")) for u in strong),
            digested_by=tuple(item.id for item, _ in digesters),
            concluded=digesters[0][0].summary if digesters else "",
        )
    return result


def _judge(
    *,
    pending: bool,
    found: list[_Use],
    strong: list[_Use],
    by_current: list[_Use],
    digesters: list[tuple[StmItem, str]],
) -> tuple[str, list[str], bool]:
    """(dependency, reasons, whether the current step depends on it): the rules in order."""
    if pending:
        return (
            Dependency.STRONG,
            ["no reply has used it yet; the next model turn works on it"],
            True,
        )
    if by_current:
        return (
            Dependency.STRONG,
            [f"the current reply #{_seq(u.reply)} {u.evidence()}" for u in by_current],
            True,
        )
    if digesters:
        return Dependency.DIGESTED, [why for _, why in digesters], False
    if strong:
        return Dependency.STRONG, [f"reply #{_seq(u.reply)} {u.evidence()}" for u in strong], False
    if found:
        reasons = [
            f"reply #{_seq(u.reply)} only {u.evidence()}; it mainly moves the task on"
            for u in found
        ]
        return Dependency.WEAK, reasons, False
    return Dependency.WEAK, ["no later reply reuses its distinctive content"], False


def _uses(events: Sequence[Mapping[str, Any]]) -> dict[int, list[_Use]]:
    """For each tool result (by index), what each later reply took from it."""
    said: set[str] = set()  # tokens the conversation has used itself
    origin: dict[str, int] = {}  # token -> the latest tool result that carried it
    answered: list[int] = []  # tool results since the previous reply
    uses: dict[int, dict[int, _Use]] = {}
    for index, event in enumerate(events):
        role = event.get("role")
        content = str(event.get("content") or "")
        tokens = distinctive_tokens(content)
        if role == "tool":
            for token in tokens:
                origin[token] = index
            answered.append(index)
            continue
        if role == "assistant":
            for token in tokens:
                source = origin.get(token)
                if source is not None and token not in said:
                    _use(uses, source, index, event).tokens.append(token)
            flat = _SPACES.sub(" ", content)
            for source in answered:
                quote = _quoted_line(str(events[source].get("content") or ""), flat)
                if quote:
                    _use(uses, source, index, event).quotes.append(quote)
            answered = []
        said.update(tokens)
    return {source: list(by_reply.values()) for source, by_reply in uses.items()}


def _use(
    uses: dict[int, dict[int, _Use]], source: int, reply: int, event: Mapping[str, Any]
) -> _Use:
    return uses.setdefault(source, {}).setdefault(reply, _Use(reply=event))


def _quoted_line(output: str, reply: str) -> str:
    """A line of the tool output (at least MIN_QUOTE_CHARS long) that the reply repeats."""
    for count, line in enumerate(output.splitlines()):
        if count >= MAX_QUOTE_LINES:
            break
        flat = _SPACES.sub(" ", line).strip()
        if len(flat) >= MIN_QUOTE_CHARS and flat in reply:
            return flat
    return ""


def _citations(items: Sequence[StmItem]) -> dict[str, list[StmItem]]:
    """Short-term items by every message and tool-call id their source cites."""
    citing: dict[str, list[StmItem]] = {}
    ordered = sorted(items, key=lambda i: (-i.importance, -i.updated_at))
    for item in ordered:
        ids = {*item.message_ids, *(item.source.get("tool_call_ids") or [])}
        for cited in ids:
            citing.setdefault(str(cited), []).append(item)
    return citing


def _digesters(
    event: Mapping[str, Any], strong: list[_Use], citing: Mapping[str, list[StmItem]]
) -> list[tuple[StmItem, str]]:
    """Items that hold the tool result's conclusion, most important first, with why."""
    found: dict[str, tuple[StmItem, str]] = {}
    for key in (str(event.get("tool_call_id") or ""), str(event.get("id") or "")):
        for item in citing.get(key, []) if key else []:
            why = f"{item.id} ({item.memory_type}) cites it: '{_clip(item.summary, 80)}'"
            found.setdefault(item.id, (item, why))
    for use in strong:
        for item in citing.get(str(use.reply.get("id", "")), []):
            why = (
                f"its conclusion in reply #{_seq(use.reply)} became {item.id} "
                f"({item.memory_type}): '{_clip(item.summary, 80)}'"
            )
            found.setdefault(item.id, (item, why))
    return list(found.values())


def _seq(event: Mapping[str, Any]) -> int:
    return int(event.get("seq", 0))


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
