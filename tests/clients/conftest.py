"""The SDK, the MCP server and the example run against the service over real HTTP: pytest-django's
live server (tasks run eagerly, as in the API tests), on the real stores."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from agent_memory_client import MemoryClient

from profiles.models import Tenant
from profiles.services.api_keys import api_key_create

ALL_SCOPES = ("read", "write", "admin")


@pytest.fixture
def service_url(live_server, transactional_db: None) -> str:
    return str(live_server.url)


@pytest.fixture
def key_for() -> Callable[..., str]:
    def make(tenant: Tenant, scopes: tuple[str, ...] = ALL_SCOPES) -> str:
        _, secret = api_key_create(tenant=tenant, name="sdk", scopes=scopes)
        return secret

    return make


@pytest.fixture
def api_key(tenant: Tenant, key_for: Callable[..., str]) -> str:
    return key_for(tenant)


@pytest.fixture
def memory(service_url: str, api_key: str) -> Iterator[MemoryClient]:
    with MemoryClient(service_url, api_key=api_key) as client:
        yield client


@pytest.fixture
def stranger_memory(
    service_url: str, other_tenant: Tenant, key_for: Callable[..., str]
) -> Iterator[MemoryClient]:
    with MemoryClient(service_url, api_key=key_for(other_tenant)) as client:
        yield client
