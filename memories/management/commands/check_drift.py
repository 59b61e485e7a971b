from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.management.drift import drift_verdict, drift_write
from memoryproject.errors import StoreUnavailable
from memoryproject.stores import registered, store_named


class Command(BaseCommand):
    help = "Report (and with --repair fix) what every registered store holds that its source "
    help += "of record does not, or lacks: the cards' and history's indexes today."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--store", action="append", help="only this registered store (repeatable)"
        )
        parser.add_argument("--repair", action="store_true", help="index or remove what differs")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            stores = [store_named(n) for n in options["store"]] if options["store"] else None
        except LookupError as exc:
            raise CommandError(str(exc)) from exc
        clean = True
        for store in stores or registered():
            if store.drift is None:
                continue
            try:
                drift = store.drift(options["repair"])
            except StoreUnavailable as exc:
                raise CommandError(f"{store.name}: {exc}") from exc
            drift_write(self.stdout, drift, store=store.name, width=22)
            clean = clean and drift.clean
        drift_verdict(self.stdout, clean=clean, repaired=options["repair"])
