"""History's reaction to appends: note the new events in the outbox, then ask for a drain."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from transcripts.signals import events_appended


@receiver(events_appended, dispatch_uid="history-after-append")
def history_after_append(
    sender: Any,
    *,
    session_pk: int,
    first_seq: int = 0,
    last_seq: int = 0,
    roles: frozenset[str] = frozenset(),
    **_: Any,
) -> None:
    """Record the committed append's range for indexing (sent after the commit)."""
    from memories.history.services import history_drain_enqueue, history_record_append

    if history_record_append(
        session_pk=session_pk, first_seq=first_seq, last_seq=last_seq, roles=roles
    ):
        history_drain_enqueue()
