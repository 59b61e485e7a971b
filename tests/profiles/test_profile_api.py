from __future__ import annotations

import time

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from profiles.models import (
    EndUser,
    StableFact,
    UserPreference,
    UserProfile,
    UserProjectRole,
)
from profiles.services.profile_versions import fact_set, preference_set
from tests.factories import EndUserFactory, ProjectFactory


def profile_url(user_id: str) -> str:
    return reverse("profiles:profile", kwargs={"user_id": user_id})


def layer1_counts() -> tuple[int, ...]:
    return tuple(
        model.objects.count()
        for model in (EndUser, UserProfile, UserPreference, UserProjectRole, StableFact)
    )


@pytest.mark.django_db
def test_get_returns_profile_preferences_roles_and_facts(tenant, owner: APIClient) -> None:
    project = ProjectFactory(tenant=tenant, key="shop")
    other_project = ProjectFactory(tenant=tenant, key="billing")
    user = EndUserFactory(tenant=tenant, external_id="u_42")
    UserProfile.objects.create(end_user=user, language="zh-CN", timezone="Asia/Shanghai")
    preference_set(end_user=user, key="preference.answer_style", value="brief_first")
    UserProjectRole.objects.create(
        tenant=tenant, end_user=user, project=project, role="dev", permission_scope="read_only"
    )
    fact_set(tenant=tenant, key="config.region", value="cn")
    fact_set(tenant=tenant, project=project, key="project_metadata.default_env", value="prod-cn")
    fact_set(tenant=tenant, project=other_project, key="project_metadata.default_env", value="x")
    fact_set(tenant=tenant, end_user=user, key="permission.scope", value="read_only")

    body = owner.get(profile_url("u_42")).json()

    assert body["profile"]["language"] == "zh-CN"
    assert body["preferences"][0]["key"] == "preference.answer_style"
    assert body["preferences"][0]["value"] == "brief_first"
    assert body["roles"] == [{"project": "shop", "role": "dev", "permission_scope": "read_only"}]
    facts = {(f["scope"], f["key"], f["project"]): f["value"] for f in body["facts"]}
    assert facts == {
        ("tenant", "config.region", None): "cn",
        ("project", "project_metadata.default_env", "shop"): "prod-cn",
        ("user", "permission.scope", None): "read_only",
    }


@pytest.mark.django_db
def test_patch_changes_everything_at_once_and_keeps_previous_versions(
    tenant, owner: APIClient
) -> None:
    ProjectFactory(tenant=tenant, key="shop")
    user = EndUserFactory(tenant=tenant, external_id="u_42")
    preference_set(end_user=user, key="preference.answer_style", value="brief_first")

    response = owner.patch(
        profile_url("u_42"),
        {
            "profile": {"language": "en", "display_name": "Ada"},
            "preferences": [
                {"key": "preference.answer_style", "value": "detailed", "confidence": 0.9}
            ],
            "roles": [{"project": "shop", "role": "owner", "permission_scope": "admin"}],
            "facts": [{"key": "project_metadata.default_env", "value": "prod-cn"}],
        },
        format="json",
    )

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["profile"]["display_name"] == "Ada"
    assert body["preferences"] == [
        {
            "id": f"pref_{history_current_pk(user)}",
            "key": "preference.answer_style",
            "value": "detailed",
            "confidence": 0.9,
            "source": "api",
            "version": 2,
            "updated_at": body["preferences"][0]["updated_at"],
        }
    ]
    history = UserPreference.objects.filter(end_user=user).order_by("version")
    assert [(p.value, p.is_current) for p in history] == [
        ("brief_first", False),
        ("detailed", True),
    ]
    assert body["roles"][0]["permission_scope"] == "admin"

    # the same value again adds no version
    owner.patch(
        profile_url("u_42"),
        {
            "preferences": [
                {"key": "preference.answer_style", "value": "detailed", "confidence": 0.9}
            ]
        },
        format="json",
    )
    assert UserPreference.objects.filter(end_user=user).count() == 2


