"""Signals other layers listen to, so Layer 0 depends on none of them."""

from django.dispatch import Signal

# Sent inside an append's transaction, once its segment and event rows are written, with
# `session_pk`, `first_seq`, `last_seq` and `roles` (the roles of the appended events).
# Receivers write what must land with the append or not at all (an outbox row); an exception
# of a receiver rolls the append back. Work outside PostgreSQL belongs after the commit.
events_appending = Signal()

# Sent after an append has committed, with the same arguments; receivers may fail (say, the
# broker is down) without failing the committed append, so what they do must be caught up
# later by a job.
events_appended = Signal()
