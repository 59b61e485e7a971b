"""Optional summariser asking an OpenAI-compatible chat-completions endpoint for the sections.

It sees what the extractive summariser sees (the events that may be folded, their tool-result
dependencies, the session's short-term items) and must cite, for each line, the event or item
ids it comes from; ids it makes up are dropped, so every line stays traceable to the
transcript. A failing endpoint raises `StoreUnavailable`; the service then falls back to the
extractive summariser and says so.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings

from memories.compression.summary import (
    SECTIONS,
    TIER,
    SummaryLine,
    SummaryMaterial,
    clip,
    sacrifice_key,
)
from memoryproject.errors import StoreUnavailable
from memoryproject.llm import chat_json

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
MAX_EVENT_CHARS = 600
MAX_EVENTS = 300  # the newest foldable events sent; older ones reach it through the items
MAX_LINE_CHARS = 300
MAX_LINES_PER_SECTION = 12

SYSTEM_PROMPT = f"""\
You compress the older part of an agent's working session so the current task can go on.
Summarise into these sections: {", ".join(SECTIONS)}.
task_goal: what the task is for; latest_requirement: what the user asked last; work_done: \
what was done and found, one line per step worth keeping; decisions_and_constraints: what \
was decided and must hold; problems_and_risks: what is broken, failing or uncertain; \
current_state: where things stand; next_steps: what to do next.
Keep identifiers, numbers, error codes and file names exactly as written. Write in the \
language of the user's messages. Each line is one short sentence. Cite in refs the ids of \
the events (e.g. "e12") or memory items (e.g. "stm_...") it comes from; a line without a \
valid ref is discarded. Leave a section empty rather than guess.
Answer with one JSON object and nothing else:
{{"sections": {{"task_goal": [{{"text": "", "refs": []}}], "work_done": []}}}}"""


class LlmSummariser:
    """Sections written by a chat model, every line citing transcript or item ids."""

    name = "llm"

    def __init__(self, *, base_url: str, api_key: str, model: str, timeout: float) -> None:
        self.url = f"{base_url.rstrip('/')}/chat/completions"
        self.model = model
        self.timeout = timeout
        self._api_key = api_key

    def summarise(self, *, material: SummaryMaterial) -> list[SummaryLine]:
        events = list(material.candidates)[-MAX_EVENTS:]
        content = chat_json(
            url=self.url,
            api_key=self._api_key,
            model=self.model,
            timeout=self.timeout,
            messages=[
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": _prompt(material, events)},
            ],
            label="LLM summariser",
        )
        try:
            answer = json.loads(content)
        except ValueError as exc:
            raise StoreUnavailable(f"LLM summariser: the answer is not JSON ({exc})") from exc
        sections = answer.get("sections") if isinstance(answer, dict) else None
        if not isinstance(sections, dict):
            raise StoreUnavailable("LLM summariser: the answer has no sections")
        return _lines(sections, material)


def _prompt(material: SummaryMaterial, events: list[Any]) -> str:
    parts = []
    if material.task_id:
        parts.append(f"Task: {material.task_id}")
    if material.latest_user is not None:
        parts.append(f"Latest user message: {clip(str(material.latest_user.get('content')), 500)}")
    lines = []
    for event in events:
        event_id = str(event.get("id", ""))
        line: dict[str, Any] = {"id": event_id, "seq": event.get("seq"), "role": event.get("role")}
        dependency = material.dependencies.get(event_id)
        if dependency is not None:
            line["dependency"] = dependency.dependency
        line["content"] = clip(str(event.get("content") or ""), MAX_EVENT_CHARS)
        lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
    parts.append("Events to fold, one JSON object a line:\n" + "\n".join(lines))
    items = [
        json.dumps(
            {
                "id": item.id,
                "type": item.memory_type,
                "subtype": item.subtype,
                "text": item.summary,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for item in material.items
    ]
    if items:
        parts.append("Short-term memory items, one JSON object a line:\n" + "\n".join(items))
    return "\n\n".join(parts)


def _lines(sections: dict[str, Any], material: SummaryMaterial) -> list[SummaryLine]:
    """Valid lines only: known sections, non-empty text, refs to ids the model was given."""
    events = {str(e.get("id", "")): e for e in material.candidates}
    known = set(events) | {item.id for item in material.items}
    for event in (material.first_user, material.latest_user):
        if event is not None:
            known.add(str(event.get("id", "")))
    lines: list[SummaryLine] = []
    for section in SECTIONS:
        given = sections.get(section) or []
        if not isinstance(given, list):
            continue
        for position, entry in enumerate(given[:MAX_LINES_PER_SECTION]):
            text = entry.get("text") if isinstance(entry, dict) else None
            refs = entry.get("refs") if isinstance(entry, dict) else None
            if not isinstance(text, str) or not text.strip() or not isinstance(refs, list):
                continue
            cited = tuple(dict.fromkeys(str(r) for r in refs if str(r) in known))
            if not cited:
                logger.info("LLM summariser line dropped: it cites no known id")
                continue
            order: tuple[float, ...] = (TIER[section], position)
            if section == "work_done" and len(cited) == 1 and cited[0] in events:
                event = events[cited[0]]
                order = (TIER[section], *sacrifice_key(event, material.dependencies, 0))
            lines.append(SummaryLine(section, clip(text.strip(), MAX_LINE_CHARS), cited, order))
    return lines


def llm_summariser() -> LlmSummariser | None:
    """The summariser configured in settings, or None when `LLM_SUMMARISER_URL` is empty."""
    base_url = getattr(settings, "LLM_SUMMARISER_URL", "") or ""
    if not base_url:
        return None
    return LlmSummariser(
        base_url=base_url,
        api_key=getattr(settings, "LLM_SUMMARISER_API_KEY", "") or "",
        model=getattr(settings, "LLM_SUMMARISER_MODEL", "") or "gpt-4o-mini",
        timeout=float(getattr(settings, "LLM_SUMMARISER_TIMEOUT", 0) or DEFAULT_TIMEOUT),
    )
