"""Redis side of short-term memory: atomic upserts, deletes and expiry sweeps, and reads.

Only this module (the connection getter and the consistency check of `consistency.py` aside)
talks to Redis for Layer 2. Writes run as Lua scripts over one user's keys, so an item and all
its index entries change together.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import orjson
from redis.exceptions import NoScriptError, RedisError

from memories.stm.consistency import index_problems
from memories.stm.items import StmItem
from memoryproject import redis_keys as keys
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_client import recall_redis_connection, redis_connection
from memoryproject.redis_keys import Owner

LUA_DIR = Path(__file__).resolve().parent / "lua"
SCRIPT_NAMES = ("upsert", "delete", "sweep", "touch", "undo", "vectors", "rewrite", "update")
# The fields `rewrite_text` replaces: every text of an item that redaction covers.
TEXT_FIELDS = (
    "summary",
    "detail",
    "entities",
    "tags",
    "task_id",
    "subtype",
    "canonical_fact_key",
    "fact_value",
)
INDEX_NAMES = ("session", "task", "entity", "type")


def script_source(name: str) -> str:
    common = (LUA_DIR / "common.lua").read_text()
    return common + "\n" + (LUA_DIR / f"{name}.lua").read_text()


@dataclass(frozen=True)
class EditResult:
    """What `edit` did: 'updated' (at `version`), 'changed' (edited or merged since it was
    read; `version` is its current one) or 'gone' (deleted, expired or superseded)."""

    outcome: str
    version: int
    # The item's fields (flat: name, value, ...) as they were before an update: what
    # `undo_edit` puts back.
    previous: tuple[str, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class UpsertResult:
    outcome: str  # inserted | merged | superseded | unchanged
    item_id: str
    version: int
    superseded_id: str = ""
    # The changed item's fields (flat: name, value, ...) as they were before a merge or a
    # supersede; empty for an insert. What `undo_upserts` puts back.
    previous: tuple[str, ...] = field(default=(), repr=False)


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
            try:
                replies = self._upsert_transaction(items, now)
            except NoScriptError:  # Redis restarted and lost its script cache
                self.load_scripts()
                replies = self._upsert_transaction(items, now)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return [
            UpsertResult(
                outcome=_text(reply[0]),
                item_id=_text(reply[1]),
                version=int(reply[2]),
                superseded_id=_text(reply[3]),
                previous=tuple(_text(value) for value in reply[5]) if len(reply) > 5 else (),
            )
            for reply in replies
        ]

    def undo_upserts(self, *, items: Sequence[StmItem], results: Sequence[UpsertResult]) -> None:
        """Put the users' items back as they were before `upsert(items)` returned `results`:
        for a caller whose own transaction failed after the upsert landed."""
        steps: dict[Owner, list[dict[str, Any]]] = {}
        for item, result in reversed(list(zip(items, results, strict=True))):
            owner_steps = steps.setdefault(item.owner, [])
            if result.outcome in ("inserted", "superseded"):
                owner_steps.append({"drop": result.item_id})
            if result.outcome in ("merged", "superseded") and result.previous:
                owner_steps.append({"restore": list(result.previous)})
        try:
            expiries = [
                (owner, self._scripts["undo"](keys=[keys.stm_base(owner)], args=[orjson.dumps(s)]))
                for owner, s in steps.items()
                if s
            ]
            # The scripts return each user's earliest expiry, so the registry is set, not lowered.
            self._register_expiry(expiries, replace=True)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    def _upsert_transaction(self, items: Sequence[StmItem], now: float) -> list[Any]:
        # One round trip: one plain EVALSHA per user (a Script object would first ask
        # SCRIPT EXISTS) and the expiry registry, all in the same transaction.
        by_owner: dict[Owner, list[int]] = {}
        for position, item in enumerate(items):
            by_owner.setdefault(item.owner, []).append(position)
        pipe = self._client.pipeline(transaction=True)
        sha = self._scripts["upsert"].sha
        for owner, positions in by_owner.items():
            payload = orjson.dumps([_payload(items[p]) for p in positions])
            pipe.evalsha(sha, 1, keys.stm_base(owner), repr(now), payload)
        for owner, positions in by_owner.items():
            # Merges only extend an expiry, so the items' own are upper bounds of the user's
            # earliest; LT keeps the smaller one already registered.
            earliest = min(items[p].expires_at for p in positions)
            pipe.zadd(keys.stm_expiring(), {owner.tag: earliest}, lt=True)
        replies = pipe.execute()[: len(by_owner)]
        ordered: list[Any] = [None] * len(items)
        for positions, owner_replies in zip(by_owner.values(), replies, strict=True):
            for position, reply in zip(positions, owner_replies, strict=True):
                ordered[position] = reply
        return ordered

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

    def rewrite_text(self, *, item: StmItem, read_version: int) -> str:
        """Replace an item's text fields (`TEXT_FIELDS`) with `item`'s and move its index
        entries with them, unless it was merged since it was read at `read_version`:
        'rewritten', 'changed' or 'gone'."""
        flat = item.to_redis()
        payload: dict[str, Any] = {name: flat[name] for name in TEXT_FIELDS}
        payload["_lists"] = {
            "sessions": item.sessions,
            "entities": item.entities,
            "fingerprints": item.fingerprints,
        }
        try:
            outcome = self._scripts["rewrite"](
                keys=[keys.stm_base(item.owner)],
                args=[item.id, str(read_version), orjson.dumps(payload)],
            )
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return _text(outcome)

    def edit(
        self, *, item: StmItem, fields: Sequence[str], read_version: int, now: float
    ) -> EditResult:
        """Write `fields` of `item` over the stored item, unless it changed since it was read
        at `read_version`: the item keeps its id, its version goes up, `updated_at` becomes
        `now`, and every index entry (its expiry too) follows the new values."""
        flat = item.to_redis()
        payload: dict[str, Any] = {name: flat[name] for name in fields}
        payload["_lists"] = {
            "sessions": item.sessions,
            "entities": item.entities,
            "fingerprints": item.fingerprints,
        }
        try:
            outcome, version, next_expiry, previous = self._scripts["update"](
                keys=[keys.stm_base(item.owner)],
                args=[item.id, str(read_version), repr(now), orjson.dumps(payload)],
            )
            self._register_expiry([(item.owner, next_expiry)], replace=True)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return EditResult(
            outcome=_text(outcome),
            version=int(version),
            previous=tuple(_text(value) for value in previous or ()),
        )

    def undo_edit(self, *, item: StmItem, result: EditResult) -> None:
        """Put an item back as it was before `edit` returned `result`: for a caller whose own
        transaction failed after the edit landed."""
        if result.outcome != "updated" or not result.previous:
            return
        try:
            next_expiry = self._scripts["undo"](
                keys=[keys.stm_base(item.owner)],
                args=[orjson.dumps([{"restore": list(result.previous)}])],
            )
            self._register_expiry([(item.owner, next_expiry)], replace=True)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    def item_ids_page(
        self, *, owner: Owner, cursor: int = 0, count: int = 500
    ) -> tuple[int, list[str]]:
        """One page of every item id of a user, live or superseded (all are in the expiry
        index until swept); a next cursor of 0 means done."""
        try:
            cursor, rows = self._client.zscan(
                keys.stm_index(owner, "expire"), cursor=cursor, count=count
            )
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return int(cursor), [_text(member) for member, _ in rows]

    def set_vectors(self, *, owner: Owner, vectors: Sequence[tuple[str, str, bytes]]) -> int:
        """Keep (item id, SHA1 of the summary embedded, vector bytes) for items whose summary
        is still that one; returns how many were kept. They go with their item."""
        if not vectors:
            return 0
        args = [part for row in vectors for part in row]
        try:
            return int(self._scripts["vectors"](keys=[keys.stm_base(owner)], args=args))
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    def vectors_of(self, *, owner: Owner, item_ids: Sequence[str]) -> dict[str, bytes]:
        """The stored embeddings of these items (those that have one)."""
        if not item_ids:
            return {}
        try:
            rows = self._client.hmget(f"{keys.stm_base(owner)}:vec", list(item_ids))
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return {item_id: row for item_id, row in zip(item_ids, rows, strict=True) if row}

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
        earliest: dict[Owner, str] = {}
        for owner, next_expiry in entries:
            score = _text(next_expiry)
            if owner not in earliest or (score and float(score) < float(earliest[owner] or "inf")):
                earliest[owner] = score
        pipe = self._client.pipeline(transaction=False)
        for owner, score in earliest.items():
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

    def index_heads(
        self, *, owner: Owner, indexes: Sequence[tuple[str, str, int]]
    ) -> list[list[tuple[str, float]]]:
        """The newest (id, score) pairs of several indexes, (name, value, limit) each, at once."""
        if not indexes:
            return []
        try:
            pipe = self._client.pipeline(transaction=False)
            for name, value, limit in indexes:
                pipe.zrevrange(keys.stm_index(owner, name, value), 0, limit - 1, withscores=True)
            replies = pipe.execute()
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return [[(_text(member), float(score)) for member, score in rows] for rows in replies]

    def touch(self, *, owner: Owner, recalls: dict[str, int], now: float) -> int:
        """Count recalls of live items and stamp `last_access_at`; returns the items touched."""
        if not recalls:
            return 0
        try:
            touched = self._scripts["touch"](
                keys=[keys.stm_base(owner)], args=[repr(now), orjson.dumps(recalls)]
            )
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return int(touched)

    # --- consistency -----------------------------------------------------------------------
    def owners_page(self, *, cursor: int = 0, count: int = 500) -> tuple[int, list[Owner]]:
        """One page of the users holding short-term items; a next cursor of 0 means done."""
        try:
            cursor, rows = self._client.zscan(keys.stm_expiring(), cursor=cursor, count=count)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return int(cursor), [Owner.from_tag(_text(tag)) for tag, _ in rows]

    def items_of(self, *, owner: Owner, limit: int = 1000) -> list[StmItem]:
        """A user's newest items (live or not), newest first."""
        ids = [item_id for item_id, _ in self.ids_by_index(owner=owner, limit=limit)]
        return self.get_many(owner=owner, item_ids=ids)

    def replacing(self, *, owner: Owner, event_ids: Sequence[str]) -> dict[str, str]:
        """The item that replaced the statement of each of these transcript events, where a
        later statement replaced it: {event id: item id}."""
        if not event_ids:
            return {}
        ids = list(dict.fromkeys(event_ids))
        try:
            found = self._client.hmget(keys.stm_index(owner, "replaced"), ids)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        pairs = zip(ids, found, strict=True)
        return {event_id: _text(item_id) for event_id, item_id in pairs if item_id}

    def reflection_mark(self, *, owner: Owner) -> float:
        try:
            value = self._client.get(keys.reflection_mark(owner))
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return float(value) if value else 0.0

    def set_reflection_mark(self, *, owner: Owner, value: float) -> None:
        try:
            self._client.set(keys.reflection_mark(owner), repr(value), ex=90 * 86400)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    def owner_keys(self, owner: Owner) -> list[str]:
        """Every key holding something of this user (items, indexes, lookups)."""
        try:
            return [
                _text(name)
                for name in self._client.scan_iter(match=f"{keys.stm_base(owner)}:*", count=1000)
            ]
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    def erase_owner(self, *, owner: Owner, batch: int = 1000) -> int:
        """Remove every key of this user, its reflection mark and its expiry registration;
        returns keys removed.

        Safe to repeat: a second run finds nothing and removes nothing.
        """
        removed = 0
        try:
            names = self.owner_keys(owner)
            for start in range(0, len(names), batch):
                removed += int(self._client.unlink(*names[start : start + batch]))
            removed += int(self._client.unlink(keys.reflection_mark(owner)))
            self._client.zrem(keys.stm_expiring(), owner.tag)
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return removed

    def tenant_keys(self, *, tenant_id: int) -> list[str]:
        """Every short-term key and reflection mark of one tenant's end users (one scan each)."""
        patterns = (keys.stm_tenant_pattern(tenant_id), keys.reflection_tenant_pattern(tenant_id))
        try:
            return [
                _text(name)
                for pattern in patterns
                for name in self._client.scan_iter(match=pattern, count=1000)
            ]
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    def erase_tenant(self, *, tenant_id: int, batch: int = 1000) -> int:
        """Remove every key of a (deleted) tenant's end users and their expiry registrations;
        returns keys removed. Safe to repeat."""
        removed = 0
        try:
            names = self.tenant_keys(tenant_id=tenant_id)
            for start in range(0, len(names), batch):
                removed += int(self._client.unlink(*names[start : start + batch]))
            tags = [
                _text(tag)
                for tag, _ in self._client.zscan_iter(keys.stm_expiring(), match=f"{tenant_id}:*")
            ]
            for start in range(0, len(tags), batch):
                self._client.zrem(keys.stm_expiring(), *tags[start : start + batch])
        except RedisError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc
        return removed

    def index_problems(self, owner: Owner) -> list[str]:
        """Every way one user's indexes and lookups disagree with the items; [] when sound."""
        return index_problems(self._client, owner)


def _payload(item: StmItem) -> dict[str, Any]:
    """What upsert.lua receives for one item."""
    lists = {
        "sessions": item.sessions,
        "entities": item.entities,
        "fingerprints": item.fingerprints,
    }
    return {**item.to_redis(), "_lists": lists}


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode()
    return "" if value is None else str(value)


def now_seconds() -> float:
    return time.time()


@cache
def stm_store() -> RedisShortTermStore:
    return RedisShortTermStore(redis_connection())


@cache
def recall_stm_store() -> RedisShortTermStore:
    """The store for recall's reads, on the connection with recall's time budget."""
    return RedisShortTermStore(recall_redis_connection())
