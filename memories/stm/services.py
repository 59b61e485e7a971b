"""Writes of short-term memory that are not proposals: deleting items and sweeping expiry."""

from __future__ import annotations

import time
from dataclasses import dataclass

from memories.audit.services import Action, Actor, audit_record
from memories.stm.selectors import stm_item_for
from memories.stm.store import now_seconds, stm_store
from profiles.models import Tenant


def stm_item_delete(*, tenant: Tenant, item_id: str, actor: Actor) -> None:
    """Delete one of the tenant's items with every index entry, at once."""
    item = stm_item_for(tenant=tenant, item_id=item_id)
    stm_store().delete(owner=item.owner, item_id=item.id)
    audit_record(
        tenant=tenant,
        action=Action.DELETE,
        actor=actor,
        object_type="stm_item",
        object_id=item.id,
        before=item.to_redis(),
        end_user_pk=item.end_user_id,
    )


@dataclass(frozen=True)
class SweepResult:
    removed: int
    owners: int
    more: bool  # work was left when the time budget ran out


def stm_expire_sweep(
    *, owners_per_batch: int = 200, items_per_call: int = 1000, budget_seconds: float = 50.0
) -> SweepResult:
    """Delete every item due by now, in bounded calls, until done or the budget is spent.

    Sweeping one owner is one atomic step of the store, so two sweeps at once remove nothing
    twice; the expiry job (`memories.jobs.EXPIRY`) still runs one at a time, under its lock.
    """
    store = stm_store()
    now = now_seconds()
    deadline = time.monotonic() + budget_seconds
    removed = owners_seen = 0
    while time.monotonic() < deadline:
        owners = store.owners_due(now=now, limit=owners_per_batch)
        if not owners:
            return SweepResult(removed=removed, owners=owners_seen, more=False)
        for owner in owners:
            owners_seen += 1
            more = True
            while more and time.monotonic() < deadline:
                count, more = store.sweep_owner(owner=owner, now=now, limit=items_per_call)
                removed += count
    return SweepResult(removed=removed, owners=owners_seen, more=True)


def stm_expire_sweep_tenant(*, tenant: Tenant, items_per_call: int = 1000) -> SweepResult:
    """Delete every item of one tenant due by now: its users are found by paging the expiry
    registry (`ZSCAN`, no key scan) and swept one by one."""
    store = stm_store()
    now = now_seconds()
    removed = owners_seen = 0
    cursor = 0
    while True:
        cursor, page = store.owners_page(cursor=cursor, count=500)
        for owner in page:
            if owner.tenant_id != tenant.pk:
                continue
            owners_seen += 1
            more = True
            while more:
                count, more = store.sweep_owner(owner=owner, now=now, limit=items_per_call)
                removed += count
        if not cursor:
            return SweepResult(removed=removed, owners=owners_seen, more=False)
