"""Deleting a tenant removes its data from Redis, Elasticsearch, Milvus and transcript storage
too, against the real stores; another tenant keeps everything."""

from __future__ import annotations

import pytest

from memories.history.search import history_search_index
from memories.history.vectors import history_vector_index
from memories.ltm import search as search_module
from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memories.review.models import TenantPurge
from memories.review.tenant_purge import tenant_leftovers, tenant_purge
from memories.stm.store import stm_store
from memories.tasks import tenant_purges_resume_task
from memoryproject.errors import StoreUnavailable
from profiles.models import Tenant
from profiles.services.tenants import tenant_delete
from tests.memories.review.test_erasure import seed_user


def held(tenant: Tenant) -> dict[str, int]:
    return tenant_leftovers(tenant_id=tenant.pk, user_ids=["u_42", "u_7"])  # before deletion


@pytest.fixture
def two_tenants(tenant, other_tenant, owner, stranger, django_capture_on_commit_callbacks):
    """Two users of `tenant` and one of `other_tenant`, each with data in every store."""
    seeded = {
        "mine": seed_user(owner, tenant, django_capture_on_commit_callbacks),
        "mine_too": seed_user(owner, tenant, django_capture_on_commit_callbacks, "u_7", "s_7"),
        "theirs": seed_user(stranger, other_tenant, django_capture_on_commit_callbacks),
    }
    for kept in (held(tenant), held(other_tenant)):
        assert all(kept[name] for name in kept), kept  # something of each tenant in each store
    return seeded


def test_deleting_a_tenant_empties_every_store_of_it_and_only_of_it(
    tenant, other_tenant, two_tenants, django_capture_on_commit_callbacks
) -> None:
    theirs_before = held(other_tenant)
    tenant_id = tenant.pk

    with django_capture_on_commit_callbacks(execute=True):
        tenant_delete(tenant=tenant)

    assert not Tenant.objects.filter(pk=tenant_id).exists()
    left = tenant_leftovers(tenant_id=tenant_id, user_ids=["u_42", "u_7"])
    assert left == dict.fromkeys(left, 0)
    # Checked by id as well: the cards and entries the tenant had are nowhere.
    cards = two_tenants["mine"]["cards"] + two_tenants["mine_too"]["cards"]
    assert card_search_index().get_many(ids=cards) == {}
    assert vector_index().ids_where(tenant_id=str(tenant_id), ids=cards) == []
    assert history_search_index().ids_where(tenant_id=str(tenant_id)) == []
    assert history_vector_index().ids_where(tenant_id=str(tenant_id)) == []
    assert stm_store().tenant_keys(tenant_id=tenant_id) == []
    assert not TenantPurge.objects.exists()  # done, so nothing is left to resume
    # The other tenant keeps all it had.
    assert held(other_tenant) == theirs_before
    assert len(card_search_index().get_many(ids=two_tenants["theirs"]["cards"])) == 2


def test_a_purge_stopped_by_a_store_outage_is_kept_and_finished_later(
    tenant, other_tenant, two_tenants, settings
) -> None:
    theirs_before = held(other_tenant)
    tenant_id = tenant.pk
    tenant_delete(tenant=tenant)  # commit callbacks not run: the purge waits in its row
    (purge,) = TenantPurge.objects.filter(tenant_id=tenant_id)
    assert sorted(user for _, user in purge.end_users) == ["u_42", "u_7"]

    real_url = settings.ELASTICSEARCH_URL
    settings.ELASTICSEARCH_URL = "http://127.0.0.1:9"  # nothing listens there
    search_module.card_search_index.cache_clear()
    try:
        with pytest.raises(StoreUnavailable):
            tenant_purge(purge_id=purge.pk)
    finally:
        settings.ELASTICSEARCH_URL = real_url
        search_module.card_search_index.cache_clear()

    purge.refresh_from_db()
    assert purge.attempts == 1 and "Elasticsearch" in purge.last_error
    assert purge.progress["redis"]["keys"] > 0  # what was done is said
    assert stm_store().tenant_keys(tenant_id=tenant_id) == []
    not_reached = tenant_leftovers(tenant_id=tenant_id, user_ids=["u_42", "u_7"])
    assert not_reached["elasticsearch_cards"] == 4 and not_reached["history_milvus"] > 0

    # The beat job runs it again; a further run finds it done.
    assert tenant_purges_resume_task() == "resumed 1"

    assert not TenantPurge.objects.filter(pk=purge.pk).exists()
    left = tenant_leftovers(tenant_id=tenant_id, user_ids=["u_42", "u_7"])
    assert left == dict.fromkeys(left, 0)
    assert tenant_purge(purge_id=purge.pk) == "gone"
    assert held(other_tenant) == theirs_before
