"""Per-API-key request throttling: a fixed one-minute window counted atomically in Redis."""

from __future__ import annotations

import logging
import time
from functools import cache
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError
from rest_framework.throttling import BaseThrottle

from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60
# INCR and the first PEXPIRE in one step, so a counter can never be left without a TTL.
COUNT_IN_WINDOW = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
"""


@cache
def _count_script() -> Any:
    return redis_connection().register_script(COUNT_IN_WINDOW)


def load_scripts() -> list[str]:
    """Load the throttle script into Redis' script cache; returns the SHA1s loaded."""
    return [redis_connection().script_load(COUNT_IN_WINDOW)]


class ApiKeyRateThrottle(BaseThrottle):
    """Allow API_RATE_LIMIT_PER_MINUTE requests per key per minute; fail open if Redis is down."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Any, view: Any) -> bool:
        api_key = getattr(request, "auth", None)
        if api_key is None:
            return True
        now = time.time()
        window = int(now // WINDOW_SECONDS)
        key = keys.throttle(api_key_id=api_key.pk, window=window)
        try:
            count = int(_count_script()(keys=[key], args=[WINDOW_SECONDS * 1000 + 1000]))
        except RedisError:
            logger.warning("throttle skipped: Redis unavailable", exc_info=True)
            return True
        if count > settings.API_RATE_LIMIT_PER_MINUTE:
            self._wait = (window + 1) * WINDOW_SECONDS - now
            return False
        return True

    def wait(self) -> float | None:
        return self._wait
