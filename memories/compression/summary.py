"""The formal summary of folded history: its sections, the `Summariser` interface and the
extractive summariser (the default; `llm.py` holds the optional model-written one)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from memories.compression.dependency import Dependency, ToolDependency
from memories.stm.items import MemoryType, StmItem

SECTIONS = (
    "task_goal",
    "latest_requirement",
    "work_done",
    "decisions_and_constraints",
    "problems_and_risks",
    "current_state",
    "next_steps",
)
LABELS = {
    "en": {
        "title": "Summary of earlier work (folded events can be replayed by seq):",
        "task_goal": "Task goal",
        "latest_requirement": "User's latest requirement",
        "work_done": "Work done",
        "decisions_and_constraints": "Key decisions and constraints",
        "problems_and_risks": "Known problems and risks",
        "current_state": "Current state",
        "next_steps": "Next steps",
        "task": "task",
        "user": "user",
        "assistant": "assistant",
        "system": "system",
        "tool": "tool",
        "decision": "decision",
        "constraint": "constraint",
        "preference": "preference",
        "hypothesis": "unconfirmed",
        "next": "next",
        "colon": ": ",
        "stub_digested": "stubbed ({tokens} tokens); concluded: {text}",
        "stub_weak": "stubbed ({tokens} tokens); first line: {text}",
    },
    "zh": {
        "title": "此前工作摘要（折叠的记录可按序号回看）：",
        "task_goal": "当前任务目标",
        "latest_requirement": "用户最新要求",
        "work_done": "已完成工作",
        "decisions_and_constraints": "关键决定和约束",
        "problems_and_risks": "已知问题和风险",
        "current_state": "当前状态",
        "next_steps": "下一步动作",
        "task": "任务",
        "user": "用户",
        "assistant": "助手",
        "system": "系统",
        "tool": "工具",
        "decision": "决定",
        "constraint": "约束",
        "preference": "偏好",
        "hypothesis": "待验证",
        "next": "下一步",
        "colon": "：",
        "stub_digested": "已省略（{tokens} tokens）；结论：{text}",
        "stub_weak": "已省略（{tokens} tokens）；首行：{text}",
    },
}

# Subtypes and `detail` keys (the design's `next_focus`) that name what to do next.
NEXT_STEP_SUBTYPES = frozenset({"next_step", "next_steps", "next_action", "todo", "plan"})
NEXT_STEP_DETAIL_KEYS = ("next_steps", "next_step", "next_focus")
PROBLEM_SUBTYPES = frozenset({"symptom", "problem", "risk", "error", "issue", "blocker", "bug"})
PROBLEM_TAGS = frozenset({"error", "timeout"})
TOOL_NAME_KEYS = ("tool_name", "tool", "name")

# Drop order of summary lines when the summary itself is over budget: the lowest tier goes
# first. Lines of folded events go before short-term items; among events, the order of
# sacrifice.
TIER = {
    "work_done": 0,
    "problems_and_risks": 1,
    "current_state": 2,
    "next_steps": 3,
    "decisions_and_constraints": 4,
    "latest_requirement": 5,
    "task_goal": 6,
}
DEPENDENCY_RANK = {Dependency.DIGESTED: 0, Dependency.WEAK: 1, Dependency.STRONG: 2}
CONTENT_RANK = {"tool": 0, "assistant": 1, "system": 2, "user": 3}
OTHER_RANK = 2
ITEM_TYPE_RANK = {MemoryType.PREFERENCE: 0, MemoryType.DECISION: 1, MemoryType.CONSTRAINT: 2}

WORK_LINE_CHARS = 160
ITEM_LINE_CHARS = 200
REQUIREMENT_CHARS = 300
_WORD_CHAR = re.compile(r"[A-Za-z0-9\u3400-\u9fff]")
MIN_MEANINGFUL_CHARS = 3


@dataclass(frozen=True)
class SummaryLine:
    """One line of a section, the ids it comes from, and when it is dropped for the budget."""

    section: str
    text: str
    refs: tuple[str, ...] = ()
    drop_order: tuple[float, ...] = ()  # the smallest is dropped first


@dataclass(frozen=True)
class SummaryMaterial:
    """What a summariser may use: the folded events, their dependencies and the session's
    short-term items."""

    candidates: Sequence[Mapping[str, Any]]  # events outside the near field, any may be folded
    dependencies: Mapping[str, ToolDependency]
    items: Sequence[StmItem]
    first_user: Mapping[str, Any] | None
    latest_user: Mapping[str, Any] | None
    task_id: str = ""
    language: str = "en"
    costs: Mapping[str, int] = field(default_factory=dict)  # verbatim tokens by event id


class Summariser(Protocol):
    """Folds older history into the design's sections."""

    name: str

    def summarise(self, *, material: SummaryMaterial) -> list[SummaryLine]: ...


