"""Signals other layers listen to, so Layer 0 depends on none of them."""

from django.dispatch import Signal

# Sent after an append has committed; receivers get `session_pk`, `first_seq`, `last_seq`
# and `roles` (the roles of the appended events).
events_appended = Signal()
