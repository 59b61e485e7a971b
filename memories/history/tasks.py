"""Celery entry points of episodic history; each calls one service.

Each task keeps its name under `memories.tasks`, where the app registers them all.
"""

from __future__ import annotations

from celery import shared_task

from memoryproject.errors import StoreUnavailable


@shared_task(
    name="memories.tasks.history_outbox_drain_task",
    acks_late=True,
    autoretry_for=(StoreUnavailable,),
    retry_backoff=True,
    max_retries=8,
    soft_time_limit=300,
)
def history_outbox_drain_task(*, catch_up: bool = False) -> str:
    """Index transcript events waiting in the history outbox; requeues itself while rows remain.

    With `catch_up` (the beat job) unindexed events are queued first: those above a session's
    cursor with no row pending, and the gaps below the cursors of a few audited sessions.
    """
    from memories.history.services import (
        history_audit,
        history_catch_up,
        history_drain_started,
        history_outbox_drain,
    )

    history_drain_started()
    queued = history_catch_up() + history_audit() if catch_up else 0
    result = history_outbox_drain()
    if result.more:
        history_outbox_drain_task.delay()
    return f"indexed {result.indexed} entries of {result.events} events; caught up {queued}"
