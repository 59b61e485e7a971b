"""Layer 1 as one recall reads it: the cached tenant and user documents, rebuilt from PostgreSQL
and cached again when stale, and the tenant's word lists.

The documents are read before anything else: the tenant's names the recall policy and the
vocabulary, the user's names the owner of the user's short-term memory.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.db import DatabaseError

from memories.recall.cache import Cached, recall_context_cache
from memories.recall.context import (
    empty_tenant_document,
    tenant_context_document,
    user_context_document,
)
from memories.recall.trace import Trace, why
from memories.vocabulary import Vocabulary, default_vocabulary
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_keys import Owner
from profiles.models import Tenant


@dataclass
class Layer1:
    """What recall read of Layer 1 before asking anything else."""

    tenant_cached: Cached
    user_cached: Cached
    tenant_doc: dict[str, Any]
    user_doc: dict[str, Any] | None
    vocabulary: Vocabulary
    owner: Owner | None  # whose short-term memory; None when the user has none yet

    @property
    def policy(self) -> dict[str, Any]:
        return self.tenant_doc["policy"]


def layer1_read(*, tenant: Tenant, user_id: str, trace: Trace) -> Layer1:
    """The tenant's and the user's documents, from the cache when fresh."""
    tenant_cached, user_cached = _read_cache(tenant, user_id, trace)
    tenant_doc = _tenant_document(tenant, tenant_cached, trace)
    user_doc = user_cached.document
    vocabulary = _vocabulary(tuple(tuple(entry) for entry in tenant_doc["vocabulary"]))
    if user_doc is None or not user_cached.fresh:
        # The owner of the user's short-term memory is only known from Layer 1.
        user_doc = (
            user_document(tenant=tenant, user_id=user_id, cached=user_cached, trace=trace)
            or user_doc
        )
    owner = (
        Owner(tenant.pk, user_doc["end_user_id"]) if user_doc and user_doc.get("exists") else None
    )
    return Layer1(tenant_cached, user_cached, tenant_doc, user_doc, vocabulary, owner)


def user_document(
    *, tenant: Tenant, user_id: str, cached: Cached, trace: Trace
) -> dict[str, Any] | None:
    """The user's document, read from PostgreSQL (the cached one if PostgreSQL fails)."""
    started = time.perf_counter()
    try:
        document = user_context_document(tenant=tenant, user_id=user_id)
    except DatabaseError as exc:
        trace.fail("postgres", why(exc))
        return cached.document
    finally:
        trace.timed("postgres", started)
    _cache_write(tenant, user_id, document, cached.generation, trace)
    return document


def _read_cache(tenant: Tenant, user_id: str, trace: Trace) -> tuple[Cached, Cached]:
    started = time.perf_counter()
    try:
        return recall_context_cache().read(tenant_id=tenant.pk, user_id=user_id)
    except StoreUnavailable as exc:
        trace.fail("redis", why(exc))
        empty = Cached(document=None, generation=0, fresh=False)
        return empty, empty
    finally:
        trace.timed("redis", started)


def _tenant_document(tenant: Tenant, cached: Cached, trace: Trace) -> dict[str, Any]:
    """The tenant document: the cached one when fresh, else rebuilt from PostgreSQL."""
    if cached.fresh and cached.document is not None:
        return cached.document
    started = time.perf_counter()
    try:
        document = tenant_context_document(tenant=tenant)
    except DatabaseError as exc:
        trace.fail("postgres", why(exc))
        return cached.document or empty_tenant_document(tenant=tenant)
    finally:
        trace.timed("postgres", started)
    _cache_write(tenant, "", document, cached.generation, trace)
    return document


def _cache_write(
    tenant: Tenant, user_id: str, document: dict[str, Any], generation: int, trace: Trace
) -> None:
    """Cache a rebuilt document under the generation read before it was built."""
    if "redis" in trace.degraded:
        return
    try:
        recall_context_cache().write(
            tenant_id=tenant.pk, user_id=user_id, document=document, generation=generation
        )
    except StoreUnavailable as exc:
        trace.fail("redis", why(exc))


@lru_cache(maxsize=256)
def _vocabulary(entries: tuple[tuple[str, str], ...]) -> Vocabulary:
    """The default word lists extended with a tenant's entries, compiled once per content."""
    return default_vocabulary().extended(entries) if entries else default_vocabulary()
