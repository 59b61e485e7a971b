"""History's reaction to appends: note the new events in the outbox, then ask for a drain."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.dispatch import receiver

from transcripts.signals import events_appending


@receiver(events_appending, dispatch_uid="history-with-append")
def history_with_append(
    sender: Any,
    *,
    session_pk: int,
    first_seq: int = 0,
    last_seq: int = 0,
    roles: frozenset[str] = frozenset(),
    **_: Any,
) -> None:
    """Record the append's range for indexing in the append's own transaction, so the two
    commit together or not at all; the drain is asked for once they have committed."""
    from memories.history.services import history_drain_enqueue, history_record_append

    if history_record_append(
        session_pk=session_pk, first_seq=first_seq, last_seq=last_seq, roles=roles
    ):
        transaction.on_commit(history_drain_enqueue)
