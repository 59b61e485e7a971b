from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from memories.policies.models import VocabularyEntry, WritePolicy
from memories.write.policy import policy_for
from tests.factories import MembershipFactory, StaffUserFactory, TenantFactory


@pytest.fixture
def admin_client(db):
    mine, theirs = TenantFactory(slug="mine"), TenantFactory(slug="theirs")
    user = StaffUserFactory()
    MembershipFactory(user=user, tenant=mine)
    client = Client()
    client.force_login(user)
    return client, mine, theirs


def policy_form(tenant_pk: int, **changes) -> dict:
    form = {
        "tenant": tenant_pk,
        "weights": '{"verified": 3, "user_constraint": 3, "decision": 2, "stable_for_task": 2, '
        '"novelty_high": 2, "confidence_high": 1, "duplicate": -3, "transient": -2, '
        '"raw_blob": -2}',
        "write_threshold": 3,
        "novelty_high_threshold": 0.5,
        "confidence_high_threshold": 0.8,
        "transient_ttl_minutes": 10,
        "raw_blob_chars": 400,
        "max_summary_chars": 2000,
        "ttl_minutes_by_type": '{"fact": 360}',
        "min_ttl_minutes": 5,
        "max_ttl_minutes": 43200,
    }
    form.update(changes)
    return form


def test_saving_a_policy_publishes_a_new_version_and_keeps_the_old(admin_client) -> None:
    client, mine, _ = admin_client
    add = reverse("admin:memories_writepolicy_add")

    client.post(add, policy_form(mine.pk))
    first = WritePolicy.objects.get(tenant=mine)
    client.post(
        reverse("admin:memories_writepolicy_change", args=[first.pk]),
        policy_form(mine.pk, write_threshold=5),
    )

    rows = WritePolicy.objects.filter(tenant=mine).order_by("version")
    assert [(p.version, p.is_current, p.write_threshold) for p in rows] == [
        (1, False, 3),
        (2, True, 5),
    ]
    assert policy_for(tenant=mine).write_threshold == 5


def test_bad_policy_values_are_refused(admin_client) -> None:
    client, mine, _ = admin_client
    response = client.post(
        reverse("admin:memories_writepolicy_add"),
        policy_form(mine.pk, weights='{"luck": 7}'),
    )
    assert response.status_code == 200 and "Use only the terms" in response.content.decode()
    assert not WritePolicy.objects.exists()


def test_a_policy_cannot_be_made_for_another_tenant(admin_client) -> None:
    client, _, theirs = admin_client
    response = client.post(reverse("admin:memories_writepolicy_add"), policy_form(theirs.pk))
    assert "Select a valid choice" in response.content.decode()
    assert not WritePolicy.objects.exists()


def test_vocabulary_entries_must_be_valid_patterns(admin_client) -> None:
    client, mine, _ = admin_client
    add = reverse("admin:memories_vocabularyentry_add")

    bad = client.post(add, {"tenant": mine.pk, "kind": "constraint", "value": "(unclosed"})
    unknown = client.post(add, {"tenant": mine.pk, "kind": "nonsense", "value": "x"})
    good = client.post(add, {"tenant": mine.pk, "kind": "constraint", "value": "严禁"})

    assert "Not a valid pattern" in bad.content.decode()
    assert "Use one of" in unknown.content.decode()
    assert good.status_code == 302
    assert list(VocabularyEntry.objects.values_list("value", flat=True)) == ["严禁"]
