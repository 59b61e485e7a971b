"""Redis side of short-term memory: atomic upserts, deletes and expiry sweeps, and reads.

Only this module (and the connection getter) talks to Redis for Layer 2. Writes run as Lua
scripts over one user's keys, so an item and all its index entries change together.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from redis.exceptions import RedisError

from memories.stm import keys
from memories.stm.items import StmItem
from memories.stm.keys import Owner
from memories.stm.redis_client import redis_connection
from memoryproject.errors import StoreUnavailable

LUA_DIR = Path(__file__).resolve().parent / "lua"
SCRIPT_NAMES = ("upsert", "delete", "sweep")
INDEX_NAMES = ("session", "task", "entity", "type")


def script_source(name: str) -> str:
    common = (LUA_DIR / "common.lua").read_text()
    return common + "\n" + (LUA_DIR / f"{name}.lua").read_text()


@dataclass(frozen=True)
class UpsertResult:
    outcome: str  # inserted | merged | superseded | unchanged
    item_id: str
    version: int
    superseded_id: str = ""


class ShortTermStore(Protocol):
    def upsert(self, *, items: Sequence[StmItem], now: float) -> list[UpsertResult]: ...
    def delete(self, *, owner: Owner, item_id: str) -> bool: ...
    def get(self, *, owner: Owner, item_id: str) -> StmItem | None: ...


class RedisShortTermStore:
    """Short-term memory items and their id-only indexes in Redis."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._scripts = {name: client.register_script(script_source(name)) for name in SCRIPT_NAMES}

    def load_scripts(self) -> list[str]:
        """Load the Lua scripts into Redis' script cache; returns their SHA1s."""
        try:
            return [self._client.script_load(script_source(name)) for name in SCRIPT_NAMES]
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    # --- writes --------------------------------------------------------------------------------
    def upsert(self, *, items: Sequence[StmItem], now: float) -> list[UpsertResult]:
        """Upsert items atomically, one script each; all of one call run in one MULTI/EXEC."""
        if not items:
            return []
        try:
            pipe = self._client.pipeline(transaction=True)
            for item in items:
                self._scripts["upsert"](
                    keys=[keys.stm_base(item.owner)],
                    args=[json.dumps(item.to_redis(), ensure_ascii=False), repr(now)],
                    client=pipe,
                )
            replies = pipe.execute()
            self._register_expiry(
                (item.owner, reply[4]) for item, reply in zip(items, replies, strict=True)
            )
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return [
            UpsertResult(
                outcome=_text(reply[0]),
                item_id=_text(reply[1]),
                version=int(reply[2]),
                superseded_id=_text(reply[3]),
            )
            for reply in replies
        ]

    def delete(self, *, owner: Owner, item_id: str) -> bool:
        """Delete an item with every index entry; False when it did not exist."""
        try:
            deleted, next_expiry = self._scripts["delete"](
                keys=[keys.stm_base(owner)], args=[item_id]
            )
            self._register_expiry([(owner, next_expiry)])
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return bool(deleted)

    def sweep_owner(self, *, owner: Owner, now: float, limit: int) -> tuple[int, bool]:
        """Delete up to `limit` expired items of one user; returns (removed, more_due)."""
        try:
            removed, next_expiry = self._scripts["sweep"](
                keys=[keys.stm_base(owner)], args=[repr(now), limit]
            )
            self._register_expiry([(owner, next_expiry)], replace=True)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        next_due = float(next_expiry) if _text(next_expiry) else None
        return int(removed), next_due is not None and next_due <= now

    def owners_due(self, *, now: float, limit: int) -> list[Owner]:
        """Users whose earliest item has expired by `now`."""
        try:
            tags = self._client.zrangebyscore(keys.stm_expiring(), "-inf", now, start=0, num=limit)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return [Owner.from_tag(_text(tag)) for tag in tags]

    def _register_expiry(
        self, entries: Iterable[tuple[Owner, Any]], *, replace: bool = False
    ) -> None:
        """Keep the registry of users with items scored by their earliest expiry.

        It lives outside the users' hash tags, so it is a hint kept up to date after each
        script: upserts only lower a score (LT); a sweep sets it or removes the user.
        """
        pipe = self._client.pipeline(transaction=False)
        for owner, next_expiry in entries:
            score = _text(next_expiry)
            if score:
                if replace:
                    pipe.zadd(keys.stm_expiring(), {owner.tag: float(score)})
                else:
                    pipe.zadd(keys.stm_expiring(), {owner.tag: float(score)}, lt=True)
            elif replace:
                pipe.zrem(keys.stm_expiring(), owner.tag)
        pipe.execute()

    # --- reads ---------------------------------------------------------------------------------
    def get(self, *, owner: Owner, item_id: str) -> StmItem | None:
        """The item with this id, whatever its status; None if it does not exist."""
        try:
            raw = self._client.hgetall(keys.stm_item(owner, item_id))
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return StmItem.from_redis(raw) if raw else None

    def get_many(self, *, owner: Owner, item_ids: Sequence[str]) -> list[StmItem]:
        if not item_ids:
            return []
        try:
            pipe = self._client.pipeline(transaction=False)
            for item_id in item_ids:
                pipe.hgetall(keys.stm_item(owner, item_id))
            raws = pipe.execute()
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return [StmItem.from_redis(raw) for raw in raws if raw]

    def lookup(self, *, owner: Owner, fingerprint: str, canonical_fact_key: str) -> dict[str, str]:
        """Ids the fingerprint and canonical-key lookups point at: {"fingerprint": id, ...}."""
        try:
            pipe = self._client.pipeline(transaction=False)
            pipe.hget(f"{keys.stm_base(owner)}:fp", fingerprint)
            pipe.hget(f"{keys.stm_base(owner)}:ck", canonical_fact_key or "\x00")
            by_fp, by_ck = pipe.execute()
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        found = {}
        if by_fp:
            found["fingerprint"] = _text(by_fp)
        if by_ck and canonical_fact_key:
            found["canonical"] = _text(by_ck)
        return found

    def ids_by_index(
        self,
        *,
        owner: Owner,
        index: str = "recent",
        value: str = "",
        before: float | None = None,
        limit: int = 50,
    ) -> list[tuple[str, float]]:
        """Newest-first (id, score) pairs of one index, scores below `before` when given."""
        key = keys.stm_index(owner, index, value)
        high = f"({before}" if before is not None else "+inf"
        try:
            rows = self._client.zrevrangebyscore(
                key, high, "-inf", start=0, num=limit, withscores=True
            )
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return [(_text(member), float(score)) for member, score in rows]


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode()
    return "" if value is None else str(value)


def now_seconds() -> float:
    return time.time()


@cache
def stm_store() -> RedisShortTermStore:
    return RedisShortTermStore(redis_connection())
