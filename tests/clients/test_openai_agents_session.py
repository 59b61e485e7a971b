"""The OpenAI Agents SDK's runner keeps its conversation in the service through MemorySession:
the framework's own code path, with a scripted model in place of a remote one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

agents = pytest.importorskip("agents")

from agent_memory_client import AsyncMemoryClient, MemoryClient  # noqa: E402
from agent_memory_client.openai_agents import MemorySession  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import ResponseOutputMessage, ResponseOutputText  # noqa: E402

USER, SESSION = "u-agents", "s-agents"


class ScriptedModel(Model):
    """Answers each turn with the next of its replies, and keeps what it was given."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions, input, *args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        self.inputs.append(input)
        text = self.replies.pop(0)
        message = ResponseOutputMessage(
            id=f"msg_{len(self.inputs)}",
            content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
            role="assistant",
            status="completed",
            type="message",
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def test_the_runner_keeps_its_conversation_in_the_service(service_url: str, api_key: str) -> None:
    agents.set_tracing_disabled(True)
    model = ScriptedModel(["Noted: you deploy with Terraform.", "You deploy with Terraform."])
    agent = agents.Agent(name="helper", instructions="Be brief.", model=model)

    async def scenario() -> dict[str, Any]:
        async with AsyncMemoryClient(service_url, api_key=api_key) as memory:
            session = MemorySession(SESSION, user_id=USER, client=memory)
            first = await agents.Runner.run(
                agent, "Please remember that I deploy with Terraform.", session=session
            )
            # A new session object (a new process, say) reads the history from the service.
            again = MemorySession(SESSION, user_id=USER, client=memory)
            second = await agents.Runner.run(agent, "How do I deploy?", session=again)
            seen = {"first": first.final_output, "second": second.final_output}
            seen["items"] = await again.get_items()
            seen["latest"] = await again.get_items(limit=1)
            seen["popped"] = await again.pop_item()
            seen["after pop"] = await again.get_items()
            await again.clear_session()
            seen["after clear"] = await again.get_items()
            return seen

    seen = asyncio.run(scenario())

    assert seen["first"] == "Noted: you deploy with Terraform."
    said = [item for item in model.inputs[1] if item.get("role") == "user"]
    assert [item["content"] for item in said] == [
        "Please remember that I deploy with Terraform.",
        "How do I deploy?",
    ]
    assert [item.get("role") for item in seen["items"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert seen["latest"] == seen["items"][-1:] and seen["popped"] == seen["items"][-1]
    assert seen["after pop"] == seen["items"][:-1] and seen["after clear"] == []
    with MemoryClient(service_url, api_key=api_key) as memory:
        events = list(memory.iter_events(SESSION))
    turns = [(e["role"], e["content"]) for e in events if e["role"] != "system"]
    assert turns[:2] == [
        ("user", "Please remember that I deploy with Terraform."),
        ("assistant", "Noted: you deploy with Terraform."),
    ]
    assert len(turns) == 4  # nothing removed from the append-only transcript


def test_a_session_nothing_was_added_to_is_empty(service_url: str, api_key: str) -> None:
    async def scenario() -> tuple[list[Any], Any]:
        async with AsyncMemoryClient(service_url, api_key=api_key) as memory:
            session = MemorySession("s-never", user_id=USER, client=memory)
            return await session.get_items(), await session.pop_item()

    assert asyncio.run(scenario()) == ([], None)
