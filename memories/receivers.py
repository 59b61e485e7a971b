"""Reactions to Django's model signals of other layers' rows: the recall context's cache is
invalidated, a deleted tenant's purge recorded and scheduled.

Reactions to an append are not signals: they are the table in `memories/apps.py`, which
`transcripts.reactions` calls.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_delete
from django.dispatch import receiver

from memories.policies.models import RecallPolicy, VocabularyEntry
from memories.recall.cache import context_cache
from memories.review.models import TenantPurge
from memoryproject.errors import StoreUnavailable
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

logger = logging.getLogger(__name__)


# --- cached Layer 1 context of recall -------------------------------------------------------
# A change to any row behind the cached context bumps its generation once the change commits,
# so the next recall reads PostgreSQL again.
USER_ROWS = (UserProfile, UserPreference, UserProjectRole)
TENANT_ROWS = (Tenant, Project, Workspace, AgentSetting, RecallPolicy, VocabularyEntry)


def _invalidate(tenant_id: int, user_ids: tuple[str, ...] = ()) -> None:
    def bump() -> None:
        try:
            context_cache().invalidate(tenant_id=tenant_id, user_ids=user_ids)
        except StoreUnavailable:
            # Cached documents still age out after RECALL_CONTEXT_MAX_AGE_SECONDS.
            logger.warning("recall context of tenant %s not invalidated", tenant_id)

    transaction.on_commit(bump)


def _external_id(end_user_id: int | None) -> str | None:
    if end_user_id is None:
        return None
    return EndUser.objects.filter(pk=end_user_id).values_list("external_id", flat=True).first()


def invalidate_recall_context(sender: Any, instance: Any, **_: Any) -> None:
    if sender is EndUser:
        _invalidate(instance.tenant_id, (instance.external_id,))
    elif sender in USER_ROWS or (sender is StableFact and instance.scope == StableFact.Scope.USER):
        external_id = _external_id(instance.end_user_id)
        if external_id is not None:
            _invalidate(_tenant_of(instance), (external_id,))
    elif sender is StableFact or sender in TENANT_ROWS:
        _invalidate(_tenant_of(instance))


def _tenant_of(instance: Any) -> int:
    if isinstance(instance, Tenant):
        return instance.pk
    if isinstance(instance, UserProfile):
        return (
            EndUser.objects.filter(pk=instance.end_user_id)
            .values_list("tenant_id", flat=True)
            .first()
            or 0
        )
    return int(instance.tenant_id)


# Connected per model, so saves of unrelated rows (transcripts, cards, ...) never call it.
for _model in (EndUser, StableFact, *USER_ROWS, *TENANT_ROWS):
    for _signal in (post_save, post_delete):
        _signal.connect(
            invalidate_recall_context,
            sender=_model,
            dispatch_uid=f"recall-context-{_signal is post_save}-{_model.__name__}",
        )


# --- a deleted tenant's data beside PostgreSQL --------------------------------------------------
@receiver(pre_delete, sender=Tenant, dispatch_uid="tenant-purge-record")
def record_tenant_purge(sender: Any, instance: Tenant, **_: Any) -> None:
    """Note, in the deleting transaction, what the purge must clear once the rows are gone."""
    users = EndUser.objects.filter(tenant_id=instance.pk).values_list("pk", "external_id")
    TenantPurge.objects.create(
        tenant_id=instance.pk,
        tenant_slug=instance.slug,
        end_users=[[pk, external_id] for pk, external_id in users],
    )


@receiver(post_delete, sender=Tenant, dispatch_uid="tenant-purge-schedule")
def schedule_tenant_purge(sender: Any, instance: Tenant, **_: Any) -> None:
    """Purge after commit. Registered after the deleted rows' own commit callbacks (the tenant
    row goes last, and this receiver is connected after the context invalidation), so no
    counter they bump outlives the purge."""
    from memories.tasks import tenant_purge_task

    tenant_id = instance.pk

    def enqueue() -> None:
        purges = TenantPurge.objects.filter(tenant_id=tenant_id)
        for purge_id in purges.values_list("pk", flat=True):
            try:
                tenant_purge_task.delay(purge_id=purge_id)
            except Exception:  # the broker is down: the tenant-purges-resume beat job runs it
                logger.warning("purge of deleted tenant %s not queued", tenant_id, exc_info=True)

    transaction.on_commit(enqueue)
