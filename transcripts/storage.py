"""Segment objects in transcript storage (any Django storage backend; a local folder by default)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime

from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages

from memoryproject.errors import StoreUnavailable


def transcript_storage() -> Storage:
    return storages["transcripts"]


def segment_write(*, name: str, data: bytes) -> str:
    """Store a new segment object; returns the name it was stored under."""
    storage = transcript_storage()
    try:
        return storage.save(name, ContentFile(data))
    except OSError as exc:
        # A full disk leaves the file it could not fill behind; segment names are new, so what
        # is under `name` is that half-written file.
        with suppress(OSError):
            storage.delete(name)
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


@dataclass(frozen=True)
class StoredObject:
    name: str
    size: int
    modified_at: datetime


def stored_objects(*, folder: str = "") -> Iterator[StoredObject]:
    """Every object in transcript storage under `folder` ("" for all), at any depth."""
    storage = transcript_storage()
    folders = [folder.strip("/")]
    try:
        while folders:
            current = folders.pop()
            try:
                subfolders, files = storage.listdir(current)
            except FileNotFoundError:
                continue
            for name in sorted(files):
                path = f"{current}/{name}" if current else name
                yield StoredObject(
                    name=path, size=storage.size(path), modified_at=storage.get_modified_time(path)
                )
            folders += [f"{current}/{sub}" if current else sub for sub in sorted(subfolders)]
    except OSError as exc:
        raise StoreUnavailable(f"Transcript storage could not be listed: {exc}") from exc


def segments_delete(*, names: list[str]) -> int:
    """Delete segment objects by name (those gone already count as deleted); returns how many."""
    storage = transcript_storage()
    try:
        for name in names:
            storage.delete(name)
    except OSError as exc:
        raise StoreUnavailable(f"Transcript storage refused a delete: {exc}") from exc
    return len(names)


PROBE_FOLDER = ".probe"  # where storage_probe writes; never a segment


def storage_probe() -> None:
    """Write a small object and delete it again; StoreUnavailable when either fails (a full
    disk, a read-only mount, an object store refusing writes)."""
    storage = transcript_storage()
    wanted = f"{PROBE_FOLDER}/{uuid.uuid4().hex}"
    try:
        stored = storage.save(wanted, ContentFile(b"probe\n"))
    except OSError as exc:
        with suppress(OSError):
            storage.delete(wanted)  # a full disk may have left it, empty
        raise StoreUnavailable(f"Transcript storage refused a write: {exc}") from exc
    try:
        storage.delete(stored)
    except OSError as exc:
        raise StoreUnavailable(f"Transcript storage refused a delete: {exc}") from exc