@pytest.mark.django_db
def test_patch_creates_an_unknown_user(owner: APIClient) -> None:
    response = owner.patch(profile_url("u_new"), {"profile": {"language": "de"}}, format="json")
    assert response.status_code == 200
    assert response.json()["profile"]["language"] == "de"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "__all__"),
        ({"profile": {"timezone": "Mars/Olympus"}}, "profile.timezone"),
        ({"preferences": [{"key": "answer_style", "value": 1}]}, "preferences.0.key"),
        ({"preferences": [{"key": "permission.scope", "value": 1}]}, "preferences.0.key"),
        (
            {"preferences": [{"key": "preference.x", "value": 1, "confidence": 2}]},
            "preferences.0.confidence",
        ),
        ({"roles": [{"project": "nope", "role": "dev"}]}, "project"),
        (
            {"roles": [{"project": "shop", "role": "dev", "permission_scope": "root"}]},
            "roles.0.permission_scope",
        ),
        (
            {
                "profile": {"language": "fr"},
                "preferences": [
                    {"key": "preference.a", "value": 1},
                    {"key": "preference.a", "value": 2},
                ],
            },
            "preferences",
        ),
    ],
)
def test_bad_patch_is_400_and_changes_nothing(tenant, owner: APIClient, body, field) -> None:
    ProjectFactory(tenant=tenant, key="shop")
    user = EndUserFactory(tenant=tenant, external_id="u_42")
    UserProfile.objects.create(end_user=user, language="en")
    before = layer1_counts()

    response = owner.patch(profile_url("u_42"), body, format="json")

    assert response.status_code == 400, response.json()
    assert response.json()["error"]["code"] == "invalid"
    assert field in response.json()["error"]["fields"]
    assert layer1_counts() == before
    assert UserProfile.objects.get(end_user=user).language == "en"


@pytest.mark.django_db
def test_a_failure_late_in_a_patch_rolls_back_the_earlier_parts(tenant, owner: APIClient) -> None:
    # the profile part is valid, the role names a project of another tenant
    ProjectFactory(key="elsewhere")
    user = EndUserFactory(tenant=tenant, external_id="u_42")
    UserProfile.objects.create(end_user=user, language="en")
    before = layer1_counts()

    response = owner.patch(
        profile_url("u_42"),
        {"profile": {"language": "fr"}, "roles": [{"project": "elsewhere", "role": "dev"}]},
        format="json",
    )

    assert response.status_code == 400
    assert layer1_counts() == before
    assert UserProfile.objects.get(end_user=user).language == "en"


@pytest.mark.django_db
def test_another_tenant_gets_404_and_cannot_touch_the_profile(
    tenant, owner: APIClient, stranger: APIClient
) -> None:
    user = EndUserFactory(tenant=tenant, external_id="u_42")
    UserProfile.objects.create(end_user=user, language="en")

    assert stranger.get(profile_url("u_42")).status_code == 404
    stranger.patch(profile_url("u_42"), {"profile": {"language": "xx"}}, format="json")

    assert UserProfile.objects.get(end_user=user).language == "en"
    assert owner.get(profile_url("u_42")).json()["profile"]["language"] == "en"


@pytest.mark.django_db
def test_fact_versions_are_kept_per_owner(tenant) -> None:
    project = ProjectFactory(tenant=tenant)
    fact_set(tenant=tenant, project=project, key="project_metadata.default_env", value="a")
    fact_set(tenant=tenant, project=project, key="project_metadata.default_env", value="b")
    fact_set(tenant=tenant, key="project_metadata.default_env", value="tenant-wide")

    rows = StableFact.objects.filter(project=project).order_by("version")
    assert [(f.value, f.version, f.is_current) for f in rows] == [("a", 1, False), ("b", 2, True)]
    assert StableFact.objects.get(scope="tenant", is_current=True).value == "tenant-wide"


def history_current_pk(user: EndUser) -> int:
    return UserPreference.objects.get(end_user=user, is_current=True).pk


@pytest.mark.django_db
def test_a_patch_changes_at_most_100_preferences_roles_and_facts(owner: APIClient) -> None:
    preferences = [{"key": f"preference.k{i}", "value": i} for i in range(100)]
    started = time.perf_counter()
    full = owner.patch(profile_url("u_42"), {"preferences": preferences}, format="json")
    elapsed = time.perf_counter() - started
    assert full.status_code == 200, full.json()
    assert len(full.json()["preferences"]) == 100
    assert elapsed < 10, elapsed  # well inside the worker timeout
    before = UserPreference.objects.count()

    too_many = owner.patch(
        profile_url("u_42"),
        {"preferences": [*preferences, {"key": "preference.k100", "value": 100}]},
        format="json",
    )

    mixed = owner.patch(
        profile_url("u_42"),
        {
            "preferences": preferences[:60],
            "facts": [{"key": f"fact.f{i}", "value": i} for i in range(41)],
        },
        format="json",
    )

    assert too_many.status_code == 400
    assert too_many.json()["error"]["code"] == "invalid"
    assert "preferences" in too_many.json()["error"]["fields"]
    assert mixed.status_code == 400
    assert "__all__" in mixed.json()["error"]["fields"]
    assert UserPreference.objects.count() == before
