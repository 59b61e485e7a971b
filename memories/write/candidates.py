"""What extractors propose: candidate short-term memory items, before the policy judges them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class SourceKind:
    USER = "user"  # said by the end user
    ASSISTANT = "assistant"  # said by the agent
    TOOL = "tool"  # a tool result
    PROPOSAL = "proposal"  # submitted by an agent through the API
    LLM = "llm"  # found by the optional LLM extractor (a model's reading)
    REVIEWER = "reviewer"  # approved by a reviewer in the verification queue
    IMPORT = "import"  # imported from outside (long-term cards)
    ALL = (USER, ASSISTANT, TOOL, PROPOSAL, LLM, REVIEWER, IMPORT)


@dataclass(frozen=True)
class Candidate:
    """One proposed fact. Extractors fill what they know; the policy decides the rest.

    `canonical_fact_key` names the slot a fact fills (e.g. `bug456:createOrder:root_cause`) and
    `fact_value` its value: the same key with another value supersedes the old item.
    """

    user_id: str
    session_id: str
    memory_type: str
    summary: str
    task_id: str = ""
    subtype: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    entities: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    source_kind: str = SourceKind.PROPOSAL
    message_ids: tuple[str, ...] = ()
    tool_call_ids: tuple[str, ...] = ()
    confidence: float = 0.5
    importance: float = 0.5
    canonical_fact_key: str = ""
    fact_value: str = ""
    verified: bool = False  # checked against a tool result, or stated as settled by the user
    remember: bool = False  # the user asked explicitly to remember it
    ttl_minutes: int | None = None  # the proposer's estimate; the policy clamps it
    trusted_writer: bool = False  # written with an API key its tenant marked a trusted writer
