"""What the drift commands share: one line per id that differs, then the verdict."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from memoryproject.stores import Drift


def drift_write(stdout: Any, drift: Drift, *, store: str = "", width: int = 14) -> None:
    """`<kind> <index> <id>` for each id that differs (the index named `<store>.<index>` when
    the report is one of several stores')."""
    for kind, by_index in drift.found.items():
        for index, ids in by_index.items():
            name = f"{store}.{index}" if store else index
            for each in ids:
                stdout.write(f"{kind:8} {name:{width}} {each}")


def drift_verdict(stdout: Any, *, clean: bool, repaired: bool) -> None:
    """ "no drift", "repaired", or a CommandError saying how to fix what was found."""
    if clean:
        stdout.write("no drift")
    elif repaired:
        stdout.write("repaired")
    else:
        raise CommandError("drift found; run with --repair to fix it")
