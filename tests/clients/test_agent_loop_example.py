"""examples/agent_loop.py runs against the service and shows the memory it injected."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent_memory_client import MemoryClient

ROOT = Path(__file__).resolve().parents[2]


def test_the_agent_loop_example_runs_and_shows_injected_memory(
    service_url: str, api_key: str
) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AGENT_LLM_")},
        "MEMORY_API_URL": service_url,
        "MEMORY_API_KEY": api_key,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "clients" / "python"), str(ROOT)]),
    }
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_loop.py"), "--session", "s-loop"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    print(run.stdout)
    turns = run.stdout.split("--- turn ")[1:]
    assert len(turns) == 3
    assert all("memory injected (" in turn and "assistant: " in turn for turn in turns)
    assert "Terraform" in turns[2]  # the first turn's request to remember reached the last
    with MemoryClient(service_url, api_key=api_key) as memory:
        said = [e["role"] for e in memory.iter_events("s-loop") if e["role"] != "system"]
    assert said == ["user", "assistant"] * 3
