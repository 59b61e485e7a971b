"""Tenant admins' screens for Layer 1; every change of a versioned value goes through a service."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest

from memoryproject.admin_forms import PlainOrJsonField
from memoryproject.admin_redaction import RedactedDisplayMixin, RedactedFieldsForm
from profiles.admin_scoping import (
    TENANT_FILTER,
    ScopedModelAdmin,
    ScopedStackedInline,
    ScopedTabularInline,
    VersionedScopedAdmin,
)
from profiles.domains import FACT_DOMAINS, key_problem
from profiles.login_throttle import ThrottledAdminAuthenticationForm
from profiles.models import (
    AgentSetting,
    ApiKey,
    EndUser,
    Project,
    Source,
    StableFact,
    Tenant,
    TenantMembership,
    UserPreference,
    UserProfile,
    UserProjectRole,
    Workspace,
)
from profiles.services.agent_settings import agent_setting_delete, agent_setting_save
from profiles.services.api_keys import (
    api_key_create,
    api_key_revoke,
    api_key_update,
    api_keys_revoke,
)
from profiles.services.profile_patch import PROFILE_FIELDS, ProfilePatch, profile_update
from profiles.services.profile_versions import fact_set
from profiles.services.tenants import tenant_delete, tenant_save, tenants_set_active

# Failed logins are throttled per username and per client address (profiles.login_throttle).
admin.site.login_form = ThrottledAdminAuthenticationForm


@admin.register(Tenant)
class TenantAdmin(ScopedModelAdmin):
    list_display = ("slug", "name", "is_active", "created_at")
    search_fields = ("slug", "name")
    list_filter = ("is_active",)
    actions = ("deactivate_tenants", "activate_tenants")

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # A deactivated tenant's keys are refused from the next request; the change is audited.
        tenant_save(tenant=obj, staff=request.user)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # tenant_delete removes every row of the tenant at once; the per-model permissions,
        # which forbid deleting keys or versions one by one, do not apply to it.
        deleted, counts, _, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, set(), protected

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        tenant_delete(tenant=obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for tenant in queryset:
            tenant_delete(tenant=tenant)

    @admin.action(description="Deactivate selected tenants (their API keys stop working)")
    def deactivate_tenants(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        changed = tenants_set_active(tenants=queryset, is_active=False, staff=request.user)
        self.message_user(request, f"Deactivated {changed} tenant(s).")

    @admin.action(description="Activate selected tenants")
    def activate_tenants(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        changed = tenants_set_active(tenants=queryset, is_active=True, staff=request.user)
        self.message_user(request, f"Activated {changed} tenant(s).")


@admin.register(TenantMembership)
class TenantMembershipAdmin(admin.ModelAdmin):
    """Only superusers grant roles, so nobody can give themselves more."""

    list_display = ("user", "tenant", "role", "created_at")
    list_filter = ("role", "tenant")
    search_fields = ("user__username", "tenant__slug")
    list_select_related = ("user", "tenant")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser


@admin.register(Project)
class ProjectAdmin(ScopedModelAdmin):
    list_display = ("key", "name", "tenant", "default_env", "updated_at")
    list_filter = (TENANT_FILTER,)
    search_fields = ("key", "name")
    list_select_related = ("tenant",)


@admin.register(Workspace)
class WorkspaceAdmin(ScopedModelAdmin):
    list_display = ("key", "name", "tenant", "project", "default_env")
    list_filter = (TENANT_FILTER,)
    search_fields = ("key", "name")
    list_select_related = ("tenant", "project")


class UserProfileForm(RedactedFieldsForm):
    redacted_fields = ("display_name", "answer_style", "extras")

    class Meta:
        model = UserProfile
        fields = "__all__"
        widgets = {"extras": forms.Textarea(attrs={"rows": 2, "cols": 60})}


class UserProfileInline(ScopedStackedInline):
    model = UserProfile
    form = UserProfileForm
    can_delete = False


class RolesOfParentTenant(BaseInlineFormSet):
    """A role belongs to its end user's tenant: set before validation, so the row's checks
    (user and project of the same tenant) judge the real tenant, not an empty one."""

    def _construct_form(self, i: int, **kwargs: Any) -> Any:
        form = super()._construct_form(i, **kwargs)  # type: ignore[misc]
        form.instance.tenant_id = self.instance.tenant_id
        return form


class UserProjectRoleInline(ScopedTabularInline):
    model = UserProjectRole
    formset = RolesOfParentTenant
    extra = 0
    exclude = ("tenant",)


def _role_changes(formset: Any) -> list[dict[str, Any]]:
    """The roles inline as the items of a profile patch (a removed role has role None)."""
    items: list[dict[str, Any]] = []
    for form in formset.deleted_forms:
        if form.instance.pk:
            items.append({"project": form.instance.project.key, "role": None})
    for form in formset.forms:
        if form in formset.deleted_forms or not form.has_changed() or not form.is_valid():
            continue
        data = form.cleaned_data
        if not data.get("project"):
            continue
        if form.instance.pk and "project" in form.changed_data:
            moved_from = UserProjectRole.objects.get(pk=form.instance.pk).project.key
            items.append({"project": moved_from, "role": None})
        items.append(
            {
                "project": data["project"].key,
                "role": data["role"],
                "permission_scope": data["permission_scope"],
            }
        )
    return items


def _profile_changes(formset: Any) -> dict[str, Any]:
    for form in formset.forms:
        if form.has_changed() and form.is_valid():
            return {
                name: form.cleaned_data[name]
                for name in PROFILE_FIELDS
                if name in form.changed_data
            }
    return {}


@admin.register(EndUser)
class EndUserAdmin(ScopedModelAdmin):
    """An end user with their profile and roles; those change through `profile_update`, the
    service behind `PATCH /v1/users/{id}/profile`, so an admin's change is audited alike."""

    list_display = ("external_id", "tenant", "created_at", "updated_at")
    list_filter = (TENANT_FILTER,)
    search_fields = ("external_id",)
    list_select_related = ("tenant",)
    inlines = (UserProfileInline, UserProjectRoleInline)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        form.save_m2m()
        profile: dict[str, Any] = {}
        roles: list[dict[str, Any]] = []
        for formset in formsets:
            formset.save(commit=False)  # what changed, for the admin's history; nothing saved
            if formset.model is UserProfile:
                profile = _profile_changes(formset)
            elif formset.model is UserProjectRole:
                roles = _role_changes(formset)
        if profile or roles:
            end_user = form.instance
            profile_update(
                tenant=end_user.tenant,
                external_id=end_user.external_id,
                patch=ProfilePatch(profile=profile, roles=roles),
                staff=request.user,
                source=Source.ADMIN,
            )


