"""Session compression: read the session's transcript and short-term items, plan the context.

Reads only: nothing is written, not even access counts. The transcript keeps what was said;
what compression shows of it (near field, stubs, summary) is redacted like memory is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from memories.compression.llm import llm_summariser
from memories.compression.plan import Compression, compress
from memories.compression.summary import Summariser
from memories.stm.items import StmItem
from memories.stm.selectors import stm_items_for
from memoryproject.errors import Invalid, StoreUnavailable
from memoryproject.redaction import redactor_for
from profiles.models import Tenant
from transcripts.models import Session
from transcripts.selectors import (
    events_after,
    redacted_events,
    session_for,
    session_owner_conflict,
)

logger = logging.getLogger(__name__)

MIN_BUDGET_TOKENS = 50
MAX_BUDGET_TOKENS = 2_000_000
# The newest events read; older ones are reported as skipped (their conclusions still reach
# the summary through short-term memory).
MAX_EVENTS = 5000
MAX_STM_ITEMS = 500


@dataclass(frozen=True)
class SessionCompression:
    session: Session
    compression: Compression
    skipped: tuple[int, int] | None = None  # (first_seq, last_seq) not read
    degraded: list[str] = field(default_factory=list)


def session_user_id(session: Session) -> str:
    """The external id of the session's user; empty once the user was erased."""
    end_user = session.end_user
    return end_user.external_id if end_user is not None else ""


def session_compress(
    *,
    tenant: Tenant,
    session_id: str,
    budget_tokens: int,
    user_id: str = "",
    summariser: Summariser | None = None,
) -> SessionCompression:
    """The tenant's session compressed to `budget_tokens` for the next model turn.

    NotFound for unknown and other tenants' sessions; Invalid for a budget out of range;
    Conflict (as an append answers) for a `user_id` that is not the session's user.
    """
    if not MIN_BUDGET_TOKENS <= budget_tokens <= MAX_BUDGET_TOKENS:
        raise Invalid(
            "The budget is out of range.",
            fields={"budget_tokens": [f"Between {MIN_BUDGET_TOKENS} and {MAX_BUDGET_TOKENS}."]},
        )
    session = session_for(tenant=tenant, session_id=session_id)
    owner_id = session_user_id(session)
    if user_id and owner_id != user_id:
        raise session_owner_conflict(session_id)
    after = max(0, session.event_count - MAX_EVENTS)
    redactor = redactor_for(tenant)
    events = redacted_events(
        events_after(session=session, after=after, limit=MAX_EVENTS).events, redactor=redactor
    )
    task_id = redactor.text(session.task_id).text
    items: list[StmItem] = []
    degraded = []
    try:
        if owner_id:  # an erased user's session has no short-term items left
            items = stm_items_for(
                tenant=tenant,
                user_id=owner_id,
                session_id=session.external_id,
                limit=MAX_STM_ITEMS,
            ).items
    except StoreUnavailable:
        # Without short-term items nothing counts as digested: compression is only less deep.
        degraded.append("redis")
    summariser = summariser or llm_summariser()
    try:
        compression = compress(
            events=events,
            items=items,
            budget_tokens=budget_tokens,
            task_id=task_id,
            summariser=summariser,
        )
    except StoreUnavailable as exc:
        # The optional model summariser failed: the extractive one answers instead.
        logger.warning("session %s compressed extractively: %s", session_id, exc)
        degraded.append("summariser")
        compression = compress(
            events=events, items=items, budget_tokens=budget_tokens, task_id=task_id
        )
    return SessionCompression(
        session=session,
        compression=compression,
        skipped=(1, after) if after else None,
        degraded=degraded,
    )
