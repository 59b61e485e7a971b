"""An OpenAI Agents SDK `Session` kept in the memory service's transcripts (extra `openai-agents`).

    from agents import Agent, Runner
    from agent_memory_client import AsyncMemoryClient
    from agent_memory_client.openai_agents import MemorySession

    memory = AsyncMemoryClient()  # $MEMORY_API_URL, $MEMORY_API_KEY
    session = MemorySession("s-1", user_id="u-1", client=memory)
    await Runner.run(Agent(name="helper"), "I deploy with Terraform.", session=session)

Every item the runner adds becomes one event of the session's transcript (Layer 0), so what the
user says is extracted into memory as any conversation is, and the item itself rides in the
event's metadata, so `get_items` gives back exactly what was added. The transcript is
append-only: `pop_item` and `clear_session` append a marker event and `get_items` leaves out
what the markers removed, while the audit keeps the whole history. Events the session did not
write (turns appended through the API, recall records) are read as plain user or assistant
messages, or left out when they are neither.
"""

from __future__ import annotations

import json
from typing import Any

from agent_memory_client.client import AsyncMemoryClient
from agent_memory_client.errors import NotFound
from agent_memory_client.models import EventIn, EventOut

ITEM_KEY = "openai_agents_item"  # the item as added, in the event's metadata
MARKER_KEY = "openai_agents_removed"  # on a marker: the seqs it removes ("all": up to itself)


class MemorySession:
    """The Agents SDK's session protocol over one session of the service."""

    session_settings: Any = None  # the SDK's SessionSettings; None: its defaults

    def __init__(
        self, session_id: str, *, user_id: str, client: AsyncMemoryClient, task_id: str = ""
    ) -> None:
        self.session_id = session_id
        self.user_id = user_id
        self.task_id = task_id
        self._memory = client

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The session's items in order (the latest `limit` of them)."""
        items = [item for _, item in await self._live()]
        return items[-limit:] if limit else items

    async def add_items(self, items: list[Any]) -> None:
        """Append the items as one batch of events (all or nothing)."""
        if items:
            events = [_event(dict(item)) for item in items]
            await self._memory.append_events(
                self.session_id, user_id=self.user_id, events=events, task_id=self.task_id
            )

    async def pop_item(self) -> Any | None:
        """Remove and return the latest item (None when the session has none)."""
        live = await self._live()
        if not live:
            return None
        seq, item = live[-1]
        await self._mark({"seqs": [seq]}, f"removed the session's item {seq}")
        return item

    async def clear_session(self) -> None:
        """Remove every item so far."""
        await self._mark({"all": True}, "cleared the session's items")

    async def _mark(self, removed: dict[str, Any], text: str) -> None:
        await self._memory.append_events(
            self.session_id,
            user_id=self.user_id,
            events=[{"role": "system", "content": text, "metadata": {MARKER_KEY: removed}}],
            task_id=self.task_id,
        )

    async def _live(self) -> list[tuple[int, Any]]:
        """(seq, item) of every item no marker removed, in order."""
        events = await self._events()
        if events is None:
            return []
        live: dict[int, Any] = {}
        for event in events:
            marker = event["metadata"].get(MARKER_KEY)
            if isinstance(marker, dict):
                if marker.get("all"):
                    live.clear()
                for seq in marker.get("seqs", ()):
                    live.pop(int(seq), None)
                continue
            item = _item(event)
            if item is not None:
                live[event["seq"]] = item
        return list(live.items())

    async def _events(self) -> list[EventOut] | None:
        try:
            return [event async for event in self._memory.iter_events(self.session_id)]
        except NotFound:  # nothing was added yet
            return None


def _event(item: dict[str, Any]) -> EventIn:
    """One event of the transcript for an item the runner adds."""
    kind = item.get("type", "message")
    role = item.get("role")
    metadata = {ITEM_KEY: item}
    if kind == "function_call_output":
        return {
            "role": "tool",
            "content": _text(item.get("output")),
            "tool_call_id": str(item.get("call_id") or "call"),
            "metadata": metadata,
        }
    if kind == "message" and role in ("user", "assistant", "system"):
        return {"role": role, "content": _text(item.get("content")), "metadata": metadata}
    if kind == "message" and role == "developer":
        return {"role": "system", "content": _text(item.get("content")), "metadata": metadata}
    # Tool calls, reasoning and the like are the model's: kept, as assistant events.
    return {"role": "assistant", "content": _described(item), "metadata": metadata}


def _item(event: EventOut) -> Any | None:
    """The item an event holds: the one added, or a plain message for an event from elsewhere."""
    kept = event["metadata"].get(ITEM_KEY)
    if isinstance(kept, dict):
        return kept
    if event["role"] in ("user", "assistant") and event["content"]:
        return {"role": event["role"], "content": event["content"]}
    return None


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text") or part.get("refusal") or "")
            for part in content
            if isinstance(part, dict)
        ]
        return "\n".join(part for part in parts if part)
    return json.dumps(content, ensure_ascii=False, default=str)


def _described(item: dict[str, Any]) -> str:
    if item.get("type") == "function_call":
        return f"[tool call] {item.get('name', '')}({item.get('arguments', '')})"
    return f"[{item.get('type', 'item')}]"
