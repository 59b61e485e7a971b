"""Optional extractor asking an OpenAI-compatible chat-completions endpoint for candidates.

The endpoint is asked through `memoryproject.llm`; every failure of it raises
`StoreUnavailable`, and the caller then keeps to the rule-based extractors. Each proposed
candidate is checked on its own: a malformed one is dropped and logged, never the whole answer.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from django.conf import settings

from memories.stm.items import MemoryType
from memories.write.candidates import Candidate, SourceKind
from memoryproject.errors import StoreUnavailable
from memoryproject.llm import chat_json
from memoryproject.redaction import redact_text

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_TIMEOUT = 20.0
MAX_SUMMARY_CHARS = 500
TRUNCATED_MARK = "…"

SYSTEM_PROMPT = """\
You extract working memory for an AI agent from a conversation excerpt.
Propose only durable, verified facts worth keeping for the rest of the task: constraints, \
decisions, exclusions (what was ruled out), observations verified by a tool result, and stated \
preferences.
Never propose chit-chat, raw logs or stack traces, the agent's reasoning, guesses, or personal \
identifiers (names, e-mail addresses, phone numbers, account or card numbers, secrets).
Each summary is one short self-contained sentence. Cite in message_ids the ids of the events \
it comes from, and in tool_call_ids the tool calls that verify it.
memory_type is one of: fact, decision, hypothesis, observation, constraint, preference.
confidence and importance are numbers from 0 to 1. verified is true only when a tool result \
confirms it or the user stated it as settled. canonical_fact_key names the slot the fact fills \
(e.g. "bug456:createOrder:root_cause") and fact_value its value; leave both empty when unsure.
Answer with one JSON object and nothing else:
{"candidates": [{"memory_type": "", "subtype": "", "summary": "", "entities": [], "tags": [], \
"confidence": 0.0, "importance": 0.0, "canonical_fact_key": "", "fact_value": "", \
"verified": false, "message_ids": [], "tool_call_ids": []}]}
Answer {"candidates": []} when nothing qualifies."""


class _ContextIds(Protocol):
    """The part of an extraction context this extractor reads."""

    @property
    def user_id(self) -> str: ...

    @property
    def session_id(self) -> str: ...

    @property
    def task_id(self) -> str: ...


class _Malformed(ValueError):
    """A candidate in the answer that does not have the expected shape."""


class OpenAICompatibleExtractor:
    """Proposes candidates by asking a chat-completions endpoint for a JSON answer."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float = DEFAULT_TIMEOUT,
        max_event_chars: int = 2000,
    ) -> None:
        self.url = f"{base_url.rstrip('/')}/chat/completions"
        self.model = model
        self.timeout = timeout
        self.max_event_chars = max_event_chars
        self._api_key = api_key

    def extract(
        self, *, events: Sequence[Mapping[str, Any]], context: _ContextIds
    ) -> list[Candidate]:
        """Ask the endpoint about `events` and return the candidates that pass validation."""
        if not events:
            return []
        content = self._complete(self._messages(events, context))
        try:
            answer = json.loads(content)
        except ValueError as exc:
            raise StoreUnavailable(f"LLM extractor: the answer is not JSON ({exc})") from exc
        proposals = answer.get("candidates") if isinstance(answer, dict) else None
        if not isinstance(proposals, list):
            raise StoreUnavailable("LLM extractor: the answer has no list of candidates")
        message_ids = {str(e["id"]) for e in events if e.get("id")}
        tool_call_ids = {str(e["tool_call_id"]) for e in events if e.get("tool_call_id")}
        candidates = []
        for index, proposal in enumerate(proposals):
            try:
                candidates.append(self._candidate(proposal, context, message_ids, tool_call_ids))
            except _Malformed as exc:
                logger.warning("LLM extractor dropped candidate %d: %s", index, exc)
        return candidates

    def _messages(
        self, events: Sequence[Mapping[str, Any]], context: _ContextIds
    ) -> list[dict[str, str]]:
        lines = [self._event_line(event) for event in events]
        task = f"Task: {context.task_id}\n" if context.task_id else ""
        user = f"{task}Events, one JSON object a line:\n" + "\n".join(lines)
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def _event_line(self, event: Mapping[str, Any]) -> str:
        content = event.get("content") or ""
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        content = redact_text(content)  # red lines hold for the outside model too
        if len(content) > self.max_event_chars:
            content = content[: self.max_event_chars] + TRUNCATED_MARK
        line: dict[str, Any] = {"role": event.get("role", ""), "id": event.get("id", "")}
        if event.get("tool_call_id"):
            line["tool_call_id"] = event["tool_call_id"]
        line["content"] = content
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))

    def _complete(self, messages: list[dict[str, str]]) -> str:
        """POST the chat completion and return the assistant message's content."""
        return chat_json(
            url=self.url,
            api_key=self._api_key,
            model=self.model,
            timeout=self.timeout,
            messages=messages,
            label="LLM extractor",
        )

    def _candidate(
        self,
        proposal: Any,
        context: _ContextIds,
        known_message_ids: set[str],
        known_tool_call_ids: set[str],
    ) -> Candidate:
        if not isinstance(proposal, dict):
            raise _Malformed("not an object")
        memory_type = proposal.get("memory_type")
        if memory_type not in MemoryType.ALL:
            raise _Malformed(f"unknown memory_type {memory_type!r}")
        summary = proposal.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            raise _Malformed("summary is not a non-empty string")
        summary = summary.strip()
        if len(summary) > MAX_SUMMARY_CHARS:
            raise _Malformed(f"summary is longer than {MAX_SUMMARY_CHARS} characters")
        # Ids the model made up would point provenance at nothing, so only cited ids are kept.
        message_ids = [i for i in _strings(proposal, "message_ids") if i in known_message_ids]
        if not message_ids:
            raise _Malformed("cites no message id of the given events")
        tool_call_ids = [i for i in _strings(proposal, "tool_call_ids") if i in known_tool_call_ids]
        return Candidate(
            user_id=context.user_id,
            session_id=context.session_id,
            task_id=context.task_id,
            source_kind=SourceKind.LLM,
            memory_type=memory_type,
            summary=summary,
            subtype=_string(proposal, "subtype"),
            entities=tuple(_strings(proposal, "entities")),
            tags=tuple(_strings(proposal, "tags")),
            message_ids=tuple(dict.fromkeys(message_ids)),
            tool_call_ids=tuple(dict.fromkeys(tool_call_ids)),
            confidence=_unit(proposal, "confidence"),
            importance=_unit(proposal, "importance"),
            canonical_fact_key=_string(proposal, "canonical_fact_key"),
            fact_value=_string(proposal, "fact_value"),
            verified=_boolean(proposal, "verified"),
        )


