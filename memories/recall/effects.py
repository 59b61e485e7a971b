"""Side effects of recall, kept off its hot path: access counts and the transcript event.

Each recall pushes one record to a Redis list and, when the list was empty, schedules a task a
moment later that applies everything queued in one batch: recall counts of short-term items,
access counts of long-term cards, and one `system` event per recall in the session transcript,
whose id is the recall id (so applying a batch twice appends nothing twice). The event names
everything injected: short-term items, cards, history entries (with the transcript events
they copy) and the standing rules of the profile section.

When Redis is unreachable (and with it the broker, usually the same server) the record is
kept as a row of a PostgreSQL outbox instead, which the same task applies first once Redis
is back (the `recall-effects-apply` beat job), so every recall stays recorded.

A batch leaves its queue (the Redis log is trimmed, the outbox rows deleted) only once every
record of it is applied. A store that refuses a write (transcript storage full or unwritable:
`StoreUnavailable`) leaves the whole batch queued and the task retries; recalls already
recorded are recognised by their id and not appended again, and access counts are applied
only with the batch's events. Only a permanent error of a record itself (its session unknown,
erased or another user's) drops that record, with a warning naming it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Case, F, IntegerField, Value, When

from memories.ltm.models import LtmCard
from memories.recall.cache import recall_log
from memories.recall.models import RecallEffectOutbox
from memories.stm.store import stm_store
from memoryproject.errors import DomainError, StoreUnavailable
from memoryproject.locks import redis_lock
from memoryproject.redis_keys import Owner
from profiles.models import EndUser, Tenant
from transcripts.selectors import message_ids_stored
from transcripts.services import EventIn, Role, events_append

logger = logging.getLogger(__name__)

BATCH = 500
RECALL_EVENT_KIND = "recall"


def recall_effects_schedule(
    *, record: dict[str, Any], trace_failure: Callable[[str], None]
) -> None:
    """Queue one recall's effects; schedule the batch task when the queue was empty."""
    from memories.recall.tasks import recall_effects_apply_task

    try:
        queued = recall_log().push(record=record)
    except StoreUnavailable as exc:
        trace_failure(f"recall log: {exc}")
        # The queue is unreachable, and so is the broker when it is the same Redis: keep the
        # record in PostgreSQL (no broker call, which would wait on the failed server).
        if not _keep_in_outbox(record):
            # PostgreSQL failed too: hand the record to the task itself, a last chance.
            _enqueue(lambda: recall_effects_apply_task.delay(records=[record]), record)
        return
    # The first record of an empty queue schedules a run; so does every BATCH-th, so a lost
    # run (a worker killed meanwhile) stalls the queue for one batch at most, not until beat.
    if queued == 1 or queued % BATCH == 0:
        countdown = settings.RECALL_EFFECTS_DELAY_SECONDS
        _enqueue(lambda: recall_effects_apply_task.apply_async(countdown=countdown), record)


def _keep_all_in_outbox(records: Sequence[dict[str, Any]]) -> bool:
    try:
        RecallEffectOutbox.objects.bulk_create(
            RecallEffectOutbox(tenant_id=record["tenant_id"], record=record) for record in records
        )
    except DatabaseError:
        logger.warning("recall effects of %d recalls not kept", len(records), exc_info=True)
        return False
    return True


def _keep_in_outbox(record: dict[str, Any]) -> bool:
    try:
        RecallEffectOutbox.objects.create(tenant_id=record["tenant_id"], record=record)
    except DatabaseError:
        logger.warning("recall effects not kept (%s)", record["recall_id"], exc_info=True)
        return False
    return True


def _enqueue(send: Callable[[], Any], record: dict[str, Any]) -> None:
    try:
        send()
    except Exception:  # the broker is down: the beat schedule applies the queue later
        logger.warning("recall effects not scheduled (%s)", record["recall_id"], exc_info=True)


@dataclass(frozen=True)
class EffectsResult:
    applied: int
    more: bool
    busy: bool = False  # another run held the lock


def recall_effects_apply(*, records: Sequence[dict[str, Any]] | None = None) -> EffectsResult:
    """Apply the oldest queued recalls (or the given records) in one batch.

    StoreUnavailable leaves the batch queued: given records are kept in the PostgreSQL outbox
    (raised again only if that fails too), queued ones stay where they are.
    """
    if records is not None:
        try:
            _apply(records)
        except StoreUnavailable as exc:
            if not _keep_all_in_outbox(records):
                raise
            logger.warning("recall effects of %d recalls kept for later: %s", len(records), exc)
            return EffectsResult(applied=0, more=False)
        return EffectsResult(applied=len(records), more=False)
    with redis_lock("recall-effects", ttl_seconds=180) as acquired:
        if not acquired:
            return EffectsResult(applied=0, more=False, busy=True)
        # Records kept during a Redis outage first: they are older than what Redis queued since.
        kept = list(RecallEffectOutbox.objects.order_by("id").values_list("id", "record")[:BATCH])
        if kept:
            _apply([record for _, record in kept])
            RecallEffectOutbox.objects.filter(id__in=[pk for pk, _ in kept]).delete()
            return EffectsResult(applied=len(kept), more=True)
        batch = recall_log().peek(limit=BATCH)
        if batch:
            _apply(batch)
            recall_log().trim(count=len(batch))
        return EffectsResult(applied=len(batch), more=len(batch) == BATCH)


