"""Tenants: creation, an admin's edits, (de)activation and deletion; each change that can end
a tenant's keys drops their cached lookups."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet

from memoryproject.errors import Conflict
from profiles.models import Tenant
from profiles.services.api_keys import api_key_cache_forget_of_tenants
from profiles.services.audit import staff_audit

TENANT_FIELDS = ("slug", "name", "is_active")


def tenant_create(*, slug: str, name: str) -> Tenant:
    """Create a tenant; its slug must be unique."""
    tenant = Tenant(slug=slug, name=name)
    tenant.full_clean()
    try:
        with transaction.atomic():
            tenant.save()
    except IntegrityError:
        raise Conflict(f"Tenant {slug!r} exists already.") from None
    return tenant


def tenant_save(*, tenant: Tenant, staff: Any = None) -> Tenant:
    """Save a tenant edited by an admin; its keys' cached lookups (which carry the tenant's
    slug, name and active flag) are dropped, so a deactivation holds from the next request.
    With `staff` the change is an audit event of the tenant."""
    with transaction.atomic():
        before = (
            Tenant.objects.filter(pk=tenant.pk).values(*TENANT_FIELDS).first()
            if tenant.pk
            else None
        )
        tenant.save()
        api_key_cache_forget_of_tenants(tenant_ids=[tenant.pk])
        after = {name: getattr(tenant, name) for name in TENANT_FIELDS}
        if staff is not None and after != before:
            staff_audit(
                tenant=tenant,
                action="update" if before else "create",
                staff=staff,
                object_type="tenant",
                object_id=f"tenant:{tenant.pk}",
                before=before,
                after=after,
                details={
                    "changed": sorted(k for k in after if not before or before[k] != after[k])
                },
            )
    return tenant


def tenants_set_active(*, tenants: QuerySet[Tenant], is_active: bool, staff: Any = None) -> int:
    """Activate or deactivate tenants in one step; a deactivated tenant's keys answer 401
    from the next request on. Returns how many tenants changed; with `staff` each change is
    an audit event of its tenant."""
    with transaction.atomic():
        pks = list(tenants.select_for_update().values_list("pk", flat=True))
        changing = list(
            Tenant.objects.filter(pk__in=pks)
            .exclude(is_active=is_active)
            .values(*TENANT_FIELDS, "pk")
        )
        changed = Tenant.objects.filter(pk__in=[row["pk"] for row in changing]).update(
            is_active=is_active
        )
        api_key_cache_forget_of_tenants(tenant_ids=pks)
        for row in changing if staff is not None else ():
            before = {name: row[name] for name in TENANT_FIELDS}
            staff_audit(
                tenant=row["pk"],
                action="update",
                staff=staff,
                object_type="tenant",
                object_id=f"tenant:{row['pk']}",
                before=before,
                after={**before, "is_active": is_active},
                details={"changed": ["is_active"]},
            )
    return changed


@transaction.atomic
def tenant_delete(*, tenant: Tenant) -> None:
    """Remove a tenant and every PostgreSQL row it holds, its audit trail included; its keys
    answer 401 from the next request on.

    Audit events refuse deletion unless the transaction says it removes whole tenants.
    """
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL memory.audit_purge = 'on'")
    api_key_cache_forget_of_tenants(tenant_ids=[tenant.pk])
    tenant.delete()
