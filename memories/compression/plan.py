"""Fit a session's conversation into a token budget: keep the near field, stub digested and
then weak tool results (light compression), and if still over, fold the events outside the
near field into a structured summary in the order of sacrifice (formal compression).
Pure: events and items in, a plan out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memories.compression.dependency import Dependency, ToolDependency, classify_tool_results
from memories.compression.summary import (
    LABELS,
    SECTIONS,
    ExtractiveSummariser,
    Summariser,
    SummaryLine,
    SummaryMaterial,
    first_meaningful_line,
    sacrifice_key,
    tool_name,
)
from memories.recall.effects import RECALL_EVENT_KIND
from memories.recall.query_profile import query_language
from memories.recall.render import estimate_tokens
from memories.stm.items import StmItem

STUB_CHARS = 160
# Light compression stubs digested results first, weak ones only if still over budget;
# strong ones are never stubbed.
STUBBABLE = (Dependency.DIGESTED, Dependency.WEAK)


class State:
    VERBATIM = "verbatim"
    STUBBED = "stubbed"
    FOLDED = "folded"


@dataclass
class Entry:
    """One conversation event and what compression did with it."""

    event: Mapping[str, Any]
    header: str
    cost: int  # tokens of the event rendered verbatim
    near: bool = False
    state: str = State.VERBATIM
    stub: str = ""
    stub_cost: int = 0
    reason: str = ""

    @property
    def id(self) -> str:
        return str(self.event.get("id", ""))

    @property
    def seq(self) -> int:
        return int(self.event.get("seq", 0))

    @property
    def role(self) -> str:
        return str(self.event.get("role", ""))

    @property
    def tokens(self) -> int:
        if self.state == State.STUBBED:
            return self.stub_cost
        return 0 if self.state == State.FOLDED else self.cost

    def text(self) -> str:
        if self.state == State.STUBBED:
            return self.stub
        content = str(self.event.get("content") or "")
        return f"{self.header}\n{content}" if content else self.header


@dataclass(frozen=True)
class FittedSummary:
    """The summary lines that fit, the ones dropped for the budget, and its text."""

    lines: list[SummaryLine]
    dropped: list[SummaryLine]
    text: str
    folded_events: int
    first_seq: int  # the oldest and newest folded events
    last_seq: int

    def sections(self) -> dict[str, list[SummaryLine]]:
        return {name: [line for line in self.lines if line.section == name] for name in SECTIONS}


@dataclass(frozen=True)
class Compression:
    """The compressed context and an account of every event in it or left out of it."""

    context: str
    entries: list[Entry]  # the conversation in order, whatever became of each event
    omitted: list[Mapping[str, Any]]  # recall records: the service's own bookkeeping
    dependencies: dict[str, ToolDependency]
    summary: FittedSummary | None
    budget: int
    before: int
    after: int
    language: str
    summariser: str
    near_field_tokens: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def within_budget(self) -> bool:
        return self.after <= self.budget


def is_recall_record(event: Mapping[str, Any]) -> bool:
    metadata = event.get("metadata") or {}
    return (
        event.get("role") == "system"
        and isinstance(metadata, Mapping)
        and metadata.get("kind") == RECALL_EVENT_KIND
    )


def near_field_start(events: Sequence[Mapping[str, Any]]) -> int:
    """Index where the near field begins: the user message before the latest one (or the
    only one; without user messages, the latest reply)."""
    users = [i for i, e in enumerate(events) if e.get("role") == "user"]
    if users:
        return users[-2] if len(users) > 1 else users[0]
    replies = [i for i, e in enumerate(events) if e.get("role") == "assistant"]
    return replies[-1] if replies else max(len(events) - 1, 0)


def compress(
    *,
    events: Sequence[Mapping[str, Any]],
    items: Sequence[StmItem],
    budget_tokens: int,
    task_id: str = "",
    summariser: Summariser | None = None,
) -> Compression:
    """The context for the next model turn within `budget_tokens` where at all possible.

    The near field is kept verbatim even when it alone is over the budget.
    """
    summariser = summariser or ExtractiveSummariser()
    conversation = [e for e in events if not is_recall_record(e)]
    omitted = [e for e in events if is_recall_record(e)]
    users = [e for e in conversation if e.get("role") == "user"]
    language = query_language(str(users[-1].get("content") or "")) if users else "en"
    labels = LABELS.get(language, LABELS["en"])

    start = near_field_start(conversation)
    current = {str(e.get("id")) for e in conversation[start:] if e.get("role") == "assistant"}
    dependencies = classify_tool_results(events=conversation, items=items, current_ids=current)
    entries = []
    for index, event in enumerate(conversation):
        header = _header(event)
        content = str(event.get("content") or "")
        entry = Entry(event, header, estimate_tokens(header) + estimate_tokens(content))
        dependency = dependencies.get(entry.id)
        if entry.role == "tool":
            entry.near = dependency is not None and dependency.current
        else:
            entry.near = index >= start
        entries.append(entry)
    before = sum(e.cost for e in entries)
    near_tokens = sum(e.cost for e in entries if e.near)

    total = before
    if total > budget_tokens:
        total = _stub(entries, dependencies, budget_tokens, total, labels)
    summary = None
    if total > budget_tokens:
        summary = _fold(
            entries=entries,
            dependencies=dependencies,
            items=items,
            budget=budget_tokens,
            total=total,
            task_id=task_id,
            language=language,
            summariser=summariser,
        )
    kept = [e for e in entries if e.state != State.FOLDED]
    context = "\n\n".join(([summary.text] if summary else []) + [e.text() for e in kept])
    # A text's estimate is the sum of its blocks' (no token spans a blank line), so the
    # context is not estimated again.
    after = sum(e.tokens for e in kept) + (estimate_tokens(summary.text) if summary else 0)
    notes = []
    if near_tokens > budget_tokens:
        notes.append("the near field alone is over the budget; it is kept verbatim")
    return Compression(
        context=context,
        entries=entries,
        omitted=omitted,
        dependencies=dependencies,
        summary=summary,
        budget=budget_tokens,
        before=before,
        after=after,
        language=language,
        summariser=summariser.name,
        near_field_tokens=near_tokens,
        notes=notes,
    )


def _header(event: Mapping[str, Any]) -> str:
    role = str(event.get("role", ""))
    parts = [f"#{event.get('seq')}", role]
    if role == "tool":
        parts += [tool_name(event), str(event.get("tool_call_id") or "")]
    return "[" + " ".join(p for p in parts if p) + "]"


def _stub(
    entries: list[Entry],
    dependencies: Mapping[str, ToolDependency],
    budget: int,
    total: int,
    labels: Mapping[str, str],
) -> int:
    """Light compression: replace tool results outside the near field by one-line stubs, in
    the order of sacrifice (digested before weak, then largest, then oldest), until it fits.
    Returns the new total."""
    candidates = [
        (entry, dependencies[entry.id])
        for entry in entries
        if entry.role == "tool"
        and not entry.near
        and entry.id in dependencies
        and dependencies[entry.id].dependency in STUBBABLE
    ]
    candidates.sort(key=lambda c: sacrifice_key(c[0].event, dependencies, c[0].cost))
    for entry, dependency in candidates:
        if total <= budget:
            break
        if dependency.concluded:
            body = labels["stub_digested"].format(
                tokens=entry.cost, text=first_meaningful_line(dependency.concluded, STUB_CHARS)
            )
        else:
            content = str(entry.event.get("content") or "")
            body = labels["stub_weak"].format(
                tokens=entry.cost, text=first_meaningful_line(content, STUB_CHARS)
            )
        stub = f"{entry.header[:-1]} {entry.id}] {body}"
        cost = estimate_tokens(stub)
        if cost >= entry.cost:  # too small to gain anything
            continue
        entry.state, entry.stub, entry.stub_cost = State.STUBBED, stub, cost
        entry.reason = f"{dependency.dependency} tool result outside the near field: " + (
            "; ".join(dependency.reasons)
        )
        total -= entry.cost - cost
    return total


def _fold(
    *,
    entries: list[Entry],
    dependencies: Mapping[str, ToolDependency],
    items: Sequence[StmItem],
    budget: int,
    total: int,
    task_id: str,
    language: str,
    summariser: Summariser,
) -> FittedSummary | None:
    """Formal compression, each pass in the order of sacrifice and each stopping once it fits:
    fold events outside the near field into summary lines where a line is shorter; then leave
    such events out altogether; then drop the summary's own lines, the least lasting first."""
    candidates = [e for e in entries if not e.near]
    if not candidates:
        return None
    users = [e.event for e in entries if e.role == "user"]
    lines = summariser.summarise(
        material=SummaryMaterial(
            candidates=[e.event for e in candidates],
            dependencies=dependencies,
            items=items,
            first_user=users[0] if users else None,
            latest_user=users[-1] if users else None,
            task_id=task_id,
            language=language,
            costs={e.id: e.cost for e in candidates},
        )
    )
    labels = LABELS.get(language, LABELS["en"])
    summary = _Lines(lines, labels)
    own = _own_lines(lines, {e.id for e in candidates})
    owned = {index for indexes in own.values() for index in indexes}
    total += estimate_tokens(labels["title"])
    total += sum(summary.show(i) for i in range(len(lines)) if i not in owned)

    order = sorted(candidates, key=lambda e: sacrifice_key(e.event, dependencies, e.cost))
    folded = _sacrifice(order, summary, own, total=total, budget=budget)
    shown = summary.shown
    kept = [lines[i] for i in sorted(shown)]
    _give_reasons(folded, dependencies, in_summary={ref for line in kept for ref in line.refs})
    if not kept:
        return None
    body = [
        block
        for name in SECTIONS
        for block in _section_block(
            section_header(name, labels), [line for line in kept if line.section == name]
        )
    ]
    seqs = [e.seq for e in folded]
    in_folded = {e.id for e in folded}
    return FittedSummary(
        lines=kept,
        dropped=[
            line
            for i, line in enumerate(lines)
            if i not in shown and (i not in owned or line.refs[0] in in_folded)
        ],
        text="\n".join([labels["title"], *body]),
        folded_events=len(folded),
        first_seq=min(seqs, default=0),
        last_seq=max(seqs, default=0),
    )


