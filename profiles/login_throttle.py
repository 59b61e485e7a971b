"""Admin login throttling: failed attempts counted per username and per client address in Redis.

After ADMIN_LOGIN_FAILURES_PER_USERNAME failures for one username, or ADMIN_LOGIN_FAILURES_PER_IP
from one address, within ADMIN_LOGIN_WINDOW_SECONDS of the first of them, every attempt is
refused, a correct password too, until that window ends. A successful login clears its
username's count (not its address's). The address is REMOTE_ADDR: behind a reverse proxy it
must be set to the client's address (by the WSGI server or proxy), or all clients share the
proxy's count. When Redis is unreachable logins are not throttled; that is logged.
"""

from __future__ import annotations

import hashlib
import logging
import math
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from redis.exceptions import RedisError

from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection

logger = logging.getLogger(__name__)

# Count one failure on each key, starting the window on the first; answers count and
# milliseconds left of each key's window.
COUNT_FAILURE = """
local answer = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('INCR', key)
  if n == 1 then redis.call('PEXPIRE', key, ARGV[1]) end
  answer[2 * i - 1] = n
  answer[2 * i] = redis.call('PTTL', key)
end
return answer
"""


class LoginThrottle:
    """Failed admin logins of one username and one client address, in fixed windows."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._count_failure = client.register_script(COUNT_FAILURE)

    def wait_seconds(self, *, username: str, address: str) -> int:
        """Seconds until this username may try again from this address; 0 if it may now."""
        names = self._keys(username, address)
        try:
            pipe = self._client.pipeline(transaction=False)
            for name in names:
                pipe.get(name)
                pipe.pttl(name)
            answer = pipe.execute()
        except RedisError:
            logger.warning("admin login not throttled: Redis unavailable", exc_info=True)
            return 0
        return self._wait([int(value or 0) for value in answer])

    def failed(self, *, username: str, address: str) -> int:
        """Count a failed attempt; the seconds to wait if that reached a limit, else 0."""
        window_ms = settings.ADMIN_LOGIN_WINDOW_SECONDS * 1000
        try:
            answer = self._count_failure(keys=self._keys(username, address), args=[window_ms])
        except RedisError:
            logger.warning("admin login failure not counted: Redis unavailable", exc_info=True)
            return 0
        return self._wait([int(value) for value in answer])

    def succeeded(self, *, username: str) -> None:
        """A successful login clears its username's count."""
        try:
            self._client.delete(keys.admin_login_failures(by="username", digest=_digest(username)))
        except RedisError:
            logger.warning("admin login count not cleared: Redis unavailable", exc_info=True)

    @staticmethod
    def _keys(username: str, address: str) -> list[str]:
        return [
            keys.admin_login_failures(by="username", digest=_digest(username)),
            keys.admin_login_failures(by="ip", digest=_digest(address)),
        ]

    @staticmethod
    def _wait(answer: list[int]) -> int:
        """From [count, ms left] of the username and the address: the longer wait due."""
        limits = (settings.ADMIN_LOGIN_FAILURES_PER_USERNAME, settings.ADMIN_LOGIN_FAILURES_PER_IP)
        wait_ms = 0
        for count, left_ms, limit in zip(answer[::2], answer[1::2], limits, strict=True):
            if count >= limit:
                # A counter without a TTL (never written so) would block for good: a window.
                left = left_ms if left_ms > 0 else settings.ADMIN_LOGIN_WINDOW_SECONDS * 1000
                wait_ms = max(wait_ms, left)
        return math.ceil(wait_ms / 1000)


def _digest(subject: str) -> str:
    """Key names carry a digest, never the username or address itself."""
    return hashlib.sha256(subject.casefold().encode()).hexdigest()[:32]


def login_throttle() -> LoginThrottle:
    # Built per login (logins are rare), so it always uses the current Redis settings.
    return LoginThrottle(redis_connection())


def client_address(request: HttpRequest | None) -> str:
    return (request.META.get("REMOTE_ADDR") if request is not None else "") or "unknown"


class ThrottledAdminAuthenticationForm(AdminAuthenticationForm):
    """The admin login form, refusing every attempt while its username or address is
    throttled (see the module docstring)."""

    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "throttled": "Too many failed attempts; try again in %(minutes)s.",
    }

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if username is None or not password:
            return super().clean()
        throttle = login_throttle()
        address = client_address(self.request)
        wait = throttle.wait_seconds(username=username, address=address)
        if wait:
            raise self._throttled(wait, address)
        try:
            cleaned = super().clean()
        except ValidationError:
            wait = throttle.failed(username=username, address=address)
            if wait:
                raise self._throttled(wait, address) from None
            raise
        throttle.succeeded(username=username)
        return cleaned

    def _throttled(self, wait_seconds: int, address: str) -> ValidationError:
        # The username is not logged: people type passwords into that field too.
        logger.warning("admin login refused after too many failed attempts (from %s)", address)
        minutes = max(1, math.ceil(wait_seconds / 60))
        return ValidationError(
            self.error_messages["throttled"],
            code="throttled",
            params={"minutes": f"{minutes} minute" if minutes == 1 else f"{minutes} minutes"},
        )
