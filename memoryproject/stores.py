"""The registry of the stores the service keeps data in, and what each offers to the jobs that
visit every store: erasure, tenant purge, set-up (`ensure_stores`), readiness (`/readyz`) and
drift checks.

A layer that owns a store declares it once, as a `Store` in its `store_entry.py`; the entry
points register them in one place (`memories/stores.py`), in the order erasure and purge visit
them. The jobs loop over `registered()` and name no store, so a lower layer never imports up
and a new store is one new module and one registry entry (docs/architecture.md, "Adding a
store").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

S = TypeVar("S")
Counts = dict[str, int]
# Ids, texts and vectors an erasure keeps (during the job only) to verify with, per store.
PROBE_SAMPLE = 50


# --- what a store is asked -------------------------------------------------------------------
@dataclass(frozen=True)
class Erasure:
    """One approved erasure as a store sees it (a `DeletionRequest` of the review layer).

    `inventory` is what the job noted before anything was removed (the stores' own notes
    included); it is the job's record, so a step that finds more adds it there.
    """

    request_id: str
    tenant_id: int
    kind: str  # "user", "card", "fact" or "preference"
    target: str  # the user's external id, the card's memory id, the fact's or preference's id
    inventory: dict[str, Any]

    @property
    def of_user(self) -> bool:
        return self.kind == "user"

    @property
    def of_card(self) -> bool:
        return self.kind == "card"

    @property
    def of_fact(self) -> bool:
        """A stable fact or a preference."""
        return self.kind in ("fact", "preference")

    @property
    def user_id(self) -> str:
        return str(self.inventory["user_id"])

    @property
    def end_user_pk(self) -> int | None:
        pk = self.inventory.get("end_user_pk")
        return int(pk) if pk else None


@dataclass(frozen=True)
class TenantPurge:
    """A deleted tenant as a store sees it: its id and its end users' external ids."""

    tenant_id: int
    user_ids: list[str]


@dataclass
class Findings:
    """What verification found of an erasure, store by store: counts by id and by content
    hash (any of them fails it), the same content held by someone else (reported only), and
    sections of a store's own with their verdict in `ok`."""

    by_id: Counts = field(default_factory=dict)
    by_hash: Counts = field(default_factory=dict)
    elsewhere: Counts = field(default_factory=dict)
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    ok: bool = True

    def add_section(self, name: str, section: dict[str, Any], *, ok: bool) -> None:
        self.sections[name] = section
        self.ok = self.ok and ok


class Step(NamedTuple, Generic[S]):
    """One step of erasure or purge: the key its counts are recorded under, and the step."""

    key: str
    run: Callable[[S], Counts]


@dataclass(frozen=True)
class ReadyCheck:
    """One check of `/readyz`. `check()` raises when the store is not ready; what it returns
    (a dict, or None) is reported beside `ok`. `reused`: its result stands for
    READYZ_STORAGE_PROBE_SECONDS (it writes, or counts rows). `warns`: given the result, whether
    it needs attention without making the service unready."""

    check: Callable[[], dict[str, Any] | None]
    reused: bool = False
    warns: Callable[[dict[str, Any]], bool] | None = None


class Drift(Protocol):
    """A drift check's report: what differs, by kind ("missing", "stale", "extra") and index."""

    @property
    def found(self) -> Mapping[str, Mapping[str, Sequence[str]]]: ...

    @property
    def clean(self) -> bool: ...


@dataclass(frozen=True)
class Store:
    """A store and its entry points; each one it leaves out, it has nothing to do for.

    - `inventory(erasure)`: what to note before anything is removed (merged into the inventory);
    - `erase`: the steps of an erasure, in order, each recorded under its key on the request;
    - `verify(erasure, findings)`: what is left of the erased data, added to `findings`;
    - `purge`: the steps that remove a deleted tenant's data; `leftovers(purge)`: what is left;
    - `ensure()`: create indexes, collections, scripts; returns what was done;
    - `ready`: the checks of `/readyz`, by name;
    - `drift(repair)`: compare the store with its source of record, and optionally repair.
    """

    name: str
    inventory: Callable[[Erasure], dict[str, Any]] | None = None
    erase: Sequence[Step[Erasure]] = ()
    verify: Callable[[Erasure, Findings], None] | None = None
    purge: Sequence[Step[TenantPurge]] = ()
    leftovers: Callable[[TenantPurge], Counts] | None = None
    ensure: Callable[[], list[str]] | None = None
    ready: Mapping[str, ReadyCheck] = field(default_factory=dict)
    drift: Callable[[bool], Drift] | None = None


# --- the registry ----------------------------------------------------------------------------
_stores: list[Store] = []


def register(store: Store) -> None:
    """Add a store after those registered so far (its place in every loop below)."""
    if any(s.name == store.name for s in _stores):
        raise ValueError(f"a store named {store.name!r} is registered already")
    _stores.append(store)


def unregister(name: str) -> None:
    """Take a store out of the registry (a test's store once the test is done)."""
    _stores[:] = [s for s in _stores if s.name != name]


def registered() -> tuple[Store, ...]:
    """Every registered store, in registry order."""
    return tuple(_stores)


def store_named(name: str) -> Store:
    for store in _stores:
        if store.name == name:
            return store
    raise LookupError(f"no store named {name!r} is registered")


def steps_of(kind: str) -> list[Step[Any]]:
    """The `erase` or `purge` steps of every store in registry order, one per key: steps of
    two stores on one server that share a key (the short-term store and the recall cache,
    both `redis`) run together where the first of them stands, their counts side by side."""
    parts: dict[str, list[Callable[[Any], Counts]]] = {}
    for store in _stores:
        for step in getattr(store, kind):
            parts.setdefault(step.key, []).append(step.run)
    return [
        Step(key, runs[0] if len(runs) == 1 else _together(runs)) for key, runs in parts.items()
    ]


def _together(runs: list[Callable[[S], Counts]]) -> Callable[[S], Counts]:
    def run(scope: S) -> Counts:
        counts: Counts = {}
        for part in runs:
            counts |= part(scope)
        return counts

    return run


def ready_checks() -> Iterator[tuple[str, ReadyCheck]]:
    """Every registered store's readiness checks, in registry order."""
    for store in _stores:
        yield from store.ready.items()
