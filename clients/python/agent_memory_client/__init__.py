"""Python client of the agent memory service: `MemoryClient` (sync), `AsyncMemoryClient`."""

from agent_memory_client._core import NO_RETRIES, RetryPolicy, new_event_id
from agent_memory_client.client import AsyncMemoryClient, MemoryClient
from agent_memory_client.errors import (
    Conflict,
    Gone,
    InvalidRequest,
    MemoryServiceError,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    ServerError,
    StoreUnavailable,
    Throttled,
    TransportError,
    Unauthenticated,
    UnsupportedMediaType,
)

__all__ = [
    "NO_RETRIES",
    "AsyncMemoryClient",
    "Conflict",
    "Gone",
    "InvalidRequest",
    "MemoryClient",
    "MemoryServiceError",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "RetryPolicy",
    "ServerError",
    "StoreUnavailable",
    "Throttled",
    "TransportError",
    "Unauthenticated",
    "UnsupportedMediaType",
    "new_event_id",
]
