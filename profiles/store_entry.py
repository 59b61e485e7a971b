"""The rate limits' Redis script as the registry knows it (`memoryproject.stores`): loaded
by `ensure_stores`."""

from __future__ import annotations

from memoryproject.stores import Store
from profiles.throttling import load_scripts


def _ensure() -> list[str]:
    return [f"redis script {sha}" for sha in load_scripts()]


RATE_LIMITS = Store(name="rate_limits", ensure=_ensure)
