"""The README's quickstart works as written: every shell block marked `<!-- quickstart -->` runs,
in order and in one shell, against a live service with a real worker, and the MCP client
configuration it shows starts the MCP server with the tools it names.

The first block, `./scripts/run.sh`, is not run: the test stands in for it with pytest-django's
live server, a Celery worker of its own on the test database and broker queue, and the demo
tenant `run.sh` seeds. Every block after it runs as the README gives it, with the service's
address (`http://127.0.0.1:8000`) replaced by the live server's and `.venv/bin/python` by this
interpreter. Each curl answer's status is checked (a wrapper makes curl print it), the recall
in a new session must inject the recorded statement, and the promotion scan must propose it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from profiles.demo import demo_seed
from profiles.models import Tenant
from profiles.services.api_keys import api_key_create
from tests.clients.test_mcp_server import TOOLS
from tests.memories.conftest import publish_to_broker, worker, worker_env  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_URL = "http://127.0.0.1:8000"
STATEMENT = "I deploy with Terraform"
# curl, as the blocks call it, also prints each answer's status on a line of its own.
CURL_WITH_STATUS = "curl() { command curl --write-out '\\nHTTP %{http_code}\\n' \"$@\"; }\n"
BLOCK_MARK = "=== block "

pytestmark = pytest.mark.django_db(transaction=True)


def _section() -> str:
    text = README.read_text()
    start = text.index("## Quickstart")
    return text[start : text.index("\n## ", start + 1)]


def _blocks(marker: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced block right after `<!-- marker -->`."""
    pattern = rf"<!-- {re.escape(marker)} -->\n```(\w*)\n(.*?)\n```"
    return re.findall(pattern, _section(), flags=re.DOTALL)


def _answers(output: str) -> list[tuple[int, str]]:
    """(status, body) of each curl answer in a block's output: the service answers JSON on one
    line, the line before the status."""
    lines = output.splitlines()
    return [
        (int(status.group(1)), lines[index - 1] if index else "")
        for index, line in enumerate(lines)
        if (status := re.fullmatch(r"HTTP (\d{3})", line))
    ]


def _service_env() -> dict[str, str]:
    """manage.py beside the live server: the test database and this run's stores."""
    settings_dict = connection.settings_dict
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "DATABASE_URL": (
            f"postgres://{settings_dict['USER']}@{settings_dict['HOST'] or '127.0.0.1'}:"
            f"{settings_dict['PORT'] or 5432}/{settings_dict['NAME']}"
        ),
    }


def _wait_until_ready(process: subprocess.Popen[bytes]) -> None:
    """What run.sh waits for before it prints the key: a worker taking tasks."""
    deadline = time.monotonic() + 120
    log_path: Path = process.log_path  # type: ignore[attr-defined]
    while " ready." not in log_path.read_text():
        assert process.poll() is None, log_path.read_text()
        assert time.monotonic() < deadline, "the worker did not start"
        time.sleep(0.5)


def test_the_quickstart_runs_as_written(
    live_server,
    worker,  # noqa: F811
    publish_to_broker,  # noqa: F811
) -> None:
    blocks = _blocks("quickstart")
    assert [language for language, _ in blocks] == ["sh"] * len(blocks) and len(blocks) >= 4
    assert "./scripts/run.sh" in _section()  # the one step this test stands in for
    demo_seed(username="demo-admin", password="quickstart-password")
    _wait_until_ready(worker)

    script = CURL_WITH_STATUS
    for number, (_, body) in enumerate(blocks):
        body = body.replace(README_URL, live_server.url).replace(".venv/bin/python", sys.executable)
        script += f"echo '{BLOCK_MARK}{number}'\n{body}\n"
    run = subprocess.run(
        ["bash", "-eu", "-c", script],
        cwd=ROOT,
        env=_service_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    if os.environ.get("QUICKSTART_SHOW"):
        sys.stdout.write(run.stdout)
    outputs = [part.split("\n", 1)[1] for part in run.stdout.split(BLOCK_MARK)[1:]]
    assert len(outputs) == len(blocks), run.stdout

    answers = {}
    for output, (_, body) in zip(outputs, blocks, strict=True):
        calls = _answers(output)
        for status, answer in calls:
            assert 200 <= status < 300, (body, status, answer)
        if "/v1/" in body:
            assert calls, (body, output)
        for path in ("/events", "/v1/memories/stm", "/v1/recall", "/v1/promotions"):
            if path in body and calls:
                answers[path] = calls[-1]

    assert answers["/events"][0] == 201  # a new append
    items = json.loads(answers["/v1/memories/stm"][1])["items"]
    assert any(STATEMENT in item["summary"] for item in items), items
    recalled = json.loads(answers["/v1/recall"][1])
    assert STATEMENT in recalled["injection_text"], recalled
    proposals = json.loads(answers["/v1/promotions"][1])["promotions"]
    assert any(STATEMENT in json.dumps(p["proposal"]) for p in proposals), proposals


def test_the_mcp_configuration_starts_the_server_with_the_tools_named(live_server) -> None:
    [(language, body)] = _blocks("quickstart: mcp config")
    assert language == "json"
    [server] = json.loads(body)["mcpServers"].values()
    command = str(ROOT / ".venv" / server["command"].split("/.venv/", 1)[1])
    tenant = Tenant.objects.create(slug="quickstart", name="Quickstart")
    _, key = api_key_create(tenant=tenant, name="mcp", scopes=["read", "write"])
    env = {
        **server["env"],
        "MEMORY_API_URL": server["env"]["MEMORY_API_URL"].replace(README_URL, live_server.url),
        "MEMORY_API_KEY": key,
    }
    assert set(server["env"]) == {"MEMORY_API_URL", "MEMORY_API_KEY"}
    assert server["env"]["MEMORY_API_URL"] == README_URL

    async def listed() -> set[str]:
        parameters = StdioServerParameters(command=command, env=env)
        async with Client(parameters, read_timeout_seconds=60) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    tools = asyncio.run(listed())
    assert tools == TOOLS
    named = set(re.findall(r"`(\w+)`", _section()))
    assert tools <= named, tools - named
