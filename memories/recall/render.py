"""Fit the Layer 1 blocks and the chosen memories into a token budget, and render the text
agents inject, in the design's three sections and the user's language."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memories.recall.context import ContextBlocks
from memories.recall.pool import MemoryCandidate

_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[A-Za-z0-9_]+|[^\sA-Za-z0-9_\u3400-\u9fff]")

LABELS = {
    "zh": {
        "profile": "用户/环境画像：",
        "stm": "当前任务短期记忆：",
        "stm_earlier": "此前会话的短期记忆：",
        "ltm": "相关长期经验：",
        "history": "相关历史对话：",
        "constraint": "约束",
        "preference": "偏好",
        "language": "语言",
        "answer_style": "回答风格",
        "timezone": "时区",
        "display_name": "称呼",
        "permission": "权限",
        "role": "角色",
        "default_env": "默认环境",
        "project": "项目",
        "workspace": "工作区",
        "task": "当前任务",
        "said_user": "用户说",
        "said_assistant": "助手说",
        "said_tool": "工具返回",
        "said_proposal": "智能体提议",
        "said_llm": "模型提取",
        "said_import": "导入",
        "changed": "自 {day} 起；取代此前的说法",
        "said_on": "{day} 说",
        "earlier": "此前的说法；{day} 的说法与之不同",
        "latest": "最新的说法",
    },
    "en": {
        "profile": "User / environment profile:",
        "stm": "Current task short-term memory:",
        "stm_earlier": "Short-term memory from earlier sessions:",
        "ltm": "Related long-term experience:",
        "history": "From earlier conversations:",
        "constraint": "Constraint",
        "preference": "Preference",
        "language": "Language",
        "answer_style": "Answer style",
        "timezone": "Time zone",
        "display_name": "Name",
        "permission": "Permission",
        "role": "Role",
        "default_env": "Default environment",
        "project": "Project",
        "workspace": "Workspace",
        "task": "Current task",
        "said_user": "user said",
        "said_assistant": "assistant said",
        "said_tool": "tool reported",
        "said_proposal": "agent proposed",
        "said_llm": "model extracted",
        "said_import": "imported",
        "changed": "since {day}; replaces an earlier statement",
        "said_on": "said {day}",
        "earlier": "earlier; a statement of {day} differs",
        "latest": "the latest",
    },
}


# The memory sections in the order they are injected: what the current task or session holds,
# what earlier sessions left in short-term memory, long-term memory, history.
SECTIONS = ("stm", "stm_earlier", "ltm", "history")


def estimate_tokens(text: str) -> int:
    """Tokens a model's tokenizer would roughly count: one per Chinese character, one per four
    characters of a Latin word (at least one), one per other symbol."""
    total = 0
    for token in _TOKEN.findall(text):
        if token[0].isascii() and (token[0].isalnum() or token[0] == "_"):
            total += max(1, math.ceil(len(token) / 4))
        else:
            total += 1
    return total


@dataclass
class Injection:
    text: str
    token_estimate: int
    items: list[MemoryCandidate]
    shortened: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    standing: list[str] = field(default_factory=list)  # standing rules whose lines were kept


def fit_and_render(
    *,
    blocks: ContextBlocks,
    candidates: Sequence[MemoryCandidate],
    budget_tokens: int,
    language: str,
    task_id: str = "",
    session_id: str = "",
) -> Injection:
    """Shorten the lowest-scored items to their summaries, then drop them, until it fits.

    Block lines come first; if they alone exceed the budget, their least essential lines
    (facts, then settings) go before anything else is cut.
    """
    labels = LABELS.get(language, LABELS["en"])
    block_lines = _block_lines(blocks, labels)
    items = list(candidates)  # best first
    short: set[str] = set()
    dropped: list[str] = []

    # Every token lies within one line, so a text's estimate is the sum of its lines': cost
    # each line once instead of re-counting the whole text after every change.
    full_cost = {c.memory_id: estimate_tokens(f"- {_line(c, c.text, labels)}") for c in items}
    short_cost: dict[str, int] = {}  # filled as items are shortened
    block_cost = [estimate_tokens(line) for line, _ in block_lines]
    header_cost = {name: estimate_tokens(labels[name]) for name in ("profile", *SECTIONS)}
    task_cost = estimate_tokens(f"- {labels['task']}: {task_id}") if task_id else 0
    section = {c.memory_id: _section(c, task_id, session_id) for c in items}

    def total() -> int:
        cost = sum(block_cost) + (header_cost["profile"] if block_cost else 0)
        present = {section[c.memory_id] for c in items}
        cost += sum(header_cost[name] for name in present)
        if "stm" in present:
            cost += task_cost
        return cost + sum(
            short_cost[c.memory_id] if c.memory_id in short else full_cost[c.memory_id]
            for c in items
        )

    # Shorten from the lowest-scored up, then drop from the lowest-scored up.
    for candidate in reversed(items):
        if total() <= budget_tokens:
            break
        if candidate.summary != candidate.text:
            short.add(candidate.memory_id)
            short_cost[candidate.memory_id] = estimate_tokens(
                f"- {_line(candidate, candidate.summary, labels)}"
            )
    while items and total() > budget_tokens:
        dropped.append(items.pop().memory_id)
    while total() > budget_tokens and any(optional for _, optional in block_lines):
        last_optional = max(i for i, (_, optional) in enumerate(block_lines) if optional)
        block_lines.pop(last_optional)
        block_cost.pop(last_optional)
    kept_lines = {line for line, _ in block_lines}
    return Injection(
        text=_render(block_lines, items, short, labels, task_id, section),
        token_estimate=total(),
        items=items,
        shortened=[c.memory_id for c in items if c.memory_id in short],
        dropped=dropped,
        standing=[
            rule["memory_id"]
            for rule in blocks.constraints.get("standing", [])
            if _standing_line(rule, labels) in kept_lines
        ],
    )


def _block_lines(blocks: ContextBlocks, labels: dict[str, str]) -> list[tuple[str, bool]]:
    """(line, optional) pairs of the profile section; optional lines may be cut for budget."""
    lines: list[tuple[str, bool]] = []
    profile = blocks.profile
    for name in ("language", "answer_style", "display_name", "timezone"):
        if profile.get(name):
            lines.append((f"- {labels[name]}: {profile[name]}", name == "timezone"))
    for key, value in profile.get("preferences", {}).items():
        lines.append((f"- {key}: {_value(value)}", True))
    scope = blocks.constraints.get("permission_scope")
    if scope:
        lines.append((f"- {labels['permission']}: {scope}", False))
    runtime = blocks.runtime
    for name in ("project", "workspace", "default_env"):
        if runtime.get(name):
            lines.append((f"- {labels[name]}: {runtime[name]}", name != "default_env"))
    shown = {"project_metadata.default_env"}
    for fact in blocks.constraints.get("facts", []):
        if fact["key"] not in shown:
            lines.append((f"- {fact['key']}: {_value(fact['value'])}", True))
    # The user's live short-term rules: constraints stay, preferences may go for budget.
    for rule in blocks.constraints.get("standing", []):
        lines.append((_standing_line(rule, labels), rule["memory_type"] != "constraint"))
    return lines


def _standing_line(rule: dict[str, Any], labels: dict[str, str]) -> str:
    return f"- {labels[rule['memory_type']]}: {_one_line(rule['text'])}"


def _section(candidate: MemoryCandidate, task_id: str, session_id: str) -> str:
    """Where a memory is injected: a short-term item of this task or session is what the
    current task holds; one of another session is what an earlier session said."""
    if candidate.source != "redis":
        return candidate.source
    provenance = candidate.provenance
    if task_id and provenance.get("task_id") == task_id:
        return "stm"
    if not session_id or session_id in provenance.get("sessions", ()):
        return "stm"
    return "stm_earlier"


def _render(
    block_lines: list[tuple[str, bool]],
    items: Sequence[MemoryCandidate],
    short: set[str],
    labels: dict[str, str],
    task_id: str,
    section: dict[str, str],
) -> str:
    sections: list[str] = []
    if block_lines:
        sections.append("\n".join([labels["profile"], *(line for line, _ in block_lines)]))
    for name in SECTIONS:
        lines = [f"- {_item_text(c, short, labels)}" for c in items if section[c.memory_id] == name]
        if not lines:
            continue
        head = [f"- {labels['task']}: {task_id}"] if name == "stm" and task_id else []
        sections.append("\n".join([labels[name], *head, *lines]))
    return "\n\n".join(sections)


def _item_text(candidate: MemoryCandidate, short: set[str], labels: dict[str, str]) -> str:
    text = candidate.summary if candidate.memory_id in short else candidate.text
    return _line(candidate, text, labels)


def _line(candidate: MemoryCandidate, text: str, labels: dict[str, str]) -> str:
    """One memory on one line; long-term memories and history lead with their event date.

    What is not the user's word (an assistant's, a tool's, an agent's, a model's, an import)
    is evidence: quoted and attributed, so it never reads as an instruction. So is every turn of
    history, the user's too: what was said once in a conversation is reported speech, not a
    rule nobody has judged (the user's rules come from extraction or a reviewer). And so is a
    statement only its meaning read (no word list): what it states is the probe's guess.

    Statements of the user that disagree (`disagreeing.py`) say which came first."""
    if not candidate.is_trusted or candidate.source == "history" or candidate.read_by_meaning:
        who = labels.get(f"said_{candidate.source_kind}", labels["said_assistant"])
        when = candidate.said_at or candidate.occurred_at or candidate.updated_at
        day = f", {_day(when)}" if when else ""
        said = _one_line(text)
        if candidate.source == "history":  # the attribution names the speaker already
            said = said.removeprefix(f"{candidate.source_kind}: ")
        quoted = said.replace('"', "'")
        return f'({who}{day}{_order(candidate, labels, "; ")}) "{quoted}"'
    if candidate.later_differing or candidate.latest_differing:
        when = candidate.said_at or candidate.occurred_at
        said_on = labels["said_on"].format(day=_day(when))
        return f"{_one_line(text)} ({said_on}{_order(candidate, labels, '; ')})"
    if candidate.source != "redis" and candidate.occurred_at:
        return f"[{_day(candidate.occurred_at)}] {_one_line(text)}"
    if candidate.provenance.get("supersedes") and candidate.provenance.get("said_at"):
        # a fact that changed carries the date it changed on
        day = str(candidate.provenance["said_at"])[:10]
        return f"{_one_line(text)} ({labels['changed'].format(day=day)})"
    return _one_line(text)


def _order(candidate: MemoryCandidate, labels: dict[str, str], lead: str) -> str:
    """Where a statement stands among the user's statements that disagree with it."""
    if candidate.later_differing:
        return lead + labels["earlier"].format(day=_day(candidate.later_differing))
    if candidate.latest_differing:
        return lead + labels["latest"]
    return ""


def _day(when: float) -> str:
    return datetime.fromtimestamp(when, tz=UTC).date().isoformat()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _value(value: Any) -> str:
    """A structured value as JSON, as a tool or a client wrote it (not Python's repr)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
