"""The MCP server, driven by the official `mcp` client over stdio (and streamable HTTP) against
the running service."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_memory_client import MemoryClient
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memories.review.models import DeletionRequest

SDK = Path(__file__).resolve().parents[2] / "clients" / "python"
TOOLS = {
    "record_events",
    "recall_context",
    "propose_memories",
    "search_memory",
    "search_history",
    "compress_session",
    "list_memories",
    "get_memory",
    "update_memory",
    "delete_memory",
    "list_cards",
    "get_card",
    "update_card",
    "delete_card",
    "get_profile",
    "get_user_memories",
    "forget_user",
}


def _env(service_url: str, api_key: str) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(SDK), os.environ.get("PYTHONPATH", "")]))
    return {
        **os.environ,
        "MEMORY_API_URL": service_url,
        "MEMORY_API_KEY": api_key,
        "PYTHONPATH": path,
    }


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return json.loads(result.content[0].text)


async def _session_of_tools(client: Client) -> dict[str, Any]:
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert tools == TOOLS
    seen: dict[str, Any] = {}
    seen["record"] = _data(
        await client.call_tool(
            "record_events",
            {
                "session_id": "s-mcp",
                "user_id": "u-mcp",
                "events": [
                    {"role": "user", "content": "Please remember that my cat is called Miso."},
                    {"role": "assistant", "content": "I will remember Miso."},
                ],
            },
        )
    )
    seen["propose"] = _data(
        await client.call_tool(
            "propose_memories",
            {
                "proposals": [
                    {
                        "user_id": "u-mcp",
                        "session_id": "s-mcp",
                        "memory_type": "fact",
                        "summary": "The user's cat is called Miso.",
                        "remember": True,
                        "confidence": 0.9,
                    }
                ]
            },
        )
    )
    seen["recall"] = _data(
        await client.call_tool(
            "recall_context",
            {
                "user_id": "u-mcp",
                "session_id": "s-mcp",
                "query": "What is my cat called?",
                "layers": ["postgres", "redis"],
            },
        )
    )
    seen["search"] = _data(await client.call_tool("search_memory", {"query": "cat Miso"}))
    seen["history"] = _data(
        await client.call_tool(
            "search_history",
            {"user_id": "u-mcp", "session_id": "s-mcp", "query": "what did I say about my cat"},
        )
    )
    seen["compress"] = _data(
        await client.call_tool("compress_session", {"session_id": "s-mcp", "budget_tokens": 200})
    )
    seen["list"] = _data(await client.call_tool("list_memories", {"user_id": "u-mcp"}))
    first = seen["list"]["items"][0]["id"]
    seen["get"] = _data(await client.call_tool("get_memory", {"item_id": first}))
    seen["update"] = _data(
        await client.call_tool("update_memory", {"item_id": first, "tags": ["pets"]})
    )
    seen["profile"] = _data(await client.call_tool("get_profile", {"user_id": "u-mcp"}))
    seen["everything"] = _data(await client.call_tool("get_user_memories", {"user_id": "u-mcp"}))
    seen["cards"] = _data(await client.call_tool("list_cards", {"user_id": "u-mcp"}))
    seen["no card update"] = await client.call_tool(
        "update_card", {"memory_id": "ltm_missing", "tags": ["x"]}
    )
    seen["no card"] = await client.call_tool("get_card", {"memory_id": "ltm_missing"})
    templates = (await client.list_resource_templates()).resource_templates
    seen["templates"] = {template.uri_template for template in templates}
    transcript = await client.read_resource("memory://sessions/s-mcp/transcript")
    seen["transcript"] = json.loads(transcript.contents[0].text)
    profile = await client.read_resource("memory://users/u-mcp/profile")
    seen["profile resource"] = json.loads(profile.contents[0].text)
    prompts = (await client.list_prompts()).prompts
    seen["prompts"] = {prompt.name for prompt in prompts}
    prompt = await client.get_prompt(
        "answer_with_memory",
        {"user_id": "u-mcp", "session_id": "s-mcp", "message": "What is my cat called?"},
    )
    seen["prompt"] = prompt.messages[0].content.text
    seen["delete"] = _data(await client.call_tool("delete_memory", {"item_id": first}))
    seen["after delete"] = _data(await client.call_tool("list_memories", {"user_id": "u-mcp"}))
    seen["forget"] = _data(await client.call_tool("forget_user", {"user_id": "u-mcp"}))
    refused = await client.call_tool(
        "record_events",
        {"session_id": "s-mcp", "user_id": "u-other", "events": [{"role": "user", "content": "x"}]},
    )
    assert refused.is_error
    seen["refused"] = refused.content[0].text
    return seen


def first_id(seen: dict[str, Any]) -> str:
    return str(seen["list"]["items"][0]["id"])


def _check(seen: dict[str, Any], tenant, service_url: str, api_key: str) -> None:
    assert seen["record"]["created"] and seen["record"]["event_count"] == 2
    assert seen["propose"]["results"][0]["accepted"]
    assert "Miso" in seen["recall"]["injection_text"]
    assert any("Miso" in item["text"] for item in seen["recall"]["items"])
    assert isinstance(seen["search"]["hits"], list)
    assert isinstance(seen["history"]["entries"], list)
    assert seen["compress"]["within_budget"] in (True, False)
    assert seen["forget"]["status"] == "pending" and seen["forget"]["kind"] == "user"
    assert any("Miso" in item["summary"] for item in seen["list"]["items"])
    assert seen["get"]["id"] == seen["list"]["items"][0]["id"] and "provenance" in seen["get"]
    assert seen["update"]["outcome"] == "updated" and seen["update"]["item"]["tags"] == ["pets"]
    assert seen["profile"]["user_id"] == "u-mcp"
    assert seen["everything"]["profile"]["user_id"] == "u-mcp"
    assert first_id(seen) in {item["id"] for item in seen["everything"]["items"]}
    assert seen["cards"]["cards"] == []
    assert seen["no card update"].is_error
    assert "not_found" in seen["no card update"].content[0].text
    assert seen["no card"].is_error and "not_found" in seen["no card"].content[0].text
    assert seen["templates"] == {
        "memory://sessions/{session_id}/transcript",
        "memory://users/{user_id}/profile",
    }
    said = [e["content"] for e in seen["transcript"]["events"] if e["role"] == "user"]
    assert said[0] == "Please remember that my cat is called Miso."
    assert seen["profile resource"]["user_id"] == "u-mcp"
    assert seen["prompts"] == {"answer_with_memory"}
    assert "Miso" in seen["prompt"] and seen["prompt"].endswith("What is my cat called?")
    deleted = seen["delete"]["deleted"]
    assert deleted not in {item["id"] for item in seen["after delete"]["items"]}
    assert "conflict: " in seen["refused"]  # another user's session; nothing written
    with MemoryClient(service_url, api_key=api_key) as memory:
        turns = [e for e in memory.iter_events("s-mcp") if e["role"] != "system"]  # not recalls
    assert [e["role"] for e in turns] == ["user", "assistant"]
    assert DeletionRequest.objects.filter(tenant=tenant, target="u-mcp").count() == 1


def test_the_mcp_server_over_stdio(service_url: str, api_key: str, tenant) -> None:
    async def drive() -> dict[str, Any]:
        server = StdioServerParameters(
            command=sys.executable,
            args=["-m", "agent_memory_client.mcp_server"],
            env=_env(service_url, api_key),
        )
        async with Client(server, read_timeout_seconds=60) as client:
            return await _session_of_tools(client)

    _check(asyncio.run(drive()), tenant, service_url, api_key)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_mcp_server_over_streamable_http(service_url: str, api_key: str, tenant) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_memory_client.mcp_server", "--transport", "streamable-http"]
        + ["--port", str(port)],
        env=_env(service_url, api_key),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            pytest.fail("the MCP server did not start listening")

        async def drive() -> dict[str, Any]:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=60) as client:
                return await _session_of_tools(client)

        _check(asyncio.run(drive()), tenant, service_url, api_key)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _stdio_call_stderr(service_url: str, api_key: str, *args: str) -> str:
    """What the stdio server writes to stderr while it records one event for a client."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "record_events",
                "arguments": {
                    "session_id": "s-quiet",
                    "user_id": "u-quiet",
                    "events": [{"role": "user", "content": "hello"}],
                },
            },
        },
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_memory_client.mcp_server", *args],
        env={**_env(service_url, api_key), "MEMORY_MCP_LOG_LEVEL": ""},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr
    for message in messages:
        process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()
    while answer := process.stdout.readline():  # the call's answer, then end the session
        if json.loads(answer).get("id") == 2:
            assert "error" not in json.loads(answer), answer
            break
    process.stdin.close()
    stderr = process.stderr.read()
    process.wait(timeout=30)
    return stderr


def test_the_mcp_server_is_quiet_on_stdio_unless_asked(service_url: str, api_key: str) -> None:
    assert _stdio_call_stderr(service_url, api_key) == ""
    assert "HTTP Request: POST" in _stdio_call_stderr(service_url, api_key, "--log-level", "info")
