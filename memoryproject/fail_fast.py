"""Servers that failed moments ago: calls to them are refused at once for a while instead of
each waiting its own timeout on a server that is down or frozen. Redis (and the broker on it)
and PostgreSQL each keep one window, with their own length."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable


class FailFastWindow:
    """When each failed server may be tried again; `hold_seconds()` (read at each failure, so
    a changed setting applies) is how long a failure keeps it refused; 0 turns it off."""

    def __init__(self, hold_seconds: Callable[[], float]) -> None:
        self._hold_seconds = hold_seconds
        self.until: dict[Hashable, float] = {}
        self._lock = threading.Lock()

    def failed_recently(self, server: Hashable) -> bool:
        until = self.until.get(server)
        return until is not None and time.monotonic() < until

    def failed(self, server: Hashable) -> None:
        hold = self._hold_seconds()
        if hold > 0:
            with self._lock:
                self.until[server] = time.monotonic() + hold

    def recovered(self, server: Hashable) -> None:
        if self.until:
            with self._lock:
                self.until.pop(server, None)
