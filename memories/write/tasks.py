"""Celery entry points of the write pipeline; each calls one service.

Each task keeps its name under `memories.tasks`, where the app registers them all.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from memoryproject.errors import StoreUnavailable

logger = logging.getLogger(__name__)

# A busy session is tried again this often: a lease whose holder died lapses within
# LOCK_LEASE_SECONDS, so a few tries find it free.
BUSY_COUNTDOWN_SECONDS = 5
BUSY_RETRIES = 20


@shared_task(
    name="memories.tasks.stm_extract_task",
    bind=True,
    acks_late=True,
    autoretry_for=(StoreUnavailable,),
    retry_backoff=True,
    max_retries=6,
    soft_time_limit=240,
)
def stm_extract_task(self, *, session_pk: int) -> str:  # type: ignore[no-untyped-def]
    """Extract short-term memory candidates from a session's new transcript events."""
    from memories.write.extraction import ExtractionBusy, session_extract
    from memoryproject.locks import LeaseLost

    try:
        return session_extract(session_pk=session_pk)
    except LeaseLost:
        return "lease lost"  # the run that took over extracts what this one left
    except ExtractionBusy as busy:
        # Another run holds the session; come back after it so no event is left behind (a
        # holder that died frees it within one lease). Should it still hold the session after
        # every retry, the catch-up job queues the session again: nothing is lost.
        if self.request.retries >= BUSY_RETRIES:
            logger.warning("session %s still busy; left to the catch-up job", session_pk)
            return "busy"
        raise self.retry(countdown=BUSY_COUNTDOWN_SECONDS, max_retries=BUSY_RETRIES) from busy


@shared_task(name="memories.tasks.stm_extract_catch_up_task", acks_late=True, soft_time_limit=60)
def stm_extract_catch_up_task() -> str:
    """Enqueue extraction for every session whose cursor lags its transcript."""
    from memories.write.extraction import sessions_lagging

    lagging = sessions_lagging()
    for session_pk in lagging:
        stm_extract_task.delay(session_pk=session_pk)
    return f"enqueued {len(lagging)}"


@shared_task(
    name="memories.tasks.stm_vectors_task",
    acks_late=True,
    autoretry_for=(StoreUnavailable,),
    retry_backoff=True,
    max_retries=6,
    soft_time_limit=60,
)
def stm_vectors_task(*, tenant_id: int, items: list[list[Any]]) -> str:
    """Embed newly written short-term items for recall's comparison in meaning."""
    from memories.write.vectors import stm_vectors_write

    return stm_vectors_write(tenant_id=tenant_id, items=[(int(u), str(i)) for u, i in items])