VALUE_HELP = "Text as it is; numbers, true/false, lists and objects as JSON."


class UserPreferenceForm(RedactedFieldsForm):
    redacted_fields = ("value",)
    value = PlainOrJsonField(help_text=VALUE_HELP)

    class Meta:
        model = UserPreference
        fields = "__all__"


@admin.register(UserPreference)
class UserPreferenceAdmin(RedactedDisplayMixin, VersionedScopedAdmin):
    """Saving a preference adds a new version; earlier versions stay, read-only.

    The change goes through `profile_update`, like the API's, and is audited alike.
    """

    form = UserPreferenceForm
    redacted_fields = ("value",)
    list_display = ("key", "end_user", "value", "version", "is_current", "source", "created_at")
    list_filter = ("is_current", "source", TENANT_FILTER)
    search_fields = ("key", "end_user__external_id")
    list_select_related = ("end_user", "tenant")
    fields = ("end_user", "key", "value", "confidence", "version", "is_current", "source")
    readonly_fields = ("version", "is_current", "source", "source_ids", "created_at")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:  # version and source are the service's to set
            return ("end_user", "key", "value", "confidence")
        return self.fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None:
            return (*self.readonly_fields, "end_user", "key")
        return self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.check_tenant(request, obj.end_user)
        end_user = obj.end_user
        item = {"key": obj.key, "value": obj.value, "confidence": obj.confidence}
        profile_update(
            tenant=end_user.tenant,
            external_id=end_user.external_id,
            patch=ProfilePatch(preferences=[item]),
            staff=request.user,
            source=Source.ADMIN,
        )
        row = UserPreference.objects.get(end_user=end_user, key=obj.key, is_current=True)
        obj.pk, obj.version, obj.tenant_id = row.pk, row.version, row.tenant_id


