"""Run a beat job now (one of `memories.jobs.BY_HAND`: promotion_scan, reflection, expiry,
forgetting), optionally for one tenant."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memories.jobs import BY_HAND, job_run
from memories.management.options import tenant_option


class Command(BaseCommand):
    help = "Run a beat job now (promotion_scan, reflection, expiry, forgetting); safe to rerun."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("job", choices=BY_HAND)
        parser.add_argument("--tenant", help="only this tenant (its slug)")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_option(options.get("tenant"))
        # Progress overwrites itself on a terminal; written to a file or a pipe it would stay
        # beside the summary, so it is left out there.
        live = self.stdout.isatty()

        def progress(line: str) -> None:
            if live:
                self.stdout.write(f"\r{options['job']}: {line}", ending="")
                self.stdout.flush()

        outcome = job_run(name=options["job"], tenant=tenant, progress=progress)
        if live:
            self.stdout.write("\r\033[K", ending="")  # the progress line gives way to the summary
        if outcome == "busy":
            raise CommandError(f"{options['job']} is running already (its lock is held).")
        scope = f" for {tenant.slug}" if tenant else ""
        self.stdout.write(self.style.SUCCESS(f"{options['job']}{scope}: {outcome}"))