def _own_lines(lines: Sequence[SummaryLine], candidate_ids: set[str]) -> dict[str, list[int]]:
    """The work-done lines of one event each, by event: such a line joins the summary when its
    event is folded; every other line (goal, requirement, short-term items) is there from the
    start."""
    own: dict[str, list[int]] = {}
    for index, line in enumerate(lines):
        if line.section == "work_done" and len(line.refs) == 1 and line.refs[0] in candidate_ids:
            own.setdefault(line.refs[0], []).append(index)
    return own


def _sacrifice(
    order: list[Entry],
    summary: _Lines,
    own: Mapping[str, list[int]],
    *,
    total: int,
    budget: int,
) -> list[Entry]:
    """The three passes, each stopping once the context fits; the folded events by seq."""
    folded: list[Entry] = []
    # 1. Fold events into their lines where a line is shorter than what it replaces.
    for entry in order:
        if total <= budget:
            break
        if summary.cost_of(own.get(entry.id, [])) < entry.tokens:
            total += sum(summary.show(i) for i in own.get(entry.id, [])) - entry.tokens
            entry.state = State.FOLDED
            folded.append(entry)
    # 2. Leave events out altogether, whether still verbatim or folded into a line.
    for entry in order:
        if total <= budget:
            break
        if entry.state == State.FOLDED:
            total -= sum(summary.hide(i) for i in own.get(entry.id, []))
        else:
            total -= entry.tokens
            entry.state = State.FOLDED
            folded.append(entry)
    # 3. Drop the summary's own lines, the least lasting first.
    lines = summary.lines
    for index in sorted(summary.shown, key=lambda i: (lines[i].drop_order, i)):
        if total <= budget:
            break
        total -= summary.hide(index)
    folded.sort(key=lambda e: e.seq)
    return folded


