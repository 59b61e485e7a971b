"""Rebuilding long-term memory's two indexes from the card ledger, and comparing them with it
(drift) to find and repair what a lost write left behind."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from memories.ltm.models import LtmCard
from memories.ltm.search import card_search_index
from memories.ltm.services import index_cards
from memories.ltm.vectors import vector_index
from profiles.models import Tenant


def _cards_in_batches(queryset: Any, batch_size: int) -> Iterator[list[LtmCard]]:
    batch: list[LtmCard] = []
    for card in (
        queryset.select_related("end_user", "project")
        .order_by("pk")
        .iterator(chunk_size=batch_size)
    ):
        batch.append(card)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def ltm_reindex(
    *,
    tenant: Tenant | None = None,
    batch_size: int = 256,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Rebuild both indexes from the ledger; returns how many cards were written.

    For all tenants Elasticsearch is rebuilt into a new index that then replaces the old one
    behind the alias in one step; for one tenant its cards are rewritten in place.
    """
    search, vectors = card_search_index(), vector_index()
    search.ensure()
    vectors.ensure()
    cards = LtmCard.objects.exclude(status=LtmCard.Status.DELETED)
    if tenant is not None:
        cards = cards.filter(tenant=tenant)
    new_index = search.new_index() if tenant is None else None
    total, done = cards.count(), 0
    for batch in _cards_in_batches(cards, batch_size):
        index_cards(batch, es_index=new_index)
        done += len(batch)
        if progress:
            progress(done, total)
    if new_index is not None:
        search.switch_alias(to=new_index)
        known = set(LtmCard.objects.exclude(status="deleted").values_list("memory_id", flat=True))
        extra = [memory_id for memory_id, _ in vectors.versions() if memory_id not in known]
        vectors.remove(ids=extra)
    vectors.flush()
    return done


@dataclass(frozen=True)
class DriftReport:
    missing: dict[str, list[str]]  # index -> ids the ledger has and the index lacks
    stale: dict[str, list[str]]  # index -> ids whose version differs from the ledger
    extra: dict[str, list[str]]  # index -> ids the ledger does not have (or deleted)

    @property
    def clean(self) -> bool:
        return not any([*self.missing.values(), *self.stale.values(), *self.extra.values()])

    @property
    def found(self) -> dict[str, dict[str, list[str]]]:
        return {"missing": self.missing, "stale": self.stale, "extra": self.extra}


def ltm_drift(*, repair: bool = False) -> DriftReport:
    """Compare ids and versions across PostgreSQL, Elasticsearch and Milvus; optionally repair."""
    ledger = dict(
        LtmCard.objects.exclude(status=LtmCard.Status.DELETED).values_list("memory_id", "version")
    )
    indexes = {
        "elasticsearch": dict(card_search_index().versions()),
        "milvus": dict(vector_index().versions()),
    }
    report = DriftReport(
        missing={n: sorted(ledger.keys() - held.keys()) for n, held in indexes.items()},
        stale={
            n: sorted(i for i in ledger.keys() & held.keys() if held[i] != ledger[i])
            for n, held in indexes.items()
        },
        extra={n: sorted(held.keys() - ledger.keys()) for n, held in indexes.items()},
    )
    if repair and not report.clean:
        to_index = {i for ids in [*report.missing.values(), *report.stale.values()] for i in ids}
        for batch_start in range(0, len(to_index), 256):
            ids = sorted(to_index)[batch_start : batch_start + 256]
            index_cards(
                list(
                    LtmCard.objects.select_related("end_user", "project").filter(memory_id__in=ids)
                )
            )
        if report.extra["elasticsearch"]:
            card_search_index().remove(
                versions={i: indexes["elasticsearch"][i] + 1 for i in report.extra["elasticsearch"]}
            )
        vector_index().remove(ids=report.extra["milvus"])
        vector_index().flush()
    return report
