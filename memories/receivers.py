"""Reactions to other layers' signals."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from transcripts.signals import events_appended


@receiver(events_appended)
def extract_after_append(sender: Any, *, session_pk: int, **_: Any) -> None:
    """Queue extraction once new transcript events have committed."""
    from memories.tasks import stm_extract_task

    stm_extract_task.delay(session_pk=session_pk)
