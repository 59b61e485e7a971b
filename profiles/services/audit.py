"""The staff audit of Layer 1: an admin's change recorded in the tenant's audit trail."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memories.audit.services import Actor, Change, audit_record, changes_between
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
    changes: Sequence[Change] | None = None,
) -> None:
    """Record a staff user's change of Layer 1 in the tenant's audit trail (in the caller's
    transaction), with the values of the fields it changed (`changes`, redacted there; by
    default the fields that differ between `before` and `after`). The trail sits below this
    layer, so every writer can record into it."""
    if changes is None:
        changes = changes_between(before, after) if _is_state(before, after) else []
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
        changes=changes,
    )


def _is_state(before: Any, after: Any) -> bool:
    """Whether the two states are records of named fields (a missing one included)."""
    states = [state for state in (before, after) if state is not None]
    return bool(states) and all(isinstance(state, dict) for state in states)
