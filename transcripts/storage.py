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


def segments_under(*, prefix: str) -> list[str]:
    """Names of every stored segment object under `prefix` (a tenant's `<id>/`), at any depth."""
    storage = transcript_storage()
    found: list[str] = []
    folders = [prefix.rstrip("/")]
    try:
        while folders:
            folder = folders.pop()
            try:
                subfolders, files = storage.listdir(folder)
            except FileNotFoundError:
                continue
            found += [f"{folder}/{name}" for name in files]
            folders += [f"{folder}/{name}" for name in subfolders]
    except OSError as exc:
        raise StoreUnavailable(f"Transcript storage could not be listed: {exc}") from exc
    return found


def segments_delete(*, names: list[str]) -> int:
    """Delete segment objects by name (those gone already count as deleted); returns how many."""
    storage = transcript_storage()
    try:
        for name in names:
            storage.delete(name)
    except OSError as exc:
        raise StoreUnavailable(f"Transcript storage refused a delete: {exc}") from exc
    return len(names)
