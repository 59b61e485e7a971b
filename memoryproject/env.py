"""Strict parsing of settings from the environment.

A bad or missing value stops start-up with one line that names the variable, instead of a
traceback from deep inside a driver much later.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit


class ConfigError(SystemExit):
    """Raised for a bad environment variable; exits the process with a one-line message."""

    def __init__(self, name: str, problem: str) -> None:
        self.name = name
        super().__init__(f"configuration error: {name}: {problem}")


_MISSING = object()


class Env:
    """Typed getters over an environment mapping (os.environ by default)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ

    def _raw(self, name: str, default: Any) -> Any:
        value = self._environ.get(name)
        if value is None or value.strip() == "":
            if default is _MISSING:
                raise ConfigError(name, "is required but not set")
            return default
        return value.strip()

    def string(self, name: str, default: Any = _MISSING) -> str:
        return self._raw(name, default)

    def choice(self, name: str, default: Any = _MISSING, *, among: tuple[str, ...]) -> str:
        value = self.string(name, default)
        if value not in among:
            raise ConfigError(name, f"must be one of {', '.join(among)}, not {value!r}")
        return value

    def boolean(self, name: str, default: Any = _MISSING) -> bool:
        value = self._raw(name, default)
        if isinstance(value, bool):
            return value
        lowered = value.lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise ConfigError(name, f"expected true/false, got {value!r}")

    def integer(self, name: str, default: Any = _MISSING, *, minimum: int | None = None) -> int:
        value = self._raw(name, default)
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ConfigError(name, f"expected an integer, got {value!r}") from None
        if minimum is not None and number < minimum:
            raise ConfigError(name, f"must be at least {minimum}, got {number}")
        return number

    def number(
        self,
        name: str,
        default: Any = _MISSING,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> float:
        value = self._raw(name, default)
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if math.isnan(number) or math.isinf(number):
            raise ConfigError(name, f"expected a number, got {value!r}")
        if minimum is not None and number < minimum:
            raise ConfigError(name, f"must be at least {minimum}, got {value!r}")
        if maximum is not None and number > maximum:
            raise ConfigError(name, f"must be at most {maximum}, got {value!r}")
        return number

    def csv_list(self, name: str, default: Any = _MISSING) -> list[str]:
        value = self._raw(name, default)
        if isinstance(value, list):
            return value
        return [item.strip() for item in value.split(",") if item.strip()]

    def json_object(self, name: str, default: Any = _MISSING) -> dict[str, Any]:
        value = self._raw(name, default)
        if isinstance(value, dict):
            return value
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError(name, f"is not valid JSON ({exc.msg})") from None
        if not isinstance(parsed, dict):
            raise ConfigError(name, "must be a JSON object")
        return parsed

    def url(self, name: str, default: Any = _MISSING, *, schemes: tuple[str, ...]) -> str:
        value = self._raw(name, default)
        parts = urlsplit(value)
        if parts.scheme not in schemes:
            raise ConfigError(name, f"expected a URL starting with {' or '.join(schemes)}://")
        if not parts.hostname:
            raise ConfigError(name, "has no host")
        try:
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            raise ConfigError(name, "has an invalid port") from None
        return value

    def database(self, name: str, default: Any = _MISSING) -> dict[str, Any]:
        """Parse a postgres:// URL into a Django DATABASES entry."""
        url = self.url(name, default, schemes=("postgres", "postgresql"))
        parts = urlsplit(url)
        db_name = unquote(parts.path.lstrip("/"))
        if not db_name:
            raise ConfigError(name, "names no database (postgres://user@host:port/DBNAME)")
        options = dict(parse_qsl(parts.query))
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": db_name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or 5432),
            "OPTIONS": options,
        }
