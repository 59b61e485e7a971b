"""examples/langgraph_store.py and examples/openai_agents_session.py run against the service."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_example(name: str, service_url: str, api_key: str, *args: str) -> str:
    env = {
        **os.environ,
        "MEMORY_API_URL": service_url,
        "MEMORY_API_KEY": api_key,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "clients" / "python"), str(ROOT)]),
    }
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_langgraph_example_finds_what_it_stored(service_url: str, api_key: str) -> None:
    pytest.importorskip("langgraph")

    out = run_example("langgraph_store.py", service_url, api_key, "--user", "u-example")

    assert "- I deploy with Terraform, always through the staging cluster first." in out


def test_the_openai_agents_example_reads_its_history_back(service_url: str, api_key: str) -> None:
    pytest.importorskip("agents")

    out = run_example("openai_agents_session.py", service_url, api_key, "--session", "s-example")

    assert out.splitlines()[-1] == (
        "assistant: Earlier you said: Please remember that I deploy with Terraform."
    )