class StableFactForm(RedactedFieldsForm):
    """A fact's owner: an end user or a project, whose tenant it is, or a tenant alone (the
    tenant is asked for only then)."""

    redacted_fields = ("value",)
    value = PlainOrJsonField(help_text=VALUE_HELP)

    class Meta:
        model = StableFact
        fields = ("end_user", "project", "tenant", "key", "value")
        help_texts = {
            "end_user": "A fact of this user; the tenant is the user's.",
            "project": "A fact of this project (with an end user: that user's in this project).",
            "tenant": "Only for a fact of the whole tenant; otherwise the user's or project's.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "tenant" in self.fields:
            self.fields["tenant"].required = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if "tenant" in self.fields and not cleaned.get("tenant"):
            owner = cleaned.get("end_user") or cleaned.get("project")
            if owner is not None:
                cleaned["tenant"] = owner.tenant
            elif not self.has_error("end_user") and not self.has_error("project"):
                self.add_error("tenant", "Pick the tenant, an end user or a project.")
        tenant = cleaned.get("tenant") or getattr(self.instance, "tenant", None)
        for name in ("project", "end_user"):
            owner = cleaned.get(name)
            if tenant is not None and owner is not None and owner.tenant_id != tenant.pk:
                self.add_error(name, "Belongs to another tenant.")
        key = cleaned.get("key")
        problem = key_problem(key, domains=FACT_DOMAINS) if key else None
        if problem:
            self.add_error("key", f"The key {problem}.")
        return cleaned


@admin.register(StableFact)
class StableFactAdmin(RedactedDisplayMixin, VersionedScopedAdmin):
    """Facts of the tenant, a project or an end user. Saving adds a version (earlier ones stay,
    read-only); a user's fact goes through `profile_update` like the API's, others through
    `fact_set`, and both are audited."""

    form = StableFactForm
    redacted_fields = ("value",)
    list_display = ("key", "scope", "project", "end_user", "value", "version", "is_current")
    list_filter = ("is_current", "scope", "source", TENANT_FILTER)
    search_fields = ("key", "end_user__external_id", "project__key")
    list_select_related = ("project", "end_user", "tenant")
    readonly_fields = ("scope", "version", "is_current", "source", "approved_by", "created_at")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:  # the owner first: the tenant follows from an end user or a project
            return ("end_user", "project", "tenant", "key", "value")
        return ("tenant", "project", "end_user", "key", "value", *self.readonly_fields)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None:
            return ("tenant", "project", "end_user", "key", *self.readonly_fields)
        return self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.check_tenant(request, obj)
        if obj.end_user is not None:
            profile_update(
                tenant=obj.tenant,
                external_id=obj.end_user.external_id,
                patch=ProfilePatch(
                    facts=[
                        {
                            "key": obj.key,
                            "value": obj.value,
                            **({"project": obj.project.key} if obj.project else {}),
                        }
                    ]
                ),
                staff=request.user,
                source=Source.ADMIN,
            )
            row = StableFact.objects.get(
                end_user=obj.end_user, project=obj.project, key=obj.key, is_current=True
            )
        else:
            row = fact_set(
                tenant=obj.tenant,
                key=obj.key,
                value=obj.value,
                project=obj.project,
                source=Source.ADMIN,
                staff=request.user,
            )
        obj.pk, obj.version, obj.scope = row.pk, row.version, row.scope


class AgentSettingForm(forms.ModelForm):
    value = PlainOrJsonField(help_text=VALUE_HELP)

    class Meta:
        model = AgentSetting
        fields = ("tenant", "project", "key", "value")


@admin.register(AgentSetting)
class AgentSettingAdmin(ScopedModelAdmin):
    """Configuration of the tenant's agents; every save and delete is audited."""

    form = AgentSettingForm
    list_display = ("key", "tenant", "project", "value", "updated_at")
    list_filter = (TENANT_FILTER,)
    search_fields = ("key",)
    list_select_related = ("tenant", "project")

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.check_tenant(request, obj)
        agent_setting_save(setting=obj, staff=request.user)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        agent_setting_delete(setting=obj, staff=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for setting in queryset:
            agent_setting_delete(setting=setting, staff=request.user)


class ApiKeyForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=ApiKey.Scope.choices, widget=forms.CheckboxSelectMultiple
    )
    revoke = forms.BooleanField(
        required=False,
        label="Revoke this key",
        help_text="Requests with it answer 401 from the next one on; this cannot be undone.",
    )

    class Meta:
        model = ApiKey
        fields = ("tenant", "name", "scopes", "trusted_writer")


@admin.register(ApiKey)
class ApiKeyAdmin(ScopedModelAdmin):
    """Keys are created here and shown once; afterwards only their prefix is visible."""

    form = ApiKeyForm
    list_display = (
        "name",
        "tenant",
        "prefix",
        "scopes",
        "trusted_writer",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = (TENANT_FILTER, "trusted_writer", "revoked_at")
    search_fields = ("name", "prefix")
    list_select_related = ("tenant",)
    readonly_fields = ("prefix", "created_by", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke_keys",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None:
            return (*self.readonly_fields, "tenant")
        return ()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("tenant", "name", "scopes", "trusted_writer")
        if obj.revoked_at is not None:  # shown read-only (see has_change_permission)
            return ("tenant", "name", "scopes", "trusted_writer", *self.readonly_fields)
        return ("tenant", "name", "scopes", "trusted_writer", "revoke", *self.readonly_fields)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        active = obj is None or obj.revoked_at is None
        return active and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.check_tenant(request, obj)
        if change:
            # Fewer scopes, or a revocation, hold from the key's next request on.
            api_key_update(
                api_key=obj,
                name=obj.name,
                scopes=form.cleaned_data["scopes"],
                staff=request.user,
                trusted_writer=form.cleaned_data["trusted_writer"],
            )
            if form.cleaned_data.get("revoke"):
                api_key_revoke(api_key=obj, staff=request.user)
            return
        created, secret = api_key_create(
            tenant=obj.tenant,
            name=obj.name,
            scopes=obj.scopes,
            created_by=request.user if request.user.is_authenticated else None,
            trusted_writer=obj.trusted_writer,
        )
        for name in ("pk", "prefix", "key_hash", "scopes", "created_by_id", "created_at"):
            setattr(obj, name, getattr(created, name))
        messages.warning(request, f"Copy this key now; it will not be shown again: {secret}")

    @admin.action(description="Revoke selected keys")
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked = api_keys_revoke(keys=queryset, staff=request.user)
        self.message_user(request, f"Revoked {revoked} key(s).")
