"""Segment objects in transcript storage (any Django storage backend; a local folder by default)."""

from __future__ import annotations

from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages

from memoryproject.errors import StoreUnavailable


def transcript_storage() -> Storage:
    return storages["transcripts"]


def segment_write(*, name: str, data: bytes) -> str:
    """Store a new segment object; returns the name it was stored under."""
    try:
        return transcript_storage().save(name, ContentFile(data))
    except OSError as exc:
        raise StoreUnavailable(f"Transcript storage refused a write: {exc}") from exc


def segment_read(*, name: str) -> bytes:
    """The stored bytes of a segment; FileNotFoundError when the object is gone."""
    with transcript_storage().open(name, "rb") as handle:
        return handle.read()


def segment_delete(*, name: str) -> None:
    transcript_storage().delete(name)
