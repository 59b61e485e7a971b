"""What the sync and async clients share: configuration, operations, retries, answers."""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote

import httpx

from agent_memory_client.errors import error_for

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
ENV_BASE_URL = "MEMORY_API_URL"
ENV_API_KEY = "MEMORY_API_KEY"
USER_AGENT = "agent-memory-client/0.1"


@dataclass(frozen=True)
class RetryPolicy:
    """Retry 429 and 503 answers (the service wrote nothing) up to `retries` times.

    Each wait is the answer's `Retry-After` (seconds or an HTTP date, at most
    `max_retry_after`) or else exponential backoff with full jitter: a random time up to
    `backoff · 2^attempt`, at most `max_backoff`. Transport errors (no answer) are retried
    only for operations safe to repeat: reads, and appends whose events all carry ids.
    """

    retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 30.0
    max_retry_after: float = 120.0
    statuses: frozenset[int] = frozenset({429, 503})

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))


NO_RETRIES = RetryPolicy(retries=0)


def retry_after_seconds(value: str | None) -> float | None:
    """The `Retry-After` header as seconds to wait (RFC 9110: delay-seconds or HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


def new_event_id() -> str:
    """A client event id: the service answers a retried append with the same ids as the
    original one and writes nothing."""
    return f"evt-{uuid.uuid4().hex}"


def segment(value: str) -> str:
    """One path segment, quoted."""
    return quote(str(value), safe="")


def drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


@dataclass(frozen=True)
class Operation:
    """One API call: what to send, and whether a call without an answer may be repeated."""

    method: str
    path: str
    json: Any = None
    params: dict[str, Any] | None = None
    repeatable: bool = False
    expect_body: bool = True


@dataclass
class Config:
    base_url: str
    api_key: str
    timeout: float
    retry: RetryPolicy
    headers: dict[str, str] = field(default_factory=dict)
    event_id: Callable[[], str] = new_event_id

    @classmethod
    def build(
        cls,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        retry: RetryPolicy | None,
        headers: Mapping[str, str] | None,
        event_id: Callable[[], str] | None,
    ) -> Config:
        base = base_url or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL
        key = api_key if api_key is not None else os.environ.get(ENV_API_KEY, "")
        if not key:
            raise ValueError(f"No API key: pass api_key= or set {ENV_API_KEY}.")
        return cls(
            base_url=base.rstrip("/"),
            api_key=key,
            timeout=timeout,
            retry=retry or RetryPolicy(),
            headers={
                "Authorization": f"Bearer {key}",
                "Accept": "application/json",
                "User-Agent": USER_AGENT,
                **(headers or {}),
            },
            event_id=event_id or new_event_id,
        )


def with_event_ids(events: list[Any], make_id: Callable[[], str]) -> list[dict[str, Any]]:
    """The events, each with an `id` (a new one where missing), so a retry is idempotent."""
    return [{**event, "id": event.get("id") or make_id()} for event in events]


def answer(response: httpx.Response, operation: Operation) -> Any:
    """The decoded body of a successful answer; an error answer raises its exception."""
    if response.status_code >= 400:
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        raise error_for(
            response.status_code, body, retry_after_seconds(response.headers.get("Retry-After"))
        )
    if not operation.expect_body or response.status_code == 204 or not response.content:
        return None
    return response.json()


def should_retry(response: httpx.Response, policy: RetryPolicy, attempt: int) -> bool:
    return response.status_code in policy.statuses and attempt < policy.retries
