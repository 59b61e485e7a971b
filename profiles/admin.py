"""Tenant admins' screens for Layer 1; every change of a versioned value goes through a service."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from memoryproject.admin_redaction import RedactedDisplayMixin, RedactedFieldsForm
from profiles.admin_scoping import (
    TENANT_FILTER,
    ReadOnlyScopedAdmin,
    ScopedModelAdmin,
    ScopedStackedInline,
    ScopedTabularInline,
    VersionedScopedAdmin,
)
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
from profiles.services import (
    api_key_create,
    api_key_revoke,
    api_key_update,
    api_keys_revoke,
    preference_set,
    tenant_delete,
    tenant_save,
    tenants_set_active,
)

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
        tenant_save(tenant=obj)  # a deactivated tenant's keys are refused from the next request

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
        changed = tenants_set_active(tenants=queryset, is_active=False)
        self.message_user(request, f"Deactivated {changed} tenant(s).")

    @admin.action(description="Activate selected tenants")
    def activate_tenants(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        changed = tenants_set_active(tenants=queryset, is_active=True)
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


class UserProfileInline(ScopedStackedInline):
    model = UserProfile
    form = UserProfileForm
    can_delete = False


class UserProjectRoleInline(ScopedTabularInline):
    model = UserProjectRole
    extra = 0
    exclude = ("tenant",)


@admin.register(EndUser)
class EndUserAdmin(ScopedModelAdmin):
    list_display = ("external_id", "tenant", "created_at", "updated_at")
    list_filter = (TENANT_FILTER,)
    search_fields = ("external_id",)
    list_select_related = ("tenant",)
    inlines = (UserProfileInline, UserProjectRoleInline)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        for inline_form in formset.forms:
            instance = inline_form.instance
            if isinstance(instance, UserProjectRole):
                instance.tenant_id = form.instance.tenant_id
        super().save_formset(request, form, formset, change)


class UserPreferenceForm(RedactedFieldsForm):
    redacted_fields = ("value",)

    class Meta:
        model = UserPreference
        fields = "__all__"


@admin.register(UserPreference)
class UserPreferenceAdmin(RedactedDisplayMixin, VersionedScopedAdmin):
    """Saving a preference adds a new version; earlier versions stay, read-only."""

    form = UserPreferenceForm
    redacted_fields = ("value",)
    list_display = ("key", "end_user", "value", "version", "is_current", "source", "created_at")
    list_filter = ("is_current", "source", TENANT_FILTER)
    search_fields = ("key", "end_user__external_id")
    list_select_related = ("end_user", "tenant")
    fields = ("end_user", "key", "value", "confidence", "version", "is_current", "source")
    readonly_fields = ("version", "is_current", "source", "source_ids", "created_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None:
            return (*self.readonly_fields, "end_user", "key")
        return self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.check_tenant(request, obj.end_user)
        row = preference_set(
            end_user=obj.end_user,
            key=obj.key,
            value=obj.value,
            confidence=obj.confidence,
            source=Source.ADMIN,
        )
        obj.pk, obj.version, obj.tenant_id = row.pk, row.version, row.tenant_id


@admin.register(StableFact)
class StableFactAdmin(RedactedDisplayMixin, ReadOnlyScopedAdmin):
    """Facts arrive through reviewed promotions; here they are read, with their history."""

    redacted_fields = ("value",)
    list_display = ("key", "scope", "project", "end_user", "value", "version", "is_current")
    list_filter = ("is_current", "scope", "source", TENANT_FILTER)
    search_fields = ("key", "end_user__external_id", "project__key")
    list_select_related = ("project", "end_user", "tenant")


@admin.register(AgentSetting)
class AgentSettingAdmin(ScopedModelAdmin):
    list_display = ("key", "tenant", "project", "value", "updated_at")
    list_filter = (TENANT_FILTER,)
    search_fields = ("key",)
    list_select_related = ("tenant", "project")


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
        fields = ("tenant", "name", "scopes")


@admin.register(ApiKey)
class ApiKeyAdmin(ScopedModelAdmin):
    """Keys are created here and shown once; afterwards only their prefix is visible."""

    form = ApiKeyForm
    list_display = (
        "name",
        "tenant",
        "prefix",
        "scopes",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = (TENANT_FILTER, "revoked_at")
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
            return ("tenant", "name", "scopes")
        if obj.revoked_at is not None:  # shown read-only (see has_change_permission)
            return ("tenant", "name", "scopes", *self.readonly_fields)
        return ("tenant", "name", "scopes", "revoke", *self.readonly_fields)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        active = obj is None or obj.revoked_at is None
        return active and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.check_tenant(request, obj)
        if change:
            # Fewer scopes, or a revocation, hold from the key's next request on.
            api_key_update(api_key=obj, name=obj.name, scopes=form.cleaned_data["scopes"])
            if form.cleaned_data.get("revoke"):
                api_key_revoke(api_key=obj)
            return
        created, secret = api_key_create(
            tenant=obj.tenant,
            name=obj.name,
            scopes=obj.scopes,
            created_by=request.user if request.user.is_authenticated else None,
        )
        for name in ("pk", "prefix", "key_hash", "scopes", "created_by_id", "created_at"):
            setattr(obj, name, getattr(created, name))
        messages.warning(request, f"Copy this key now; it will not be shown again: {secret}")

    @admin.action(description="Revoke selected keys")
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked = api_keys_revoke(keys=queryset)
        self.message_user(request, f"Revoked {revoked} key(s).")