# Models often write null for a field they leave empty, so null counts as absent below.


def _string(proposal: dict[str, Any], name: str) -> str:
    value = proposal.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Malformed(f"{name} is not a string")
    return value.strip()


def _strings(proposal: dict[str, Any], name: str) -> list[str]:
    value = proposal.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Malformed(f"{name} is not a list of strings")
    return [item.strip() for item in value if item.strip()]


def _unit(proposal: dict[str, Any], name: str) -> float:
    value = proposal.get(name)
    if value is None:
        return 0.5
    # bool is an int subclass; true/false here means the model misread the schema.
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise _Malformed(f"{name} is not a number")
    return min(1.0, max(0.0, float(value)))


def _boolean(proposal: dict[str, Any], name: str) -> bool:
    value = proposal.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _Malformed(f"{name} is not a boolean")
    return value


def llm_extractor() -> OpenAICompatibleExtractor | None:
    """The extractor configured in settings, or None when `LLM_EXTRACTOR_URL` is empty."""
    base_url = getattr(settings, "LLM_EXTRACTOR_URL", "") or ""
    if not base_url:
        return None
    return OpenAICompatibleExtractor(
        base_url=base_url,
        api_key=getattr(settings, "LLM_EXTRACTOR_API_KEY", "") or "",
        model=getattr(settings, "LLM_EXTRACTOR_MODEL", "") or DEFAULT_MODEL,
        timeout=float(
            getattr(settings, "LLM_EXTRACTOR_TIMEOUT", DEFAULT_TIMEOUT) or DEFAULT_TIMEOUT
        ),
    )
