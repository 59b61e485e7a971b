"""Every change staff make in the admin is an audit event with the staff user as its actor,
and a form error is shown on a field the page renders."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from memories.audit.models import AuditEvent
from memories.audit.services import audit_verify
from memories.policies.models import VocabularyEntry
from profiles.models import (
    AgentSetting,
    ApiKey,
    EndUser,
    StableFact,
    Tenant,
    UserPreference,
    UserProfile,
    UserProjectRole,
)
from profiles.services.api_keys import api_key_create
from profiles.services.profile_patch import ProfilePatch, profile_update
from tests.factories import EndUserFactory, MembershipFactory, ProjectFactory, TenantFactory


@pytest.fixture
def admin_of_mine(db: None) -> tuple[Client, Any, Tenant, EndUser]:
    mine = TenantFactory(slug="mine")
    staff = get_user_model().objects.create_user(username="tina", password="pw", is_staff=True)
    MembershipFactory(user=staff, tenant=mine)
    ProjectFactory(tenant=mine, key="shop")
    user = EndUserFactory(tenant=mine, external_id="u-1")
    client = Client()
    client.force_login(staff)
    return client, staff, mine, user


def events(tenant: Tenant) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(tenant=tenant).order_by("seq"))


def inline_management(prefix: str, total: int, initial: int = 0) -> dict[str, Any]:
    return {
        f"{prefix}-TOTAL_FORMS": total,
        f"{prefix}-INITIAL_FORMS": initial,
        f"{prefix}-MIN_NUM_FORMS": 0,
        f"{prefix}-MAX_NUM_FORMS": 1000,
    }


def end_user_form(user: EndUser, **extra: Any) -> dict[str, Any]:
    return {
        "tenant": user.tenant_id,
        "external_id": user.external_id,
        **inline_management("profile", 1),
        "profile-0-language": "",
        "profile-0-answer_style": "",
        "profile-0-timezone": "",
        "profile-0-display_name": "",
        "profile-0-extras": "{}",
        "initial-profile-0-extras": "{}",  # a callable default's hidden initial value
        "profile-0-end_user": user.pk,
        **inline_management("project_roles", 0),
        **extra,
    }


def test_a_preference_added_in_the_admin_is_the_apis_audit_event_with_the_staff_actor(
    admin_of_mine,
) -> None:
    client, staff, mine, user = admin_of_mine
    # the API's event for the same change, as the reference
    other = EndUserFactory(tenant=mine, external_id="u-2")
    profile_update(
        tenant=mine,
        external_id=other.external_id,
        patch=ProfilePatch(preferences=[{"key": "preference.tone", "value": "formal"}]),
    )
    api_event = events(mine)[-1]

    response = client.post(
        reverse("admin:profiles_userpreference_add"),
        {"end_user": user.pk, "key": "preference.tone", "value": "formal", "confidence": 1},
    )

    assert response.status_code == 302
    event = events(mine)[-1]
    assert (event.action, event.object_type, event.object_id) == (
        api_event.action,
        api_event.object_type,
        f"end_user:{user.pk}",
    )
    assert event.details == api_event.details
    assert (event.actor_type, event.actor) == ("staff", f"staff:{staff.pk}:tina")
    row = UserPreference.objects.get(end_user=user, key="preference.tone")
    assert (row.value, row.source) == ("formal", "admin")  # typed as plain text, kept as text
    assert audit_verify(tenant=mine).ok


def test_the_preference_add_form_starts_empty_and_names_no_source(admin_of_mine) -> None:
    client, _, _, _ = admin_of_mine
    page = client.get(reverse("admin:profiles_userpreference_add")).content.decode()

    assert 'name="value"' in page and ">null<" not in page
    assert "Source" not in page


def test_editing_the_profile_on_the_end_user_page_is_audited(admin_of_mine) -> None:
    client, staff, mine, user = admin_of_mine
    UserProfile.objects.create(end_user=user)
    url = reverse("admin:profiles_enduser_change", args=[user.pk])
    form = end_user_form(user, **inline_management("profile", 1, 1))
    form.update({"profile-0-id": user.profile.pk, "profile-0-answer_style": "brief"})

    response = client.post(url, form)

    assert response.status_code == 302, response.content.decode()[:2000]
    user.profile.refresh_from_db()
    assert user.profile.answer_style == "brief"
    [event] = events(mine)
    assert (event.object_type, event.actor, event.details["parts"]) == (
        "profile",
        f"staff:{staff.pk}:tina",
        ["profile"],
    )


def test_a_role_added_on_the_end_user_page_saves_and_is_audited(admin_of_mine) -> None:
    client, staff, mine, user = admin_of_mine
    shop = mine.projects.get(key="shop")
    form = end_user_form(user, **inline_management("project_roles", 1))
    form.update(
        {
            "project_roles-0-project": shop.pk,
            "project_roles-0-role": "maintainer",
            "project_roles-0-permission_scope": "read_write",
            "project_roles-0-end_user": user.pk,
        }
    )

    response = client.post(reverse("admin:profiles_enduser_change", args=[user.pk]), form)

    assert response.status_code == 302, response.content.decode()[:3000]
    role = UserProjectRole.objects.get(end_user=user)
    assert (role.project, role.role, role.tenant_id) == (shop, "maintainer", mine.pk)
    [event] = events(mine)
    assert event.details["parts"] == ["roles"] and event.actor == f"staff:{staff.pk}:tina"


def test_an_error_on_a_hidden_inline_field_is_shown_on_a_visible_field(admin_of_mine) -> None:
    client, _, mine, user = admin_of_mine
    stranger = EndUserFactory(tenant=mine, external_id="u-9")
    shop = mine.projects.get(key="shop")
    form = end_user_form(user, **inline_management("project_roles", 1))
    form.update(
        {
            "project_roles-0-project": shop.pk,
            "project_roles-0-role": "maintainer",
            "project_roles-0-permission_scope": "read_only",
            "project_roles-0-end_user": stranger.pk,  # the hidden parent key, tampered with
        }
    )

    response = client.post(reverse("admin:profiles_enduser_change", args=[user.pk]), form)

    assert response.status_code == 200
    inline = response.context["inline_admin_formsets"][1].formset.forms[0]
    assert "end_user" not in inline.errors
    assert any("End user:" in message for message in inline.errors["project"])
    assert "End user: The inline value did not match" in response.content.decode()
    assert not UserProjectRole.objects.exists() and not events(mine)


def test_tenant_fact_agent_setting_and_vocabulary_changes_are_audited(admin_of_mine) -> None:
    client, staff, mine, _ = admin_of_mine
    actor = f"staff:{staff.pk}:tina"

    assert (
        client.post(
            reverse("admin:profiles_stablefact_add"),
            {"tenant": mine.pk, "key": "config.region", "value": "eu-west"},
        ).status_code
        == 302
    )
    assert (
        client.post(
            reverse("admin:profiles_agentsetting_add"),
            {"tenant": mine.pk, "key": "config.max_tools", "value": "5"},
        ).status_code
        == 302
    )
    assert (
        client.post(
            reverse("admin:memories_vocabularyentry_add"),
            {"tenant": mine.pk, "kind": "entity", "value": "createOrder"},
        ).status_code
        == 302
    )
    entry = VocabularyEntry.objects.get(tenant=mine)
    client.post(reverse("admin:memories_vocabularyentry_delete", args=[entry.pk]), {"post": "yes"})

    fact = StableFact.objects.get(tenant=mine, key="config.region")
    assert (fact.scope, fact.value, fact.source) == ("tenant", "eu-west", "admin")
    assert AgentSetting.objects.get(tenant=mine).value == 5
    assert not VocabularyEntry.objects.exists()
    assert [(e.action, e.object_type, e.actor) for e in events(mine)] == [
        ("update", "fact", actor),
        ("create", "agent_setting", actor),
        ("create", "vocabulary_entry", actor),
        ("delete", "vocabulary_entry", actor),
    ]


def test_key_and_tenant_changes_are_audited(admin_of_mine) -> None:
    client, staff, mine, _ = admin_of_mine
    actor = f"staff:{staff.pk}:tina"
    key, _ = api_key_create(tenant=mine, name="agent", scopes=["read"])  # not a staff change
    assert not events(mine)

    client.post(
        reverse("admin:profiles_apikey_change", args=[key.pk]),
        {"name": "agent", "scopes": ["read", "write"]},
    )
    client.post(
        reverse("admin:profiles_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [key.pk]},
    )
    staff.is_superuser = True
    staff.save()
    client.post(
        reverse("admin:profiles_tenant_change", args=[mine.pk]),
        {"slug": "mine", "name": "Mine, renamed", "is_active": "on"},
    )
    client.post(
        reverse("admin:profiles_tenant_changelist"),
        {"action": "deactivate_tenants", "_selected_action": [mine.pk]},
    )

    assert ApiKey.objects.get(pk=key.pk).revoked_at is not None
    assert not Tenant.objects.get(pk=mine.pk).is_active
    assert [(e.action, e.object_type, e.actor) for e in events(mine)] == [
        ("update", "api_key", actor),
        ("revoke", "api_key", actor),
        ("update", "tenant", actor),
        ("update", "tenant", actor),
    ]
    assert audit_verify(tenant=mine).ok


CARD = "4111-1111-1111-1111"


def changes_of(event: AuditEvent) -> list[tuple[str, Any, Any]]:
    return [(c.field, c.before, c.after) for c in event.changes.all()]


def test_a_profile_edit_records_each_fields_before_and_after_redacted(admin_of_mine) -> None:
    client, _, mine, user = admin_of_mine
    # given a profile written before redaction covered it: a raw card number in its name
    UserProfile.objects.create(end_user=user, display_name=f"Ann {CARD}", answer_style="long")
    url = reverse("admin:profiles_enduser_change", args=[user.pk])
    form = end_user_form(user, **inline_management("profile", 1, 1))
    form.update(
        {
            "profile-0-id": user.profile.pk,
            "profile-0-display_name": "Ann",
            "profile-0-answer_style": "brief",
        }
    )

    response = client.post(url, form)

    assert response.status_code == 302, response.content.decode()[:2000]
    [event] = events(mine)
    assert sorted(changes_of(event)) == [
        ("profile.answer_style", "long", "brief"),
        ("profile.display_name", "Ann [REDACTED:bank_card]", "Ann"),
    ]
    assert CARD not in str(event.details) and "1111" not in str(changes_of(event))
    assert [c["field"] for c in event.details["changes"]] == [c.field for c in event.changes.all()]
    assert event.before_sha256  # the state before is hashed now too
    assert audit_verify(tenant=mine).ok

    page = client.get(reverse("admin:memories_auditevent_change", args=[event.pk]))
    html = page.content.decode()
    assert 'id="audit-changes"' in html and "profile.display_name" in html
    assert "Ann [REDACTED:bank_card]" in html and "brief" in html and CARD not in html
    listing = client.get(reverse("admin:memories_auditevent_changelist")).content.decode()
    assert "profile.answer_style" in listing


def test_preference_fact_role_and_setting_changes_keep_their_values(admin_of_mine) -> None:
    client, _, mine, user = admin_of_mine
    shop = mine.projects.get(key="shop")
    profile_update(
        tenant=mine,
        external_id=user.external_id,
        patch=ProfilePatch(
            preferences=[{"key": "preference.tone", "value": "formal"}],
            facts=[{"key": "fact.city", "value": "Lyon", "project": "shop"}],
            roles=[{"project": "shop", "role": "dev"}],
        ),
    )
    profile_update(
        tenant=mine,
        external_id=user.external_id,
        patch=ProfilePatch(
            preferences=[{"key": "preference.tone", "value": "casual"}],
            facts=[{"key": "fact.city", "value": "Lyon", "project": "shop"}],  # unchanged
            roles=[{"project": "shop", "role": None}],
        ),
    )
    client.post(
        reverse("admin:profiles_agentsetting_add"),
        {"tenant": mine.pk, "key": "config.db_password", "value": "hunter2-hunter2"},
    )
    setting = AgentSetting.objects.get(tenant=mine)
    client.post(
        reverse("admin:profiles_agentsetting_change", args=[setting.pk]),
        {"tenant": mine.pk, "project": shop.pk, "key": "config.db_password", "value": "other-pw"},
    )

    first, second, created, edited = events(mine)
    assert changes_of(first) == [
        ("preferences.preference.tone", None, "formal"),
        ("facts.fact.city@shop", None, "Lyon"),
        ("roles.shop", None, {"role": "dev", "permission_scope": "read_only"}),
    ]
    assert changes_of(second) == [
        ("preferences.preference.tone", "formal", "casual"),
        ("roles.shop", {"role": "dev", "permission_scope": "read_only"}, None),
    ]
    # a setting's key says its value is a secret: neither value is kept
    assert changes_of(created) == [
        ("key", None, "config.db_password"),
        ("value", None, "[REDACTED:secret]"),
    ]
    assert changes_of(edited) == [
        ("project_id", None, shop.pk),
        ("value", "[REDACTED:secret]", "[REDACTED:secret]"),  # it changed; neither is shown
    ]
    assert "hunter2" not in str(changes_of(created))
    assert audit_verify(tenant=mine).ok


def test_an_edited_value_breaks_verification_and_an_erased_one_does_not(admin_of_mine) -> None:
    from django.db import connection

    _, _, mine, user = admin_of_mine
    profile_update(
        tenant=mine,
        external_id=user.external_id,
        patch=ProfilePatch(preferences=[{"key": "preference.tone", "value": "formal"}]),
    )
    [event] = events(mine)
    change = event.changes.get()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_auditchange SET after = '\"casual\"'::jsonb WHERE id = %s",
            [change.pk],
        )
    report = audit_verify(tenant=mine)
    assert not report.ok and report.broken_at == event.seq and "value" in report.problem

    # values that go with their end user leave the chain whole
    EndUser.objects.filter(pk=user.pk).delete()
    assert audit_verify(tenant=mine).ok
    assert events(mine)[0].details["changes"][0]["field"] == "preferences.preference.tone"


def test_a_long_value_is_cut_to_its_bound(admin_of_mine) -> None:
    from memories.audit.services import MAX_CHANGE_VALUE_CHARS

    _, _, mine, user = admin_of_mine
    profile_update(
        tenant=mine,
        external_id=user.external_id,
        patch=ProfilePatch(preferences=[{"key": "preference.notes", "value": "x" * 5000}]),
    )
    [change] = events(mine)[0].changes.all()
    assert len(change.after) == MAX_CHANGE_VALUE_CHARS and change.after.endswith("…")
    assert audit_verify(tenant=mine).ok


def test_a_users_stable_fact_takes_its_tenant_from_the_end_user(admin_of_mine) -> None:
    client, _, mine, user = admin_of_mine
    shop = mine.projects.get(key="shop")
    page = client.get(reverse("admin:profiles_stablefact_add")).content.decode()
    # the owner comes first; the tenant is asked for last, and only for a tenant-wide fact
    assert (
        page.index('name="end_user"') < page.index('name="project"') < page.index('name="tenant"')
    )

    response = client.post(
        reverse("admin:profiles_stablefact_add"),
        {"end_user": user.pk, "key": "fact.city", "value": "Lyon"},  # no tenant sent
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    fact = StableFact.objects.get(end_user=user, key="fact.city")
    assert (fact.tenant_id, fact.scope, fact.value) == (mine.pk, "user", "Lyon")

    by_project = client.post(
        reverse("admin:profiles_stablefact_add"),
        {"project": shop.pk, "key": "config.region", "value": "eu-west"},
    )
    assert by_project.status_code == 302
    assert StableFact.objects.get(project=shop, key="config.region").tenant_id == mine.pk

    nothing = client.post(
        reverse("admin:profiles_stablefact_add"), {"key": "config.zone", "value": "a"}
    )
    assert nothing.status_code == 200
    assert "Pick the tenant, an end user or a project." in nothing.content.decode()
    assert not StableFact.objects.filter(key="config.zone").exists()
