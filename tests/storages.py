"""Transcript storage that refuses writes, configured through STORAGES like the real one."""

from __future__ import annotations

import errno
import os
from typing import Any

from django.core.files.storage import FileSystemStorage


class FullDiskStorage(FileSystemStorage):
    """A local folder on a full disk: reads and deletes work, every write fails as the
    operating system fails it (OSError ENOSPC), after creating the file it could not fill."""

    def _save(self, name: str, content: Any) -> str:
        path = self.path(name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "xb").close()  # noqa: SIM115 - created, then nothing fits
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), name)