def _apply(records: Sequence[dict[str, Any]]) -> None:
    # Events first: a refused write raises before any count is applied, so a retried batch
    # counts each recall once.
    _append_events(records)
    _touch_cards(records)
    try:
        _touch_short_term(records)
    except StoreUnavailable as exc:
        # Recall counts are statistics: with Redis down there is no item to count on anyway.
        logger.warning("recall counts of %d recalls not applied: %s", len(records), exc)


def _touch_short_term(records: Sequence[dict[str, Any]]) -> None:
    by_owner: dict[Owner, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    latest: dict[Owner, float] = {}
    for record in records:
        if not record["stm"] or record["end_user_id"] is None:
            continue
        owner = Owner(record["tenant_id"], record["end_user_id"])
        latest[owner] = max(latest.get(owner, 0.0), record["at"])
        for item_id in record["stm"]:
            by_owner[owner][item_id] += 1
    store = stm_store()
    for owner, counts in by_owner.items():
        store.touch(owner=owner, recalls=dict(counts), now=latest[owner])


def _touch_cards(records: Sequence[dict[str, Any]]) -> None:
    counts: dict[tuple[int, str], int] = defaultdict(int)
    last: dict[tuple[int, str], float] = {}
    for record in records:
        for memory_id in record["ltm"]:
            counts[(record["tenant_id"], memory_id)] += 1
            last[(record["tenant_id"], memory_id)] = record["at"]
    if not counts:
        return
    by_tenant: dict[int, dict[str, int]] = defaultdict(dict)
    for (tenant_id, memory_id), count in counts.items():
        by_tenant[tenant_id][memory_id] = count
    with transaction.atomic():
        for tenant_id, cards in by_tenant.items():
            newest = max(last[(tenant_id, m)] for m in cards)
            LtmCard.objects.filter(tenant_id=tenant_id, memory_id__in=list(cards)).update(
                access_count=F("access_count")
                + Case(
                    *(When(memory_id=m, then=Value(n)) for m, n in cards.items()),
                    output_field=IntegerField(),
                ),
                last_access_at=datetime.fromtimestamp(newest, tz=UTC),
            )


def _append_events(records: Sequence[dict[str, Any]]) -> None:
    by_session: dict[tuple[int, str, str], list[dict[str, Any]]] = defaultdict(list)
    known = {r["end_user_id"] for r in records if r.get("end_user_id") is not None}
    existing = set(EndUser.objects.filter(pk__in=known).values_list("pk", flat=True))
    for record in records:
        if record.get("end_user_id") is not None and record["end_user_id"] not in existing:
            continue  # the user was erased after this recall: record nothing about them
        by_session[(record["tenant_id"], record["session_id"], record["user_id"])].append(record)
    tenants = Tenant.objects.in_bulk({tenant_id for tenant_id, _, _ in by_session})
    refused: StoreUnavailable | None = None
    for (tenant_id, session_id, user_id), session_records in by_session.items():
        tenant = tenants.get(tenant_id)
        if tenant is None:
            continue  # the tenant was deleted meanwhile
        # A batch applied before (a retry after a refused write) appended some already.
        stored = message_ids_stored(
            tenant=tenant,
            session_id=session_id,
            message_ids=[r["recall_id"] for r in session_records],
        )
        pending = [r for r in session_records if r["recall_id"] not in stored]
        if not pending:
            continue
        try:
            events_append(
                tenant=tenant,
                session_id=session_id,
                user_id=user_id,
                events=[_event(record) for record in pending],
                task_id=pending[-1]["task_id"],
                create_session=False,  # a recall creates no session and no user
            )
        except StoreUnavailable as exc:
            # Transcript storage refused the write: the batch stays queued. The other sessions
            # are still tried, so what storage accepts lands now.
            refused = exc
        except DomainError as exc:
            # The session is unknown, erased or another user's: these recalls can never be
            # recorded there (they remain in the request logs).
            logger.warning(
                "recall events of session %s dropped (%s): %s",
                session_id,
                exc.code,
                ", ".join(r["recall_id"] for r in pending),
            )
    if refused is not None:
        raise refused


def _event(record: dict[str, Any]) -> EventIn:
    # Records queued before history and standing rules were recorded lack those keys.
    history = record.get("history", [])
    standing = record.get("standing", [])
    injected = [*record["stm"], *record["ltm"], *(entry["entry_id"] for entry in history)]
    content = f"recall {record['recall_id']}: injected {', '.join(injected) or 'nothing'}"
    if standing:
        content += f"; standing rules {', '.join(standing)}"
    return EventIn(
        role=Role.SYSTEM,
        content=content,
        message_id=record["recall_id"],
        metadata={
            "kind": RECALL_EVENT_KIND,
            "recall_id": record["recall_id"],
            "stm": record["stm"],
            "ltm": record["ltm"],
            "history": history,
            "standing": standing,
            "degraded": record["degraded"],
        },
        occurred_at=datetime.fromtimestamp(record["at"], tz=UTC),
    )
