"""Layer 1 for recall: the profile, constraints and runtime-metadata blocks, and the filters.

PostgreSQL rows become two plain documents, cached in Redis: one per tenant (projects,
workspaces, tenant and project facts, agent settings, recall policy, vocabulary) and one per end
user (profile, preferences, roles, the user's own facts). Blocks are composed from both at
recall time, so a tenant-wide change never has to touch every user's cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import orjson
from django.db import connection

from memories.policies.models import RecallPolicy, VocabularyEntry
from profiles.domains import is_authoritative
from profiles.models import (
    AgentSetting,
    EndUser,
    Project,
    StableFact,
    Tenant,
    UserPreference,
    UserProfile,
    UserProjectRole,
    Workspace,
)

DOCUMENT_VERSION = 1
MAX_PROJECTS = 200  # a tenant document carries at most this many projects

POLICY_FIELDS = (
    "recency_weight",
    "relevance_weight",
    "importance_weight",
    "confidence_weight",
    "recency_decay_per_hour",
    "min_relevance",
    "default_k",
    "default_budget_tokens",
    "redis_sufficient_count",
    "session_recent_minutes",
    "fusion_lexical_weight",
    "fusion_vector_weight",
    "fusion_rrf_k",
    "relevance_floor",
    "time_boost",
    "history_depth",
    "history_enabled",
)


def policy_defaults() -> dict[str, Any]:
    defaults = RecallPolicy()  # an unsaved row holds every field's default
    return {name: getattr(defaults, name) for name in POLICY_FIELDS}


def tenant_context_document(*, tenant: Tenant) -> dict[str, Any]:
    """Everything tenant-wide that recall needs from PostgreSQL, as plain data."""
    projects = list(Project.objects.filter(tenant=tenant).order_by("key")[:MAX_PROJECTS])
    workspaces: dict[int | None, list[dict[str, Any]]] = {}
    for workspace in Workspace.objects.filter(tenant=tenant).order_by("key"):
        workspaces.setdefault(workspace.project_id, []).append(
            {"key": workspace.key, "name": workspace.name, "default_env": workspace.default_env}
        )
    facts = StableFact.objects.filter(
        tenant=tenant,
        is_current=True,
        scope__in=(StableFact.Scope.TENANT, StableFact.Scope.PROJECT),
    ).select_related("project")
    policy = RecallPolicy.objects.filter(tenant=tenant).first()
    return {
        "v": DOCUMENT_VERSION,
        "tenant": {"slug": tenant.slug, "name": tenant.name},
        "projects": [
            {
                "key": p.key,
                "name": p.name,
                "default_env": p.default_env,
                "metadata": p.metadata,
                "workspaces": workspaces.get(p.pk, []),
            }
            for p in projects
        ],
        "workspaces": workspaces.get(None, []),
        "facts": [
            {
                "key": f.key,
                "value": f.value,
                "scope": f.scope,
                "project": f.project.key if f.project else "",
            }
            for f in facts
        ],
        "settings": [
            {"key": s.key, "value": s.value, "project": s.project.key if s.project else ""}
            for s in AgentSetting.objects.filter(tenant=tenant).select_related("project")
        ],
        "policy": (
            {name: getattr(policy, name) for name in POLICY_FIELDS} if policy else policy_defaults()
        ),
        "vocabulary": list(
            VocabularyEntry.objects.filter(tenant=tenant).values_list("kind", "value")
        ),
    }


def empty_tenant_document(*, tenant: Tenant) -> dict[str, Any]:
    """What recall can still use when PostgreSQL cannot be read and nothing is cached."""
    return {
        "v": DOCUMENT_VERSION,
        "tenant": {"slug": tenant.slug, "name": tenant.name},
        "projects": [],
        "workspaces": [],
        "facts": [],
        "settings": [],
        "policy": policy_defaults(),
        "vocabulary": [],
    }


def user_context_document(*, tenant: Tenant, user_id: str) -> dict[str, Any]:
    """What PostgreSQL holds about one end user for recall; `exists` is False for unknown
    users. One hand-written query: recall runs it on its hot path for exact-value questions,
    and building the equivalent ORM query costs more than running it."""
    with connection.cursor() as cursor:
        cursor.execute(_user_document_sql(), [tenant.pk, user_id])
        row = cursor.fetchone()
    if row is None:
        return {"v": DOCUMENT_VERSION, "exists": False, "user_id": user_id}
    end_user_id, language, answer_style, timezone, display_name, prefs, roles, facts = row
    return {
        "v": DOCUMENT_VERSION,
        "exists": True,
        "user_id": user_id,
        "end_user_id": end_user_id,
        "profile": {
            "language": language or "",
            "answer_style": answer_style or "",
            "timezone": timezone or "",
            "display_name": display_name or "",
        },
        "preferences": _json_rows(prefs),
        "roles": _json_rows(roles),
        "facts": _json_rows(facts),
    }


@cache
def _user_document_sql() -> str:
    tables = {
        "user": EndUser._meta.db_table,
        "profile": UserProfile._meta.db_table,
        "pref": UserPreference._meta.db_table,
        "role": UserProjectRole._meta.db_table,
        "project": Project._meta.db_table,
        "fact": StableFact._meta.db_table,
    }
    return f"""
        SELECT u.id, p.language, p.answer_style, p.timezone, p.display_name,
          (SELECT json_agg(json_build_object('key', f.key, 'value', f.value) ORDER BY f.key)
             FROM {tables["pref"]} f WHERE f.end_user_id = u.id AND f.is_current),
          (SELECT json_agg(json_build_object('project', pr.key, 'role', r.role,
                                             'permission_scope', r.permission_scope)
                           ORDER BY pr.key)
             FROM {tables["role"]} r JOIN {tables["project"]} pr ON pr.id = r.project_id
            WHERE r.end_user_id = u.id),
          (SELECT json_agg(json_build_object('key', f.key, 'value', f.value) ORDER BY f.key)
             FROM {tables["fact"]} f
            WHERE f.end_user_id = u.id AND f.is_current AND f.scope = 'user')
        FROM {tables["user"]} u LEFT JOIN {tables["profile"]} p ON p.end_user_id = u.id
        WHERE u.tenant_id = %s AND u.external_id = %s
    """


def _json_rows(rows: Any) -> list[dict[str, Any]]:
    """A json_agg column: NULL when there are no rows; text or decoded, by driver setup."""
    if rows is None:
        return []
    return orjson.loads(rows) if isinstance(rows, str | bytes) else list(rows)


@dataclass
class ContextBlocks:
    """The three Layer 1 blocks, the domain values PostgreSQL is authoritative for, and filters."""

    profile: dict[str, Any]
    constraints: dict[str, Any]
    runtime: dict[str, Any]
    authoritative: dict[str, Any] = field(default_factory=dict)
    project: str = ""  # the project recall is scoped to ("" when none applies)

    def as_dict(self) -> dict[str, Any]:
        return {
            "profile_block": self.profile,
            "constraints_block": self.constraints,
            "runtime_metadata_block": self.runtime,
        }


def compose_blocks(
    *, tenant_doc: dict[str, Any], user_doc: dict[str, Any], project: str = "", workspace: str = ""
) -> ContextBlocks:
    """The blocks for one user in one project and workspace (both optional).

    Without a project, the user's only project is used when there is exactly one.
    """
    roles = user_doc.get("roles", [])
    if not project and len(roles) == 1:
        project = roles[0]["project"]
    project_doc = next((p for p in tenant_doc["projects"] if p["key"] == project), None)
    workspace_doc = None
    if workspace:
        candidates = (project_doc or {}).get("workspaces", []) + tenant_doc["workspaces"]
        workspace_doc = next((w for w in candidates if w["key"] == workspace), None)

    authoritative: dict[str, Any] = {}
    facts: list[dict[str, Any]] = []
    for fact in tenant_doc["facts"]:
        if fact["scope"] == "project" and fact["project"] != project:
            continue
        facts.append({"key": fact["key"], "value": fact["value"]})
    facts.extend(user_doc.get("facts", []))  # the user's own facts win over broader ones
    for fact in facts:
        if is_authoritative(fact["key"]):
            authoritative[fact["key"]] = fact["value"]

    profile = {k: v for k, v in user_doc.get("profile", {}).items() if v}
    preferences = {p["key"]: p["value"] for p in user_doc.get("preferences", [])}
    for key, value in preferences.items():
        authoritative.setdefault(key, value)
    for name in ("language", "answer_style", "timezone"):
        if name in profile:
            authoritative[f"profile.{name}"] = profile[name]

    role = next((r for r in roles if r["project"] == project), None)
    permissions = [
        {"project": r["project"], "role": r["role"], "scope": r["permission_scope"]} for r in roles
    ]
    if role:
        authoritative["permission.scope"] = role["permission_scope"]
        authoritative["permission.role"] = role["role"]

    settings = {
        s["key"]: s["value"] for s in tenant_doc["settings"] if s["project"] in ("", project)
    }
    for key, value in settings.items():
        authoritative.setdefault(key if key.startswith("config.") else f"config.{key}", value)

    default_env = (workspace_doc or {}).get("default_env") or (project_doc or {}).get(
        "default_env", ""
    )
    default_env = authoritative.get("project_metadata.default_env", default_env) or default_env
    if default_env:
        authoritative["project_metadata.default_env"] = default_env

    runtime = {
        "tenant": tenant_doc["tenant"]["slug"],
        "project": project_doc["key"] if project_doc else "",
        "project_name": project_doc["name"] if project_doc else "",
        "workspace": workspace_doc["key"] if workspace_doc else "",
        "default_env": default_env,
    }
    return ContextBlocks(
        profile={**profile, "preferences": preferences} if preferences else profile,
        constraints={
            "permissions": permissions,
            "permission_scope": role["permission_scope"] if role else "",
            "facts": facts,
        },
        runtime={k: v for k, v in runtime.items() if v},
        authoritative=authoritative,
        project=runtime["project"],
    )
