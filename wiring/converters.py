"""URL converters for ids in paths: the ids clients choose (sessions, end users) and the
service's own (items, cards, facts, deletions) share one ASCII alphabet of at most 128
characters, so any other path segment is a 404 before a store is asked."""

from profiles.models import EXTERNAL_ID_PATTERN


class ExternalIdConverter:
    regex = EXTERNAL_ID_PATTERN

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value
