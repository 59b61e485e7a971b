"""An OpenAI Agents SDK agent whose session history lives in the memory service.

    MEMORY_API_KEY=<key> .venv/bin/python examples/openai_agents_session.py

The model is scripted (no LLM needed): it answers from the conversation the runner hands it,
which the runner reads back from the service through `MemorySession`. Give the Agent a real
model (and OPENAI_API_KEY) to let one answer instead. What the user says lands in the service's
transcript, so the service extracts memory from it as from any conversation.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from agent_memory_client import AsyncMemoryClient
from agent_memory_client.openai_agents import MemorySession
from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

SCRIPT = [
    "Please remember that I deploy with Terraform.",
    "As I said earlier, how do I deploy?",
]


class ScriptedModel(Model):
    """Repeats back the user's earlier turns it was given: proof the history came along."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        said = [
            item["content"]
            for item in input
            if isinstance(item, dict) and item.get("role") == "user"
        ]
        earlier = said[:-1]
        text = f"Earlier you said: {' / '.join(earlier)}" if earlier else "Noted."
        message = ResponseOutputMessage(
            id="msg_scripted",
            content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
            role="assistant",
            status="completed",
            type="message",
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def run(session_id: str, user_id: str) -> None:
    set_tracing_disabled(True)
    agent = Agent(name="helper", instructions="Answer briefly.", model=ScriptedModel())
    async with AsyncMemoryClient() as memory:
        for message in SCRIPT:
            # A new session object per turn, as a new process would have: the history comes
            # from the service.
            session = MemorySession(session_id, user_id=user_id, client=memory)
            result = await Runner.run(agent, message, session=session)
            print(f"user: {message}\nassistant: {result.final_output}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", default="s-agents-demo")
    parser.add_argument("--user", default="u-agents-demo")
    args = parser.parse_args()
    asyncio.run(run(args.session, args.user))


if __name__ == "__main__":
    main()
