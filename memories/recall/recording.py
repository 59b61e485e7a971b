"""Whether a recall is recorded, and its record: what it injected, handed to the effects queue
(`effects.py`) that counts the accesses and appends the transcript event off the hot path."""

from __future__ import annotations

import time

from django.db import DatabaseError

from memories.recall.effects import recall_effects_schedule
from memories.recall.render import Injection
from memories.recall.trace import Trace, why
from memoryproject.redis_keys import Owner
from profiles.models import Tenant
from transcripts.selectors import session_is_users


def recall_recordable(*, tenant: Tenant, session_id: str, user_id: str, trace: Trace) -> bool:
    """Whether the recall is recorded: only in an existing session of its user, so a read key
    creates no session, user or event. Conflict when the session is another user's."""
    started = time.perf_counter()
    try:
        return session_is_users(tenant=tenant, session_id=session_id, user_id=user_id)
    except DatabaseError as exc:
        trace.fail("postgres", why(exc))
        return True  # unchecked: the effects task appends only to the user's existing session
    finally:
        trace.timed("postgres", started)


def recall_record(
    *,
    tenant: Tenant,
    recall_id: str,
    user_id: str,
    session_id: str,
    task_id: str,
    owner: Owner | None,
    injection: Injection,
    trace: Trace,
) -> None:
    """Queue the access updates and the transcript event; applied in batches by a task."""
    items = injection.items
    record = {
        "recall_id": recall_id,
        "tenant_id": tenant.pk,
        "user_id": user_id,
        "end_user_id": owner.end_user_id if owner else None,
        "session_id": session_id,
        "task_id": task_id,
        "at": time.time(),
        "stm": [c.memory_id for c in items if c.source == "redis"],
        "ltm": [c.memory_id for c in items if c.source == "ltm"],
        "history": [
            {
                "entry_id": c.memory_id,
                "event_ids": list(c.provenance.get("event_ids", [])),
                "session_id": c.provenance.get("session_id", ""),
            }
            for c in items
            if c.source == "history"
        ],
        "standing": list(injection.standing),
        "degraded": list(trace.degraded),
    }
    recall_effects_schedule(record=record, trace_failure=lambda reason: trace.fail("redis", reason))
