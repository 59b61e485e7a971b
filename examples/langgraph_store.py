"""A LangGraph graph whose long-term store is the memory service (no model needed).

    MEMORY_API_KEY=<key> .venv/bin/python examples/langgraph_store.py

The first node remembers what the user said under the namespace (user, "memories"); the second
searches that namespace the way a retrieval node would, through the service's recall. Run it
twice: the second run finds what the first stored, because the store is the service.
"""

from __future__ import annotations

import argparse
from typing import TypedDict

from agent_memory_client import MemoryClient
from agent_memory_client.langgraph_store import MemoryStore
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore


class State(TypedDict, total=False):
    user_id: str
    message: str
    question: str
    found: list[str]


def remember(state: State, *, store: BaseStore) -> State:
    namespace = (state["user_id"], "memories")
    store.put(namespace, "deploy", {"text": state["message"]})
    return {}


def look_up(state: State, *, store: BaseStore) -> State:
    namespace = (state["user_id"], "memories")
    return {
        "found": [item.value["text"] for item in store.search(namespace, query=state["question"])]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user", default="u-langgraph-demo")
    args = parser.parse_args()
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("look_up", look_up)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "look_up")
    builder.add_edge("look_up", END)
    with MemoryClient() as memory:
        graph = builder.compile(store=MemoryStore(memory))
        state = graph.invoke(
            {
                "user_id": args.user,
                "message": "I deploy with Terraform, always through the staging cluster first.",
                "question": "How do I deploy?",
            }
        )
    print("found in the store:")
    for text in state["found"]:
        print(f"- {text}")


if __name__ == "__main__":
    main()
