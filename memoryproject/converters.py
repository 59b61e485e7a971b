"""URL converters for the ids clients choose (sessions, end users)."""

from profiles.models import EXTERNAL_ID_PATTERN


class ExternalIdConverter:
    regex = EXTERNAL_ID_PATTERN

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value
