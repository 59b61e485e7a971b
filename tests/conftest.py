"""Connects to the real stores under this run's own names and removes them afterwards.

Nothing is started here: scripts/test.sh starts the local stores before pytest.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.urls import Resolver404
from rest_framework.test import APIClient

from memories.history.search import history_search_index
from memories.history.vectors import history_vector_index
from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memories.services import stores_ensure
from memoryproject import redis_keys as keys
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_client import redis_connection
from profiles.models import Tenant
from profiles.services.api_keys import api_key_create
from tests.factories import TenantFactory
from tests.schema_check import response_problems

START_HINT = "start the local stores with ./scripts/test.sh (it runs pytest after starting them)"


def _redis_keys() -> list[bytes]:
    return list(redis_connection().scan_iter(match=keys.all_keys_pattern(), count=1000))


@pytest.fixture(scope="session", autouse=True)
def real_stores() -> Iterator[None]:
    """Fail fast, naming the store, when one is not reachable; clean up this run's names."""
    checks: dict[str, Callable[[], object]] = {
        f"Redis at {settings.REDIS_URL}": lambda: redis_connection().ping(),
        f"Elasticsearch at {settings.ELASTICSEARCH_URL}": lambda: card_search_index().ping(),
        f"Milvus at {settings.MILVUS_URI}": lambda: vector_index().ping(),
    }
    for name, check in checks.items():
        try:
            check()
        except (StoreUnavailable, OSError, Exception) as exc:
            pytest.exit(f"{name} is not reachable ({exc}); {START_HINT}", returncode=3)
    stores_ensure()
    yield
    card_search_index().drop()
    vector_index().drop()
    history_search_index().drop()
    history_vector_index().drop()
    stale = _redis_keys()
    if stale:
        redis_connection().delete(*stale)
    shutil.rmtree(Path(settings.STORAGES["transcripts"]["OPTIONS"]["location"]).parent, True)
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    leftovers = list(broker.scan_iter(match=f"*{queue}*", count=1000))
    if leftovers:
        broker.delete(*leftovers)


@pytest.fixture(autouse=True)
def answers_match_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every answer an APIClient gets in the suite validates against the OpenAPI schema."""
    request = APIClient.request

    def checked(self: APIClient, **kwargs: object) -> object:
        response = request(self, **kwargs)
        try:
            route = response.resolver_match.route or ""
        except Resolver404:  # no such path: nothing in the schema to check it against
            route = ""
        problems = response_problems(
            str(kwargs.get("REQUEST_METHOD", "")), route, response.status_code, response
        )
        assert not problems, "\n".join(["The answer does not match the schema:", *problems])
        return response

    monkeypatch.setattr(APIClient, "request", checked)


@pytest.fixture
def tenant(db: None) -> Tenant:
    return TenantFactory()


@pytest.fixture
def other_tenant(db: None) -> Tenant:
    return TenantFactory()


@pytest.fixture
def client_for() -> Callable[..., APIClient]:
    """An API client authenticated with a new key of `tenant` holding `scopes`."""

    def make(
        tenant: Tenant, scopes: tuple[str, ...] = ("read", "write"), *, trusted_writer: bool = False
    ) -> APIClient:
        _, secret = api_key_create(
            tenant=tenant, name="test", scopes=scopes, trusted_writer=trusted_writer
        )
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        client.api_secret = secret  # type: ignore[attr-defined]
        return client

    return make


@pytest.fixture
def owner(tenant: Tenant, client_for: Callable[..., APIClient]) -> APIClient:
    """The tenant's agent with read, write and admin scopes."""
    return client_for(tenant, ("read", "write", "admin"))


@pytest.fixture
def trusted_owner(tenant: Tenant, client_for: Callable[..., APIClient]) -> APIClient:
    """The tenant's agent through a key the tenant marked a trusted writer."""
    return client_for(tenant, ("read", "write", "admin"), trusted_writer=True)


@pytest.fixture
def stranger(other_tenant: Tenant, client_for: Callable[..., APIClient]) -> APIClient:
    """An agent of another tenant, with every scope."""
    return client_for(other_tenant, ("read", "write", "admin"))
