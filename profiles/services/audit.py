"""The staff audit of Layer 1: an admin's change recorded in the tenant's audit trail."""

from __future__ import annotations

from typing import Any

from memories.audit.services import Actor, audit_record
from profiles.models import Tenant


def staff_audit(
    *,
    tenant: Tenant | int,
    action: str,
    staff: Any,
    object_type: str,
    object_id: str,
    before: Any = None,
    after: Any = None,
    details: dict[str, Any] | None = None,
    end_user_pk: int | None = None,
) -> None:
    """Record a staff user's change of Layer 1 in the tenant's audit trail (in the caller's
    transaction). The trail sits below this layer, so every writer can record into it."""
    audit_record(
        tenant=tenant,
        action=action,
        actor=Actor.staff(staff),
        object_type=object_type,
        object_id=object_id,
        before=before,
        after=after,
        end_user_pk=end_user_pk,
        details=details,
    )
