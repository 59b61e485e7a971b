from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.management.options import progress_bar, tenant_option
from memories.review.redaction import STORES, redact_existing
from memoryproject.errors import StoreUnavailable


class Command(BaseCommand):
    help = "Redact what was stored before redaction covered it (profiles, preferences, facts, "
    help += "short-term items, cards and their indexes, history entries, review requests); "
    help += "audited, in bounded batches, safe to rerun: a second run changes nothing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant (slug)")
        parser.add_argument(
            "--store", action="append", choices=STORES, help="only this store (repeatable)"
        )
        parser.add_argument("--batch-size", type=int, default=200, help="rows per transaction")
        parser.add_argument("--dry-run", action="store_true", help="count, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_option(options["tenant"])
        bars: dict[str, Any] = {}

        def progress(store: str, done: int, total: int) -> None:
            if store not in bars:
                if bars:
                    self.stdout.write("")
                bars[store] = progress_bar(self.stdout, f"{store} checked")
            bars[store](done, total)

        try:
            result = redact_existing(
                tenant=tenant,
                stores=options["store"] or STORES,
                batch_size=max(options["batch_size"], 1),
                dry_run=options["dry_run"],
                progress=progress,
            )
        except StoreUnavailable as exc:
            raise CommandError(str(exc)) from exc
        if bars:
            self.stdout.write("")
        verb = "would redact" if result.dry_run else "redacted"
        for store, count in result.stores.items():
            line = f"{store}: checked {count.checked}, {verb} {count.changed}"
            if count.skipped:
                line += f", {count.skipped} changed meanwhile (run again)"
            self.stdout.write(line)
        if result.changed == 0:
            self.stdout.write("Nothing to redact: every stored text is already redacted.")
        elif not result.dry_run:
            self.stdout.write(f"Redacted {result.changed} rows; each is an audit event 'redact'.")
