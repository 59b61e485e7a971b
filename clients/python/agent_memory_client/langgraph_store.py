"""A LangGraph `BaseStore` kept in the memory service's short-term memory (extra `langgraph`).

    from agent_memory_client import AsyncMemoryClient, MemoryClient
    from agent_memory_client.langgraph_store import MemoryStore

    store = MemoryStore(MemoryClient(), AsyncMemoryClient())  # $MEMORY_API_URL, $MEMORY_API_KEY
    graph = builder.compile(store=store)
    store.put(("u-1", "memories"), "deploy", {"text": "The user deploys with Terraform."})
    store.search(("u-1", "memories"), query="How do I deploy?")

A namespace's first label is the end user; every value is one short-term item of that user (a
`fact`), its text the value's `text`, `content` or `memory` (its JSON otherwise), the value itself
in the item's `detail`. So what a graph stores is recalled beside everything else the user said,
guarded as any write is (redaction, the write policy, the quarantine screen), and expires as
working memory does: `ttl` (minutes) or the tenant's policy decides when. A put with a new value
supersedes the old one (the item's canonical key is the namespace and key); a put of None
deletes. `search` with a `query` ranks the namespace's items by the service's recall, the rest
after them by recency; `filter` matches values' top-level keys by equality. A put the service
refuses or holds for review raises `MemoryWriteRefused`: nothing of it was stored.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from agent_memory_client.client import AsyncMemoryClient, MemoryClient
from agent_memory_client.errors import NotFound
from agent_memory_client.models import Proposal, RecallResponse, StmItem, StmQuery

DETAIL_KEY = "langgraph"
TEXT_KEYS = ("text", "content", "memory")
MAX_SUMMARY_CHARS = 20_000
PAGE = 200  # items per page when a namespace is read whole
WRITTEN = ("inserted", "merged", "superseded", "unchanged")


class MemoryWriteRefused(Exception):
    """The service did not store a put: refused by its write policy or held for review."""

    def __init__(self, namespace: tuple[str, ...], key: str, result: dict[str, Any]) -> None:
        self.result = result
        why = result.get("refusal") or result.get("hold_reason") or result.get("outcome")
        super().__init__(f"{'/'.join(namespace)}/{key} was not stored: {why}")


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()[:24]


def prefix_entity(prefix: tuple[str, ...]) -> str:
    """The entity every item under `prefix` carries, so a namespace is one index read."""
    return f"lgns-{_digest(list(prefix))}"


def key_entity(namespace: tuple[str, ...], key: str) -> str:
    return f"lgkey-{_digest(list(namespace), key)}"


def _user(namespace: tuple[str, ...]) -> str:
    if not namespace or not namespace[0]:
        raise ValueError("A namespace's first label is the end user's id: ('u-1', ...).")
    return namespace[0]


def _session(user_id: str) -> str:
    # One session per user for the store's writes and recalls (a session belongs to one user).
    return f"langgraph-{_digest(user_id)}"


def _text(value: dict[str, Any]) -> str:
    for name in TEXT_KEYS:
        if isinstance(value.get(name), str) and value[name].strip():
            return str(value[name])[:MAX_SUMMARY_CHARS]
    return json.dumps(value, ensure_ascii=False, default=str)[:MAX_SUMMARY_CHARS]


def _proposal(op: PutOp, ttl_minutes: float | None) -> Proposal:
    namespace, value = tuple(op.namespace), dict(op.value or {})
    user_id = _user(namespace)
    prefixes = [namespace[:depth] for depth in range(1, len(namespace) + 1)]
    proposal: Proposal = {
        "user_id": user_id,
        "session_id": _session(user_id),
        "memory_type": "fact",
        "summary": _text(value),
        "detail": {DETAIL_KEY: {"namespace": list(namespace), "key": op.key, "value": value}},
        "entities": [key_entity(namespace, op.key), *map(prefix_entity, prefixes)],
        "tags": ["langgraph"],
        "canonical_fact_key": f"langgraph.{_digest(list(namespace), op.key)}",
        "fact_value": _digest(value),
        "verified": True,  # the graph's own write, not a guess
    }
    ttl = op.ttl if op.ttl is not None else ttl_minutes
    if ttl is not None:
        proposal["ttl_minutes"] = max(1, math.ceil(ttl))
    return proposal


def _stored(item: StmItem) -> dict[str, Any] | None:
    kept = item["detail"].get(DETAIL_KEY)
    return kept if isinstance(kept, dict) and "key" in kept else None


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def _item(item: StmItem) -> Item | None:
    kept = _stored(item)
    if kept is None:
        return None
    return Item(
        value=dict(kept.get("value") or {}),
        key=str(kept["key"]),
        namespace=tuple(kept["namespace"]),
        created_at=_when(item["created_at"]),
        updated_at=_when(item["updated_at"]),
    )


def _matches(value: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    return all(value.get(name) == expected for name, expected in (wanted or {}).items())


def _ranked(
    items: list[StmItem], op: SearchOp, recalled: RecallResponse | None
) -> list[SearchItem]:
    """The namespace's items that pass the filter: recalled ones first by score, then the
    others newest first; then the page `offset`, `limit`."""
    scores = {
        found["memory_id"]: float(found["score"])
        for found in (recalled["items"] if recalled else [])
        if found["source"] == "redis"
    }
    kept = []
    for position, stm in enumerate(items):
        item = _item(stm)
        if item is None or not _matches(item.value, op.filter):
            continue
        score = scores.get(stm["id"])
        kept.append((score is None, -(score or 0.0), position, item, score))
    kept.sort(key=lambda entry: entry[:3])
    page = kept[op.offset : op.offset + op.limit]
    return [
        SearchItem(
            namespace=item.namespace,
            key=item.key,
            value=item.value,
            created_at=item.created_at,
            updated_at=item.updated_at,
            score=score if op.query else None,
        )
        for *_, item, score in page
    ]


def _namespaces(items: Iterable[StmItem], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    for stm in items:
        kept = _stored(stm)
        if kept is None:
            continue
        namespace = tuple(kept["namespace"])
        if not all(_condition(namespace, c) for c in op.match_conditions or ()):
            continue
        found.add(namespace[: op.max_depth] if op.max_depth else namespace)
    return sorted(found)[op.offset : op.offset + op.limit]


def _condition(namespace: tuple[str, ...], condition: Any) -> bool:
    path = tuple(condition.path)
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return len(part) == len(path) and all(p in ("*", n) for p, n in zip(path, part, strict=True))


def _listing_user(op: ListNamespacesOp) -> str:
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix" and condition.path and condition.path[0] != "*":
            return str(condition.path[0])
    raise ValueError("list_namespaces needs a prefix naming the end user: prefix=('u-1',).")


class MemoryStore(BaseStore):
    """LangGraph's store over the service: `client` serves `batch`, `async_client` `abatch`
    (give the one your graph runs with, or both)."""

    supports_ttl = True

    def __init__(
        self,
        client: MemoryClient | None = None,
        async_client: AsyncMemoryClient | None = None,
        *,
        ttl_minutes: float | None = None,
    ) -> None:
        if client is None and async_client is None:
            raise ValueError("Give a MemoryClient, an AsyncMemoryClient or both.")
        self._client = client
        self._async_client = async_client
        self._ttl_minutes = ttl_minutes

    # --- blocking --------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self._client is None:
            raise RuntimeError("This store was built without a MemoryClient: use its a* methods.")
        return [self._run(op) for op in ops]

    def _run(self, op: Op) -> Result:
        memory = self._client
        assert memory is not None
        if isinstance(op, GetOp):
            found = self._by_key(tuple(op.namespace), op.key)
            return _item(found) if found else None
        if isinstance(op, PutOp):
            namespace = tuple(op.namespace)
            if op.value is None:
                found = self._by_key(namespace, op.key)
                if found:
                    memory.delete_memory(found["id"])
                return None
            [result] = memory.propose_memories([_proposal(op, self._ttl_minutes)])["results"]
            if result["outcome"] not in WRITTEN:
                raise MemoryWriteRefused(namespace, op.key, dict(result))
            return None
        if isinstance(op, SearchOp):
            prefix = tuple(op.namespace_prefix)
            items = self._under(prefix)
            recalled = None
            if op.query and items:
                user_id = _user(prefix)
                recalled = memory.recall(
                    user_id=user_id,
                    session_id=_session(user_id),
                    query=op.query,
                    layers=["redis"],
                    k=min(50, max(op.limit + op.offset, 1)),
                )
            return _ranked(items, op, recalled)
        if isinstance(op, ListNamespacesOp):
            return _namespaces(self._under((_listing_user(op),)), op)
        raise TypeError(f"Unknown operation {op!r}")

    def _by_key(self, namespace: tuple[str, ...], key: str) -> StmItem | None:
        assert self._client is not None
        try:
            page = self._client.list_stm(
                user_id=_user(namespace), entity=key_entity(namespace, key), limit=1
            )
        except NotFound:  # a user the store never wrote for
            return None
        return page["items"][0] if page["items"] else None

    def _under(self, prefix: tuple[str, ...]) -> list[StmItem]:
        assert self._client is not None
        query: StmQuery = {"user_id": _user(prefix), "entity": prefix_entity(prefix), "limit": PAGE}
        items: list[StmItem] = []
        while True:
            try:
                page = self._client.list_stm(**query)
            except NotFound:  # a user the store never wrote for
                return []
            items += page["items"]
            if page["next_before"] is None:
                return items
            query["before"] = float(page["next_before"])

    # --- asyncio ---------------------------------------------------------------------------

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if self._async_client is None:
            raise RuntimeError("This store was built without an AsyncMemoryClient.")
        return [await self._arun(op) for op in ops]

    async def _arun(self, op: Op) -> Result:
        memory = self._async_client
        assert memory is not None
        if isinstance(op, GetOp):
            found = await self._aby_key(tuple(op.namespace), op.key)
            return _item(found) if found else None
        if isinstance(op, PutOp):
            namespace = tuple(op.namespace)
            if op.value is None:
                found = await self._aby_key(namespace, op.key)
                if found:
                    await memory.delete_memory(found["id"])
                return None
            answer = await memory.propose_memories([_proposal(op, self._ttl_minutes)])
            [result] = answer["results"]
            if result["outcome"] not in WRITTEN:
                raise MemoryWriteRefused(namespace, op.key, dict(result))
            return None
        if isinstance(op, SearchOp):
            prefix = tuple(op.namespace_prefix)
            items = await self._aunder(prefix)
            recalled = None
            if op.query and items:
                user_id = _user(prefix)
                recalled = await memory.recall(
                    user_id=user_id,
                    session_id=_session(user_id),
                    query=op.query,
                    layers=["redis"],
                    k=min(50, max(op.limit + op.offset, 1)),
                )
            return _ranked(items, op, recalled)
        if isinstance(op, ListNamespacesOp):
            return _namespaces(await self._aunder((_listing_user(op),)), op)
        raise TypeError(f"Unknown operation {op!r}")

    async def _aby_key(self, namespace: tuple[str, ...], key: str) -> StmItem | None:
        assert self._async_client is not None
        try:
            page = await self._async_client.list_stm(
                user_id=_user(namespace), entity=key_entity(namespace, key), limit=1
            )
        except NotFound:
            return None
        return page["items"][0] if page["items"] else None

    async def _aunder(self, prefix: tuple[str, ...]) -> list[StmItem]:
        assert self._async_client is not None
        query: StmQuery = {"user_id": _user(prefix), "entity": prefix_entity(prefix), "limit": PAGE}
        items: list[StmItem] = []
        while True:
            try:
                page = await self._async_client.list_stm(**query)
            except NotFound:
                return []
            items += page["items"]
            if page["next_before"] is None:
                return items
            query["before"] = float(page["next_before"])
