"""The user's short-term memory as one recall reads it: a probe of its indexes for the runtime
state (the session's recent items, its task, entities already seen, the user's newest and
standing items), then the items Layer 2 contributes when it is asked, none read twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from memories.recall.query_profile import QueryProfile
from memories.recall.standing import standing_indexes
from memories.recall.trace import Trace, why
from memories.stm.items import StmItem
from memories.stm.store import now_seconds, recall_stm_store
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_keys import Owner

SESSION_PROBE = 20  # newest items of the session read for runtime state
TASK_PROBE = 30
ENTITY_PROBE = 10
MAX_ENTITIES = 8


@dataclass
class Probe:
    """Runtime state of the user's short-term memory, and the items read to learn it."""

    task_id: str = ""
    session_recent: bool = False
    session_entities: list[str] = field(default_factory=list)
    known_entities: list[str] = field(default_factory=list)
    ids: dict[str, list[str]] = field(default_factory=dict)  # index -> newest ids
    items: dict[str, StmItem] = field(default_factory=dict)  # the session's, already read
    user_items: dict[str, StmItem] = field(default_factory=dict)  # other sessions' newest


def stm_probe(
    *,
    owner: Owner | None,
    session_id: str,
    task_id: str,
    entities: list[str],
    policy: dict[str, Any],
    trace: Trace,
) -> Probe:
    """Runtime state from the indexes: recent session items, task, entities already seen."""
    probe = Probe()
    if owner is None or "redis" in trace.degraded:
        return probe
    indexes = [("session", session_id, SESSION_PROBE)]
    if task_id:
        indexes.append(("task", task_id, TASK_PROBE))
    indexes.extend(("entity", entity, ENTITY_PROBE) for entity in entities)
    user_indexes = standing_indexes()
    started = time.perf_counter()
    store = recall_stm_store()
    try:
        heads = store.index_heads(owner=owner, indexes=[*indexes, *user_indexes])
        user_heads, heads = heads[len(indexes) :], heads[: len(indexes)]
        session_ids = [item_id for item_id, _ in heads[0]]
        user_ids = [item_id for rows in user_heads for item_id, _ in rows]
        # Whole items: their entities and task are runtime state, and they are the first
        # candidates if Layer 2 is asked (so they are not read twice); the user's newest and
        # standing items are matched across sessions.
        read = store.get_many(owner=owner, item_ids=list(dict.fromkeys([*session_ids, *user_ids])))
    except StoreUnavailable as exc:
        trace.fail("redis", why(exc))
        return probe
    finally:
        trace.timed("redis", started)
    now = now_seconds()
    newest = heads[0][0][1] if heads[0] else 0.0
    probe.session_recent = now - newest < policy["session_recent_minutes"] * 60
    in_session = set(session_ids)
    seen: dict[str, str] = {}
    for item in read:
        if not item.is_live(now) or item.tenant_id != owner.tenant_id:
            continue
        if item.id not in in_session:
            probe.user_items[item.id] = item
            continue
        probe.items[item.id] = item
        if not probe.task_id and item.task_id:
            probe.task_id = item.task_id
        for entity in item.entities:
            seen.setdefault(entity.lower(), entity)
    probe.session_entities = list(seen.values())
    entity_heads = heads[len(indexes) - len(entities) :]
    probe.known_entities = [e for e, rows in zip(entities, entity_heads, strict=True) if rows]
    probe.ids = {"session": session_ids}
    if task_id:
        probe.ids["task"] = [item_id for item_id, _ in heads[1]]
    for entity, rows in zip(entities, entity_heads, strict=True):
        probe.ids[f"entity:{entity.lower()}"] = [item_id for item_id, _ in rows]
    return probe


def stm_items_fetch(
    *, owner: Owner, probe: Probe, profile: QueryProfile, trace: Trace
) -> list[StmItem]:
    """Live items of the task, the session and the query's entities (newest first, no repeats)."""
    wanted: dict[str, None] = {}
    for name in ("task", "session"):
        wanted.update(dict.fromkeys(probe.ids.get(name, [])))
    extra = [
        ("entity", entity, ENTITY_PROBE)
        for entity in profile.entities
        if f"entity:{entity.lower()}" not in probe.ids
    ][:MAX_ENTITIES]
    if profile.active_task_id and "task" not in probe.ids:
        extra.append(("task", profile.active_task_id, TASK_PROBE))
    for name, ids in probe.ids.items():
        if name.startswith("entity:"):
            wanted.update(dict.fromkeys(ids))
    started = time.perf_counter()
    store = recall_stm_store()
    try:
        if extra:
            for rows in store.index_heads(owner=owner, indexes=extra):
                wanted.update(dict.fromkeys(item_id for item_id, _ in rows))
        missing = [item_id for item_id in wanted if item_id not in probe.items]
        items = store.get_many(owner=owner, item_ids=missing)
    except StoreUnavailable as exc:
        trace.fail("redis", why(exc))
        return []
    finally:
        trace.timed("redis", started)
    now = now_seconds()
    fetched = [i for i in items if i.is_live(now) and i.tenant_id == owner.tenant_id]
    return [*probe.items.values(), *fetched]