def _give_reasons(
    folded: list[Entry], dependencies: Mapping[str, ToolDependency], *, in_summary: set[str]
) -> None:
    for entry in folded:
        dependency = dependencies.get(entry.id)
        where = (
            f"{dependency.dependency} tool result outside the near field"
            if dependency
            else "outside the near field"
        )
        entry.reason = (
            f"{where}; folded into the summary"
            if entry.id in in_summary
            else f"{where}; folded and left out of the summary for the budget"
        )


class _Lines:
    """Which summary lines are shown, and what showing or hiding one costs (its section's
    header comes with its first line and goes with its last)."""

    def __init__(self, lines: list[SummaryLine], labels: Mapping[str, str]) -> None:
        self.lines = lines
        self.cost = [estimate_tokens(f"- {line.text}") for line in lines]
        self.header = {name: estimate_tokens(section_header(name, labels)) for name in SECTIONS}
        self.per_section: Counter[str] = Counter()
        self.shown: set[int] = set()

    def cost_of(self, indexes: list[int]) -> int:
        """Tokens that showing these lines would add."""
        sections = {self.lines[i].section for i in indexes}
        return sum(self.cost[i] for i in indexes) + sum(
            self.header[s] for s in sections if not self.per_section[s]
        )

    def show(self, index: int) -> int:
        section = self.lines[index].section
        added = self.cost[index] + (0 if self.per_section[section] else self.header[section])
        self.per_section[section] += 1
        self.shown.add(index)
        return added

    def hide(self, index: int) -> int:
        section = self.lines[index].section
        self.per_section[section] -= 1
        self.shown.discard(index)
        return self.cost[index] + (0 if self.per_section[section] else self.header[section])


def section_header(name: str, labels: Mapping[str, str]) -> str:
    return f"{labels[name]}{labels['colon'].strip()}"


def _section_block(header: str, lines: list[SummaryLine]) -> list[str]:
    if not lines:
        return []
    return [header, *(f"- {line.text}" for line in lines)]
