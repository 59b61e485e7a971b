"""`manage.py run_job` runs a beat job now, for every tenant or one; the tenant admin's action
queues the promotion scan."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from memories.review.models import PromotionRequest
from memories.stm.store import stm_store
from tests.factories import EndUserFactory, MembershipFactory, StaffUserFactory, TenantFactory
from tests.memories.review.test_promotion import HOUR, NOW, item


def _seed(tenant, external_id: str, **fields):
    end_user = EndUserFactory(tenant=tenant, external_id=external_id)
    stm_store().upsert(items=[item(end_user, sessions=["s_1", "s_2"], **fields)], now=NOW)
    return end_user


def run(*args: str) -> str:
    out = StringIO()
    call_command("run_job", *args, stdout=out)
    return out.getvalue()


def test_the_promotion_scan_runs_now_for_one_tenant(db) -> None:
    mine, theirs = TenantFactory(slug="mine"), TenantFactory(slug="theirs")
    alice, _ = _seed(mine, "alice"), _seed(theirs, "bob")

    out = run("promotion_scan", "--tenant", "mine")

    assert out == "promotion_scan for mine: examined 1 items, proposed 1\n"  # once, no progress
    assert [(p.tenant, p.end_user) for p in PromotionRequest.objects.all()] == [(mine, alice)]
    assert "proposed 0" in run("promotion_scan", "--tenant", "mine")  # safe to rerun


def test_expiry_removes_only_the_tenants_expired_items(db) -> None:
    mine, theirs = TenantFactory(slug="mine"), TenantFactory(slug="theirs")
    gone = NOW - HOUR
    alice = _seed(mine, "alice", expires_at=gone)
    bob = _seed(theirs, "bob", expires_at=gone)

    out = run("expiry", "--tenant", "mine")

    assert "removed 1 expired items of 1 users" in out
    assert stm_store().items_of(owner=item(alice).owner) == []
    assert len(stm_store().items_of(owner=item(bob).owner)) == 1


def test_reflection_and_forgetting_run_and_an_unknown_tenant_is_refused(db) -> None:
    TenantFactory(slug="mine")

    assert "reflection for mine: weighed" in run("reflection", "--tenant", "mine")
    assert "forgetting: archived 0" in run("forgetting")
    with pytest.raises(CommandError, match="No tenant 'nope'"):
        run("promotion_scan", "--tenant", "nope")


def test_the_tenant_admin_queues_the_promotion_scan_from_the_tenant_list(
    db, settings, django_capture_on_commit_callbacks
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    mine, theirs = TenantFactory(slug="mine"), TenantFactory(slug="theirs")
    _seed(mine, "alice"), _seed(theirs, "bob")
    staff = StaffUserFactory()
    MembershipFactory(user=staff, tenant=mine)
    client = Client()
    client.force_login(staff)

    response = client.post(
        reverse("admin:profiles_tenant_changelist"),
        {"action": "queue_promotion_scan", "_selected_action": [mine.pk, theirs.pk]},
        follow=True,
    )

    assert "Queued the promotion scan for mine;" in response.content.decode()
    assert [p.tenant for p in PromotionRequest.objects.all()] == [mine]
