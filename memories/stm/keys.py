"""Every Redis key the service writes is named here, so a prefix change happens in one place."""

from __future__ import annotations

from django.conf import settings


def _prefix() -> str:
    return settings.REDIS_KEY_PREFIX


def throttle(*, api_key_id: int, window: int) -> str:
    """Request counter of one API key in one fixed time window."""
    return f"{_prefix()}:throttle:{api_key_id}:{window}"


def all_keys_pattern() -> str:
    """Glob matching every key of this deployment (used to clean up test runs)."""
    return f"{_prefix()}:*"
