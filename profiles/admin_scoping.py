"""Tenant scoping for admin screens: staff see and pick only rows of their own tenants."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from memoryproject.admin_forms import with_visible_errors
from profiles.models import Tenant, TenantMembership
from profiles.selectors import tenants_for_staff


def allowed_tenants(request: HttpRequest, role: str) -> QuerySet[Tenant]:
    """Tenants the request's staff user holds `role` in, memoised on the request."""
    cache = request.__dict__.setdefault("_allowed_tenants", {})
    if role not in cache:
        cache[role] = tenants_for_staff(user=request.user, role=role)
    return cache[role]


def _tenant_path(model: type[Model]) -> str | None:
    """The lookup from `model` to its tenant, or None if it has no tenant."""
    if model is Tenant:
        return "pk"
    field_names = {f.name for f in model._meta.get_fields()}
    if "tenant" in field_names:
        return "tenant"
    if "session" in field_names:
        return "session__tenant"
    if "end_user" in field_names:
        return "end_user__tenant"
    return None


class TenantScopedMixin:
    """Scopes querysets, permissions and foreign-key choices to the staff user's tenants.

    Superusers see everything. Other staff need a membership with `tenant_role`; Django's
    model permissions are not used for them, memberships are.
    """

    tenant_role: str = TenantMembership.Role.TENANT_ADMIN
    model: type[Model]
    form: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Every error shows on a field the page renders (memoryproject.admin_forms).
        self.form = with_visible_errors(self.form)

    def _tenants(self, request: HttpRequest) -> QuerySet[Tenant]:
        return allowed_tenants(request, self.tenant_role)

    def _scope(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if request.user.is_superuser:
            return queryset
        path = _tenant_path(queryset.model)
        if path is None:
            return queryset.none()
        return queryset.filter(**{f"{path}__in": self._tenants(request)})

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return self._scope(request, super().get_queryset(request))  # type: ignore[misc]

    def _may_use(self, request: HttpRequest, obj: Model | None = None) -> bool:
        user = request.user
        if not (user.is_active and user.is_staff):
            return False
        if user.is_superuser:
            return True
        if obj is None:
            return self._tenants(request).exists()
        return self._scope(request, type(obj)._default_manager.filter(pk=obj.pk)).exists()

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._may_use(request)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self._may_use(request, obj)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return self._may_use(request)

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self._may_use(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self._may_use(request, obj)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        related = db_field.related_model
        if _tenant_path(related) is not None:
            kwargs["queryset"] = self._scope(request, related._default_manager.all())
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]

    def save_model(self, request: HttpRequest, obj: Model, form: Any, change: bool) -> None:
        self.check_tenant(request, obj)
        super().save_model(request, obj, form, change)  # type: ignore[misc]

    def check_tenant(self, request: HttpRequest, obj: Model) -> None:
        """Refuse to save a row into a tenant the user does not administer."""
        if request.user.is_superuser:
            return
        path = _tenant_path(type(obj))
        tenant_id = obj.pk if isinstance(obj, Tenant) else _tenant_id_of(obj, path)
        if tenant_id is None or not self._tenants(request).filter(pk=tenant_id).exists():
            raise PermissionDenied("Not a tenant you administer.")


def _tenant_id_of(obj: Model, path: str | None) -> int | None:
    if path is None:
        return None
    target: Any = obj
    for part in path.split("__")[:-1]:
        target = getattr(target, part, None)
        if target is None:
            return None
    return getattr(target, "tenant_id", None)


class ScopedModelAdmin(TenantScopedMixin, admin.ModelAdmin):
    pass


class ScopedTabularInline(TenantScopedMixin, admin.TabularInline):
    pass


class ScopedStackedInline(TenantScopedMixin, admin.StackedInline):
    pass


# The default related filter lists every tenant; this one lists only tenants of visible rows.
TENANT_FILTER = ("tenant", admin.RelatedOnlyFieldListFilter)


class ReadOnlyScopedAdmin(ScopedModelAdmin):
    """Rows that change only through services elsewhere: view them, never edit them here."""

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class VersionedScopedAdmin(ScopedModelAdmin):
    """Rows kept as versions: only the current one is editable (saving adds a version)."""

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        current = obj is None or getattr(obj, "is_current", False)
        return super().has_change_permission(request, obj) and current

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
