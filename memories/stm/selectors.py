"""Reads of short-term memory, always through the caller's tenant."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memories.stm.items import StmItem
from memories.stm.store import now_seconds, stm_store
from memoryproject.errors import NotFound
from memoryproject.redaction import redact_text, redactor_for
from memoryproject.redis_keys import Owner
from profiles.models import EndUser, Tenant
from transcripts.selectors import events_by_ids, redacted_events

_ITEM_ID = re.compile(r"stm_([0-9]{1,18})_[0-9a-f]{16}")


def stm_owner_for(*, tenant: Tenant, user_id: str) -> Owner:
    """The tenant's end user as an owner of short-term memory; NotFound when unknown."""
    end_user = EndUser.objects.filter(tenant=tenant, external_id=user_id).only("pk").first()
    if end_user is None:
        raise NotFound(f"No user {user_id!r}.")
    return Owner(tenant.pk, end_user.pk)


def stm_item_for(*, tenant: Tenant, item_id: str) -> StmItem:
    """One live item of the tenant; NotFound for unknown, expired or other tenants' ids."""
    match = _ITEM_ID.fullmatch(item_id)
    missing = NotFound(f"No memory {item_id!r}.")
    if match is None:
        raise missing
    end_user_pk = int(match.group(1))
    if not EndUser.objects.filter(pk=end_user_pk, tenant=tenant).exists():
        raise missing
    item = stm_store().get(owner=Owner(tenant.pk, end_user_pk), item_id=item_id)
    if item is None or item.expires_at <= now_seconds() or item.tenant_id != tenant.pk:
        raise missing
    return item


def stm_item_provenance(*, tenant: Tenant, item: StmItem) -> list[dict[str, Any]]:
    """The transcript events an item came from, redacted like the item: the transcript keeps
    what was said, and this view of it goes to agents beside the memory."""
    events = events_by_ids(tenant=tenant, session_ids=item.sessions, message_ids=item.message_ids)
    return redacted_events(events, redactor=redactor_for(tenant))


@dataclass(frozen=True)
class ItemPage:
    items: list[StmItem]
    next_before: float | None


def stm_items_for(
    *,
    tenant: Tenant,
    user_id: str,
    session_id: str = "",
    task_id: str = "",
    memory_type: str = "",
    entity: str = "",
    before: float | None = None,
    limit: int = 50,
) -> ItemPage:
    """A user's live items, newest first, filtered by session, task, type and entity."""
    task_id = redact_text(task_id)  # task ids are stored redacted
    owner = stm_owner_for(tenant=tenant, user_id=user_id)
    store = stm_store()
    # Walk the most selective index; check the other filters on the items themselves.
    filters = [
        ("task", task_id),
        ("session", session_id),
        ("entity", entity),
        ("type", memory_type),
    ]
    index, value = next(((name, v) for name, v in filters if v), ("recent", ""))
    now = now_seconds()
    found: list[StmItem] = []
    cursor = before
    step = max(limit * 2, 20)
    while len(found) <= limit:
        batch = store.ids_by_index(owner=owner, index=index, value=value, before=cursor, limit=step)
        for item in store.get_many(owner=owner, item_ids=[i for i, _ in batch]):
            if item.is_live(now) and _matches(item, session_id, task_id, memory_type, entity):
                found.append(item)
        if len(batch) < step:
            cursor = None  # the index is exhausted
            break
        cursor = batch[-1][1]
    found.sort(key=lambda i: i.updated_at, reverse=True)
    page = found[:limit]
    has_more = len(found) > limit or cursor is not None
    return ItemPage(items=page, next_before=page[-1].updated_at if page and has_more else None)


def _matches(item: StmItem, session_id: str, task_id: str, memory_type: str, entity: str) -> bool:
    return (
        (not session_id or session_id in item.sessions)
        and (not task_id or item.task_id == task_id)
        and (not memory_type or item.memory_type == memory_type)
        and (not entity or entity.lower() in (e.lower() for e in item.entities))
    )
