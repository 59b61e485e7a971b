"""The one client of OpenAI-compatible chat-completions endpoints (optional extractor and
summariser). Only the standard library talks to the endpoint, so turning either on needs no
extra dependency; every failure becomes `StoreUnavailable`, named by the caller's label."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import Any

from memoryproject.errors import StoreUnavailable


def chat_json(
    *,
    url: str,
    api_key: str,
    model: str,
    timeout: float,
    messages: list[dict[str, str]],
    label: str,
) -> str:
    """POST a chat completion asking for a JSON object; returns the message's content."""
    body: dict[str, Any] = {
        "model": model,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "messages": messages,
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        request = urllib.request.Request(
            url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raise StoreUnavailable(f"{label}: HTTP {exc.code} from {url}") from exc
    except (OSError, http.client.HTTPException, ValueError) as exc:
        # URLError, timeouts and dropped connections are OSErrors; ValueError is a bad URL.
        raise StoreUnavailable(f"{label}: {url} did not answer ({exc})") from exc
    try:
        content = json.loads(raw)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise StoreUnavailable(f"{label}: {url} did not answer a chat completion") from exc
    if not isinstance(content, str):
        raise StoreUnavailable(f"{label}: the answer has no message content")
    return content
