"""Agent settings an admin saves or deletes, each with its audit event."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from memories.audit.services import changes_between
from profiles.models import AgentSetting
from profiles.services.audit import staff_audit


def agent_setting_save(*, setting: AgentSetting, staff: Any) -> AgentSetting:
    """Save an agent setting edited by an admin, with its audit event."""
    with transaction.atomic():
        before = (
            AgentSetting.objects.filter(pk=setting.pk).values("key", "project_id", "value").first()
            if setting.pk
            else None
        )
        setting.full_clean()
        setting.save()
        after = {"key": setting.key, "project_id": setting.project_id, "value": setting.value}
        staff_audit(
            tenant=setting.tenant_id,
            action="update" if before else "create",
            staff=staff,
            object_type="agent_setting",
            object_id=f"agent_setting:{setting.pk}",
            before=before,
            after=after,
            details={"keys": [setting.key]},
            changes=changes_between(before, after, contexts={"value": setting.key}),
        )
    return setting


def agent_setting_delete(*, setting: AgentSetting, staff: Any) -> None:
    """Delete an agent setting, with its audit event."""
    with transaction.atomic():
        before = {"key": setting.key, "project_id": setting.project_id, "value": setting.value}
        staff_audit(
            tenant=setting.tenant_id,
            action="delete",
            staff=staff,
            object_type="agent_setting",
            object_id=f"agent_setting:{setting.pk}",
            before=before,
            details={"keys": [setting.key]},
            changes=changes_between(before, None, contexts={"value": setting.key}),
        )
        setting.delete()
