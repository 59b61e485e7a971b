"""What the memory commands share: the `--tenant` lookup and a one-line progress bar."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError

from profiles.models import Tenant


def tenant_option(slug: str | None) -> Tenant | None:
    """The tenant named by `--tenant`, None when not given; CommandError for an unknown slug."""
    if not slug:
        return None
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise CommandError(f"No tenant {slug!r}.")
    return tenant


def progress_bar(stdout: Any, unit: str, width: int = 30) -> Callable[[int, int], None]:
    """A progress callback that redraws `[####....] done/total unit` on one line."""

    def progress(done: int, total: int) -> None:
        filled = width * done // max(total, 1)
        stdout.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {unit}", ending="")
        stdout.flush()

    return progress
