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
from profiles.services import api_key_create, api_key_revoke, preference_set, tenant_delete


@admin.register(Tenant)
class TenantAdmin(ScopedModelAdmin):
    list_display = ("slug", "name", "is_active", "created_at")
    search_fields = ("slug", "name")
    list_filter = ("is_active",)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        tenant_delete(tenant=obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for tenant in queryset:
            tenant_delete(tenant=tenant)


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
            return (*self.readonly_fields, "tenant", "scopes")
        return ()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("tenant", "name", "scopes")
        return ("tenant", "name", "scopes", *self.readonly_fields)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.check_tenant(request, obj)
        if change:
            obj.save(update_fields=["name"])
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
        revoked = [api_key_revoke(api_key=key) for key in queryset if key.revoked_at is None]
        self.message_user(request, f"Revoked {len(revoked)} key(s).")
