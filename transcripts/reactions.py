"""What the layers above Layer 0 do when events are appended: one table, filled at start-up.

Layer 0 imports none of those layers, so they register their reactions here when Django starts
(`memories.apps.MemoriesConfig.ready` holds the table) and `transcripts.services.events_append`
calls them, in the order registered, with the append's `Appended` range:

- `within` reactions run inside the append's transaction, once its segment and event rows are
  written. They write what must commit with the append or not at all (the history outbox row);
  an exception of one rolls the append back.
- `after_commit` reactions run once the append has committed. One may fail (say, the broker is
  down) without failing the committed append, so what it does must be caught up later by a
  job (extraction's catch-up); a failure is logged and the next reaction still runs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Appended:
    """The events one append added to a session."""

    session_pk: int
    first_seq: int
    last_seq: int
    roles: frozenset[str]  # the roles of the appended events


class Reaction(Protocol):
    def __call__(self, *, appended: Appended) -> None: ...


_within: list[Reaction] = []
_after_commit: list[Reaction] = []


def register_append_reactions(
    *, within: Sequence[Reaction] = (), after_commit: Sequence[Reaction] = ()
) -> None:
    """Install the reactions to appends (at start-up); a second call replaces the first's."""
    _within[:] = within
    _after_commit[:] = after_commit


def append_reactions() -> tuple[tuple[Reaction, ...], tuple[Reaction, ...]]:
    """The table as registered: (`within`, `after_commit`)."""
    return tuple(_within), tuple(_after_commit)


def react_within(*, appended: Appended) -> None:
    """Run the `within` reactions; called inside the append's transaction."""
    for reaction in _within:
        reaction(appended=appended)


def react_after_commit(*, appended: Appended) -> None:
    """Run the `after_commit` reactions; none of them can fail the committed append."""
    for reaction in _after_commit:
        try:
            reaction(appended=appended)
        except Exception:
            logger.exception(
                "%s failed after the append to session %s (events %s-%s); a job catches up",
                getattr(reaction, "__qualname__", reaction),
                appended.session_pk,
                appended.first_seq,
                appended.last_seq,
            )