class ExtractiveSummariser:
    """Lines taken from the events and short-term items themselves; nothing is generated."""

    name = "extractive"

    def summarise(self, *, material: SummaryMaterial) -> list[SummaryLine]:
        """Goal, latest requirement, one line per folded event, and the items by section."""
        labels = LABELS.get(material.language, LABELS["en"])
        lines: list[SummaryLine] = []
        if material.first_user is not None:
            lines.append(_event_line("task_goal", material.first_user, REQUIREMENT_CHARS))
        if material.task_id:
            text = f"{labels['task']}{labels['colon']}{material.task_id}"
            lines.append(SummaryLine("task_goal", text, (), (TIER["task_goal"], 1)))
        if material.latest_user is not None:
            lines.append(_event_line("latest_requirement", material.latest_user, REQUIREMENT_CHARS))
        goal_id = material.first_user.get("id") if material.first_user is not None else None
        for event in material.candidates:
            if event.get("id") == goal_id:  # already the task goal
                continue
            line = self._work_line(event, material, labels)
            if line is not None:
                lines.append(line)
        lines.extend(_item_lines(material.items, labels))
        return lines

    def _work_line(
        self, event: Mapping[str, Any], material: SummaryMaterial, labels: Mapping[str, str]
    ) -> SummaryLine | None:
        role = str(event.get("role", ""))
        event_id = str(event.get("id", ""))
        content = str(event.get("content") or "")
        dependency = material.dependencies.get(event_id)
        if role == "tool":
            concluded = dependency.concluded if dependency else ""
            gist = clip(concluded, WORK_LINE_CHARS) or first_meaningful_line(
                content, WORK_LINE_CHARS
            )
            name = " ".join(filter(None, (labels["tool"], tool_name(event))))
        else:
            gist = first_meaningful_line(content, WORK_LINE_CHARS)
            name = labels.get(role, role)
        if not gist:
            return None
        sacrifice = sacrifice_key(event, material.dependencies, material.costs.get(event_id, 0))
        order = (TIER["work_done"], *sacrifice)
        text = f"#{event.get('seq')} {name}: {gist}"
        return SummaryLine("work_done", text, (event_id,), order)


def sacrifice_key(
    event: Mapping[str, Any], dependencies: Mapping[str, ToolDependency], tokens: int
) -> tuple[int, int, int, int]:
    """The design's order of sacrifice, first sacrificed first: dependency on the current step
    (digested, then weak tool results; strong ones rank with messages), content type (tool
    output, assistant prose, system, user), size (largest first), age (oldest first)."""
    dependency = dependencies.get(str(event.get("id", "")))
    return (
        DEPENDENCY_RANK[dependency.dependency] if dependency else OTHER_RANK,
        CONTENT_RANK.get(str(event.get("role", "")), OTHER_RANK),
        -tokens,
        int(event.get("seq", 0)),
    )


def _event_line(section: str, event: Mapping[str, Any], limit: int) -> SummaryLine:
    text = f"#{event.get('seq')}: {first_meaningful_line(str(event.get('content') or ''), limit)}"
    return SummaryLine(section, text, (str(event.get("id", "")),), (TIER[section], 0))


def item_section(item: StmItem) -> str:
    """The summary section a short-term item belongs to."""
    if item.subtype in NEXT_STEP_SUBTYPES:
        return "next_steps"
    if item.memory_type in ITEM_TYPE_RANK:
        return "decisions_and_constraints"
    if item.memory_type == MemoryType.HYPOTHESIS:
        return "problems_and_risks"
    if item.memory_type == MemoryType.OBSERVATION and PROBLEM_TAGS & set(item.tags):
        return "problems_and_risks"
    if item.subtype in PROBLEM_SUBTYPES:
        return "problems_and_risks"
    return "current_state"


def _item_lines(items: Sequence[StmItem], labels: Mapping[str, str]) -> list[SummaryLine]:
    """The items' lines, most important and newest first within each section."""
    lines: list[SummaryLine] = []
    seen: set[str] = set()
    for item in sorted(items, key=lambda i: (-i.importance, -i.updated_at)):
        section = item_section(item)
        text = clip(item.summary, ITEM_LINE_CHARS)
        if item.memory_type in ITEM_TYPE_RANK and section == "decisions_and_constraints":
            text = f"{labels[item.memory_type]}{labels['colon']}{text}"
        elif item.memory_type == MemoryType.HYPOTHESIS:
            text = f"{labels['hypothesis']}{labels['colon']}{text}"
        order = (
            TIER[section],
            ITEM_TYPE_RANK.get(item.memory_type, 0),
            item.importance,
            item.updated_at,
        )
        if text and text not in seen:
            seen.add(text)
            lines.append(SummaryLine(section, text, (item.id,), order))
        for key in NEXT_STEP_DETAIL_KEYS:
            steps = _strings(item.detail.get(key))
            text = clip(f"{labels['next']}{labels['colon']}{', '.join(steps)}", ITEM_LINE_CHARS)
            if steps and text not in seen:
                seen.add(text)
                order = (TIER["next_steps"], 0, item.importance, item.updated_at)
                lines.append(SummaryLine("next_steps", text, (item.id,), order))
    return lines


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list | tuple):
        return [str(v) for v in value if str(v).strip()]
    return []


def tool_name(event: Mapping[str, Any]) -> str:
    """The tool's name from the event's metadata (`tool_name`, `tool` or `name`), if any."""
    metadata = event.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        return ""
    for key in TOOL_NAME_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return clip(value, 64)
    return ""


def first_meaningful_line(text: str, limit: int) -> str:
    """The first line with some words in it (not a blank, a brace or a rule), on one line."""
    for line in text.splitlines():
        if len(_WORD_CHAR.findall(line)) >= MIN_MEANINGFUL_CHARS:
            return clip(line, limit)
    return clip(text, limit)


def clip(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
