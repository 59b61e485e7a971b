"""A minimal agent loop on the memory service: recall before each turn, append after it.

    MEMORY_API_KEY=<key> .venv/bin/python examples/agent_loop.py   # MEMORY_API_URL: 127.0.0.1:8000

The model is scripted (no LLM needed): it answers from the memory injected into its prompt. Set
AGENT_LLM_URL (an OpenAI-compatible `.../v1`), AGENT_LLM_API_KEY and AGENT_LLM_MODEL to let a
real model answer instead. Every turn prints the memory the service injected.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid

import httpx
from agent_memory_client import MemoryClient

SCRIPT = [
    "Hi! Please remember that I deploy everything with Terraform and I like short answers.",
    "My staging cluster is called kestrel-eu.",
    "I need to deploy the billing service to staging. As I said, how do I deploy it?",
]


def scripted_model(system: str, user: str) -> str:
    """A stand-in model: acknowledges, and says which remembered lines it would rely on."""
    remembered = [line.strip("- ").strip() for line in system.splitlines() if line.startswith("-")]
    if not remembered:
        return "Noted."
    return "Noted. From memory: " + "; ".join(remembered[:3])


def llm_model(system: str, user: str) -> str:
    """An OpenAI-compatible chat completion."""
    answer = httpx.post(
        os.environ["AGENT_LLM_URL"].rstrip("/") + "/chat/completions",
        headers={"Authorization": f"Bearer {os.environ.get('AGENT_LLM_API_KEY', '')}"},
        json={
            "model": os.environ.get("AGENT_LLM_MODEL", "gpt-4o-mini"),
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
        },
        timeout=60,
    )
    answer.raise_for_status()
    return str(answer.json()["choices"][0]["message"]["content"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--user", default="u_demo")
    parser.add_argument("--session", default=f"demo-{uuid.uuid4().hex[:8]}")
    args = parser.parse_args(argv)
    model = llm_model if os.environ.get("AGENT_LLM_URL") else scripted_model

    with MemoryClient() as memory:  # MEMORY_API_URL and MEMORY_API_KEY
        for turn, user_message in enumerate(SCRIPT, start=1):
            recalled = memory.recall(user_id=args.user, session_id=args.session, query=user_message)
            injected = recalled["injection_text"]
            print(f"--- turn {turn}")
            print(f"user: {user_message}")
            print(
                f"memory injected ({len(recalled['items'])} items, "
                f"{recalled['token_estimate']} tokens"
                + (f", degraded: {', '.join(recalled['degraded'])}" if recalled["degraded"] else "")
                + "):"
            )
            print("\n".join(f"  | {line}" for line in injected.splitlines()) or "  | (nothing)")
            reply = model(f"You are a helpful assistant.\n{injected}", user_message)
            print(f"assistant: {reply}")
            memory.append_events(
                args.session,
                user_id=args.user,
                events=[
                    {"role": "user", "content": user_message},
                    {"role": "assistant", "content": reply},
                ],
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
