"""A store registered beside the real ones is reached by erasure, tenant purge, `/readyz`,
`ensure_stores` and `check_drift` without any of them naming it (`memoryproject.stores`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from memories.review import erasure as erasure_module
from memories.review.deletion import deletion_approve
from memories.review.erasure import erasure_run
from memories.review.models import DeletionRequest, TenantPurge
from memories.review.tenant_purge import tenant_leftovers, tenant_purge
from memories.services import stores_ensure
from memoryproject.errors import StoreUnavailable
from memoryproject.stores import (
    Counts,
    Erasure,
    Findings,
    ReadyCheck,
    Step,
    Store,
    register,
    registered,
    unregister,
)
from memoryproject.stores import (
    TenantPurge as PurgeScope,
)
from profiles.services.tenants import tenant_delete
from tests.factories import EndUserFactory, StaffUserFactory


@dataclass
class Report:
    """The fake's drift report, in the shape every store's has."""

    found: dict[str, dict[str, list[str]]]

    @property
    def clean(self) -> bool:
        return not any(ids for by_index in self.found.values() for ids in by_index.values())


@dataclass
class FakeStore:
    """An in-process store: items per (tenant, user), and an index that should hold each."""

    items: dict[tuple[int, str], set[str]] = field(default_factory=dict)
    indexed: set[str] = field(default_factory=set)
    down: bool = False
    ensured: int = 0

    def add(self, tenant_id: int, user_id: str, *ids: str) -> None:
        self.items.setdefault((tenant_id, user_id), set()).update(ids)
        self.indexed.update(ids)

    def of_tenant(self, tenant_id: int) -> set[str]:
        return {i for (tenant, _), ids in self.items.items() if tenant == tenant_id for i in ids}

    # --- the entry points ----------------------------------------------------------------------
    def inventory(self, erasure: Erasure) -> dict[str, list[str]]:
        if not erasure.of_user:
            return {}
        return {"fake_ids": sorted(self.items.get((erasure.tenant_id, erasure.user_id), ()))}

    def erase(self, erasure: Erasure) -> Counts:
        if not erasure.of_user:
            return {"items": 0}
        removed = self.items.pop((erasure.tenant_id, erasure.user_id), set())
        self.indexed -= removed | set(erasure.inventory.get("fake_ids", []))  # by id too
        return {"items": len(removed)}

    def verify(self, erasure: Erasure, findings: Findings) -> None:
        ids = set(erasure.inventory.get("fake_ids", []))
        findings.by_id["fake"] = len(ids & (self.of_tenant(erasure.tenant_id) | self.indexed))

    def purge(self, purge: PurgeScope) -> Counts:
        removed = self.of_tenant(purge.tenant_id)
        self.items = {key: ids for key, ids in self.items.items() if key[0] != purge.tenant_id}
        self.indexed -= removed
        return {"items": len(removed)}

    def leftovers(self, purge: PurgeScope) -> Counts:
        return {"fake_items": len(self.of_tenant(purge.tenant_id))}

    def ensure(self) -> list[str]:
        self.ensured += 1
        return ["fake ready"]

    def ready(self) -> dict[str, int]:
        if self.down:
            raise StoreUnavailable("fake: not answering")
        return {"items": sum(len(ids) for ids in self.items.values())}

    def drift(self, repair: bool) -> Report:
        held = {i for ids in self.items.values() for i in ids}
        report = Report({"missing": {"index": sorted(held - self.indexed)}})
        if repair:
            self.indexed |= held
        return report

    def store(self) -> Store:
        return Store(
            name="fake",
            inventory=self.inventory,
            erase=[Step("fake", lambda erasure: self.erase(erasure))],
            verify=self.verify,
            purge=[Step("fake", self.purge)],
            leftovers=self.leftovers,
            ensure=self.ensure,
            ready={"fake": ReadyCheck(self.ready)},
            drift=self.drift,
        )


@pytest.fixture
def fake():
    """The fake store, registered after the real ones for this test only."""
    fake = FakeStore()
    register(fake.store())
    yield fake
    unregister("fake")
    assert "fake" not in {store.name for store in registered()}


@pytest.mark.django_db
def test_an_erasure_runs_the_registered_stores_steps_verifies_and_receipts_them(
    tenant, owner, fake
) -> None:
    EndUserFactory(tenant=tenant, external_id="u_42")
    fake.add(tenant.pk, "u_42", "f1", "f2")
    fake.add(tenant.pk, "u_7", "f3")
    asked = owner.post(reverse("memories:forget", kwargs={"user_id": "u_42"}))
    request = DeletionRequest.objects.get(request_id=asked.json()["request_id"])
    deletion_approve(request=request, reviewer=StaffUserFactory())

    assert erasure_run(request_id=request.request_id) == "done"

    # after every store registered before it, before the rows of record
    assert [name for name, _ in erasure_module.STEPS][-2:] == ["fake", "postgres"]
    request.refresh_from_db()
    assert request.receipt["stores"]["fake"]["items"] == 2
    assert request.receipt["checks"]["by_id"]["fake"] == 0
    assert fake.items == {(tenant.pk, "u_7"): {"f3"}}  # another user keeps theirs


@pytest.mark.django_db
def test_an_erasure_that_finds_the_store_still_holding_data_runs_its_steps_again(
    tenant, owner, fake
) -> None:
    EndUserFactory(tenant=tenant, external_id="u_42")
    fake.add(tenant.pk, "u_42", "f1")
    erase, rounds = fake.erase, []

    def leaves_the_index(erasure: Erasure) -> Counts:
        rounds.append(erasure.request_id)
        counts = erase(erasure)
        if len(rounds) == 1:
            fake.indexed.add("f1")  # a write racing the first round
        return counts

    fake.erase = leaves_the_index  # type: ignore[method-assign]
    asked = owner.post(reverse("memories:forget", kwargs={"user_id": "u_42"}))
    request = DeletionRequest.objects.get(request_id=asked.json()["request_id"])
    deletion_approve(request=request, reviewer=StaffUserFactory())

    assert erasure_run(request_id=request.request_id) == "done"
    request.refresh_from_db()
    assert request.receipt["checks"]["by_id"]["fake"] == 0
    assert len(rounds) == 2 and "f1" not in fake.indexed


@pytest.mark.django_db
def test_a_tenant_purge_runs_the_registered_stores_steps_and_checks_their_leftovers(
    tenant, other_tenant, fake
) -> None:
    EndUserFactory(tenant=tenant, external_id="u_42")
    fake.add(tenant.pk, "u_42", "f1", "f2")
    fake.add(other_tenant.pk, "u_42", "f9")
    tenant_id = tenant.pk
    assert tenant_leftovers(tenant_id=tenant_id, user_ids=["u_42"])["fake_items"] == 2

    tenant_delete(tenant=tenant)  # commit callbacks not run: the purge is run below
    (purge,) = TenantPurge.objects.filter(tenant_id=tenant_id)
    assert tenant_purge(purge_id=purge.pk) == "purged"

    assert tenant_leftovers(tenant_id=tenant_id, user_ids=["u_42"])["fake_items"] == 0
    assert fake.of_tenant(other_tenant.pk) == {"f9"}


@pytest.mark.django_db
def test_readyz_reports_the_registered_stores_check_and_fails_with_it(
    client: Client, tenant, fake
) -> None:
    fake.add(tenant.pk, "u_42", "f1")

    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.json()
    check = ready.json()["checks"]["fake"]
    assert check == {"ok": True, "items": 1, "latency_ms": check["latency_ms"]}

    fake.down = True
    down = client.get("/readyz")
    assert down.status_code == 503
    assert down.json()["failing"] == ["fake"]
    assert down.json()["checks"]["fake"]["error"] == "StoreUnavailable: fake: not answering"


def test_ensure_stores_sets_up_the_registered_store(fake) -> None:
    assert "fake ready" in stores_ensure()
    assert fake.ensured == 1


def test_check_drift_reaches_the_registered_store_and_repairs_it(tenant, fake) -> None:
    fake.add(tenant.pk, "u_42", "f1")
    fake.indexed.discard("f1")

    out = StringIO()
    with pytest.raises(CommandError):
        call_command("check_drift", "--store", "fake", stdout=out)
    assert f"missing  {'fake.index':22} f1" in out.getvalue()

    call_command("check_drift", "--store", "fake", "--repair", stdout=StringIO())
    out = StringIO()
    call_command("check_drift", "--store", "fake", stdout=out)
    assert "no drift" in out.getvalue()
