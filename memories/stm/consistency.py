"""A check of one user's short-term keys: do the indexes and lookups agree with the items?
Used by the tests and the upsert benchmark after every kind of write."""

from __future__ import annotations

from typing import Any

from memories.stm.items import Status, StmItem
from memoryproject import redis_keys as keys
from memoryproject.redis_keys import Owner


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode()
    return "" if value is None else str(value)


def index_problems(client: Any, owner: Owner) -> list[str]:
    """Every way one user's indexes and lookups disagree with the items; [] when sound."""
    base = keys.stm_base(owner)
    all_keys = {_text(k) for k in client.scan_iter(match=f"{base}:*", count=1000)}
    items: dict[str, StmItem] = {}
    for key in all_keys:
        if key.startswith(f"{base}:item:"):
            items[key.rsplit(":", 1)[1]] = StmItem.from_redis(client.hgetall(key))

    expected: dict[str, set[str]] = {}

    def expect(key: str, item_id: str) -> None:
        expected.setdefault(key, set()).add(item_id)

    for item in items.values():
        expect(keys.stm_index(owner, "expire"), item.id)
        if item.status != Status.ACTIVE:
            continue
        expect(keys.stm_index(owner, "recent"), item.id)
        expect(keys.stm_index(owner, "type", item.memory_type), item.id)
        if item.task_id:
            expect(keys.stm_index(owner, "task", item.task_id), item.id)
        for session in item.sessions:
            expect(keys.stm_index(owner, "session", session), item.id)
        for entity in item.entities:
            expect(keys.stm_index(owner, "entity", entity), item.id)

    problems = []
    lookups = (":fp", ":ck", ":replaced")
    index_keys = {k for k in all_keys if ":item:" not in k and not k.endswith(lookups)}
    for key in sorted(index_keys | set(expected)):
        members = {_text(m) for m in client.zrange(key, 0, -1)}
        if members != expected.get(key, set()):
            problems.append(
                f"{key}: has {sorted(members)}, expected {sorted(expected.get(key, set()))}"
            )
    for item in items.values():
        score = client.zscore(keys.stm_index(owner, "expire"), item.id)
        if score is None or abs(score - item.expires_at) > 1e-3:
            problems.append(f"{item.id}: expire score {score} != expires_at {item.expires_at}")

    active = {i.id: i for i in items.values() if i.status == Status.ACTIVE}
    for fingerprint, item_id in client.hgetall(f"{base}:fp").items():
        target = active.get(_text(item_id))
        if target is None or _text(fingerprint) not in target.fingerprints:
            problems.append(f"fingerprint {_text(fingerprint)} -> {_text(item_id)} is dangling")
    ck_map = {_text(k): _text(v) for k, v in client.hgetall(f"{base}:ck").items()}
    for key, item_id in ck_map.items():
        target = active.get(item_id)
        if target is None or target.canonical_fact_key != key:
            problems.append(f"canonical key {key} -> {item_id} is dangling")
    for item in active.values():
        if item.canonical_fact_key and ck_map.get(item.canonical_fact_key) != item.id:
            problems.append(f"{item.id}: canonical key {item.canonical_fact_key} not looked up")
    return problems
