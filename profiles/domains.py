"""Domain keys of Layer 1 facts: `preference.answer_style`, `project_metadata.default_env`, ...

PostgreSQL is the authority for the profile.*, permission.*, config.* and project_metadata.*
domains; preferences live under preference.* (and profile.*).
"""

from __future__ import annotations

import re

AUTHORITATIVE_DOMAINS = ("profile", "permission", "config", "project_metadata")
PREFERENCE_DOMAINS = ("preference", "profile")
FACT_DOMAINS = (*AUTHORITATIVE_DOMAINS, "preference", "fact")

KEY_PATTERN = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")
KEY_MAX_LENGTH = 200


def key_problem(key: str, *, domains: tuple[str, ...]) -> str | None:
    """Why `key` is not a valid domain key among `domains`, or None when it is."""
    if len(key) > KEY_MAX_LENGTH:
        return f"must be at most {KEY_MAX_LENGTH} characters"
    if not KEY_PATTERN.match(key):
        return "must look like domain.name (lower case, dot separated)"
    if key.split(".", 1)[0] not in domains:
        return f"domain must be one of {', '.join(domains)}"
    return None


def is_authoritative(key: str) -> bool:
    """True when PostgreSQL wins any conflict about this key."""
    return key.split(".", 1)[0] in AUTHORITATIVE_DOMAINS
