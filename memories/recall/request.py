"""A recall's request and its result, as the API hands them over and takes them back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memories.recall.context import ContextBlocks
from memories.recall.pool import MemoryCandidate


@dataclass(frozen=True)
class RecallRequest:
    user_id: str
    session_id: str
    query: str
    task_id: str = ""
    project: str = ""
    workspace: str = ""
    budget_tokens: int | None = None
    k: int | None = None
    layers: tuple[str, ...] = ()
    explain: bool = False
    user_stated_only: bool = False  # only what is the user's word (trusted sources)
    cutoff: bool = True  # False: the top k, whether or not they answer


@dataclass
class RecallResult:
    recall_id: str
    blocks: ContextBlocks
    items: list[MemoryCandidate]
    injection_text: str
    token_estimate: int
    budget_tokens: int
    degraded: list[str]
    language: str
    shortened: list[str] = field(default_factory=list)  # items shown by their summary
    latency_ms: dict[str, float] = field(default_factory=dict)  # per layer and store, and total
    explain: dict[str, Any] | None = None
