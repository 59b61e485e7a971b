"""Deletion requests: agents ask, reviewers decide, an erasure job carries out approved ones."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from memories.audit.services import Action, Actor, audit_record
from memories.ltm.models import LtmCard
from memories.review.models import DeletionRequest
from memories.review.promotion_scan import new_request_id
from memoryproject.errors import Conflict, ErrorCode, Invalid, NotFound
from profiles.models import EndUser, StableFact, Tenant, UserPreference

logger = logging.getLogger(__name__)

FACT_PREFIX = "fact_"
PREFERENCE_PREFIX = "pref_"


def fact_row_for(*, tenant: Tenant, fact_id: str) -> UserPreference | StableFact:
    """The preference (`pref_<n>`) or stable fact (`fact_<n>`) of the tenant with this id."""
    model: type[UserPreference] | type[StableFact]
    if fact_id.startswith(PREFERENCE_PREFIX):
        model, raw = UserPreference, fact_id.removeprefix(PREFERENCE_PREFIX)
    elif fact_id.startswith(FACT_PREFIX):
        model, raw = StableFact, fact_id.removeprefix(FACT_PREFIX)
    else:
        raise NotFound(f"No fact {fact_id!r}.")
    # ASCII digits only: str.isdigit() also accepts superscripts and other scripts' digits.
    number = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 18 else None
    row = model.objects.filter(tenant=tenant, pk=number).first() if number else None
    if row is None:
        raise NotFound(f"No fact {fact_id!r}.")
    return row


def audit_ref(*, tenant_id: int, kind: str, target: str) -> tuple[str, int | None]:
    """How the audit trail names a deletion target, and the end user's key if it is one.

    An end user is named by primary key, never by the tenant's own id: the trail outlives the
    user's erasure and must not keep an identifier such as an e-mail address.
    """
    if kind != DeletionRequest.Kind.USER:
        return target, None
    pk = (
        EndUser.objects.filter(tenant_id=tenant_id, external_id=target)
        .values_list("pk", flat=True)
        .first()
    )
    return f"end_user:{pk}", pk


def _subject_of(*, tenant: Tenant, kind: str, target: str) -> str:
    """Check the target exists in the tenant; returns the external id of its end user."""
    if kind == DeletionRequest.Kind.USER:
        if not EndUser.objects.filter(tenant=tenant, external_id=target).exists():
            raise NotFound(f"No user {target!r}.")
        return target
    if kind == DeletionRequest.Kind.CARD:
        card = (
            LtmCard.objects.filter(tenant=tenant, memory_id=target)
            .exclude(status=LtmCard.Status.DELETED)
            .select_related("end_user")
            .first()
        )
        if card is None:
            raise NotFound(f"No card {target!r}.")
        return card.end_user.external_id if card.end_user else ""
    row = fact_row_for(tenant=tenant, fact_id=target)
    end_user = row.end_user
    return end_user.external_id if end_user else ""


def deletion_request(
    *, tenant: Tenant, kind: str, target: str, actor: Actor, reason: str = ""
) -> tuple[DeletionRequest, bool]:
    """Queue a deletion for review; an open request for the same target is returned as is.

    Returns the request and whether it was created now.
    """
    if kind not in DeletionRequest.Kind.values:
        raise Invalid(f"Unknown deletion kind {kind!r}.", fields={"kind": ["Unknown kind."]})
    if kind in (DeletionRequest.Kind.FACT, DeletionRequest.Kind.PREFERENCE):
        kind = (
            DeletionRequest.Kind.PREFERENCE
            if target.startswith(PREFERENCE_PREFIX)
            else DeletionRequest.Kind.FACT
        )
    subject = _subject_of(tenant=tenant, kind=kind, target=target)
    open_statuses = (DeletionRequest.Status.PENDING, DeletionRequest.Status.ERASING)
    existing = DeletionRequest.objects.filter(
        tenant=tenant, kind=kind, target=target, status__in=open_statuses
    ).first()
    if existing is not None:
        return existing, False
    request = DeletionRequest(
        request_id=new_request_id("del"),
        tenant=tenant,
        kind=kind,
        target=target,
        subject_user=subject,
        reason=reason,
        requested_by=actor.name,
    )
    object_id, end_user_pk = audit_ref(tenant_id=tenant.pk, kind=kind, target=target)
    try:
        with transaction.atomic():
            request.save()
            audit_record(
                tenant=tenant,
                action=Action.REQUEST_DELETION,
                actor=actor,
                object_type=kind,
                object_id=object_id,
                end_user_pk=end_user_pk,
                reason=reason,
                details={"request": request.request_id},
            )
    except IntegrityError:  # the same target was requested concurrently
        winner = DeletionRequest.objects.filter(
            tenant=tenant, kind=kind, target=target, status__in=open_statuses
        ).first()
        if winner is None:
            raise
        return winner, False
    return request, True


def _locked_pending(request: DeletionRequest) -> DeletionRequest:
    locked = DeletionRequest.objects.select_for_update().get(pk=request.pk)
    if locked.status != DeletionRequest.Status.PENDING:
        raise Conflict(
            f"Deletion {locked.request_id} was already {locked.status}.",
            code=ErrorCode.ALREADY_DECIDED,
        )
    return locked


@transaction.atomic
def deletion_approve(
    *, request: DeletionRequest, reviewer: AbstractBaseUser, reason: str = ""
) -> DeletionRequest:
    """Approve a deletion; the erasure job starts once this commits."""
    request = _locked_pending(request)
    request.status = DeletionRequest.Status.ERASING
    request.decided_by = reviewer  # type: ignore[assignment]
    request.decided_at = timezone.now()
    request.decision_reason = reason
    request.save()
    target, end_user_pk = audit_ref(
        tenant_id=request.tenant_id, kind=request.kind, target=request.target
    )
    audit_record(
        tenant=request.tenant,
        action=Action.APPROVE,
        actor=Actor.staff(reviewer),
        object_type="deletion_request",
        object_id=request.request_id,
        reason=reason,
        end_user_pk=end_user_pk,
        details={"kind": request.kind, "target": target},
    )
    request_id = request.request_id
    transaction.on_commit(lambda: erasure_enqueue(request_id))
    return request


@transaction.atomic
def deletion_reject(
    *, request: DeletionRequest, reviewer: AbstractBaseUser, reason: str
) -> DeletionRequest:
    """Refuse a deletion (the reason is required and kept)."""
    if not reason.strip():
        raise Invalid("Say why the deletion is rejected.", fields={"reason": ["Required."]})
    request = _locked_pending(request)
    request.status = DeletionRequest.Status.REJECTED
    request.decided_by = reviewer  # type: ignore[assignment]
    request.decided_at = timezone.now()
    request.decision_reason = reason.strip()
    request.save()
    target, _ = audit_ref(tenant_id=request.tenant_id, kind=request.kind, target=request.target)
    audit_record(
        tenant=request.tenant,
        action=Action.REJECT,
        actor=Actor.staff(reviewer),
        object_type="deletion_request",
        object_id=request.request_id,
        reason=reason.strip(),
        details={"kind": request.kind, "target": target},
    )
    return request


def erasure_enqueue(request_id: str) -> None:
    """Ask a worker to run (or resume) an approved erasure."""
    from memories.review.tasks import erasure_run_task

    try:
        erasure_run_task.delay(request_id=request_id)
    except Exception:  # the broker is down: the resume job picks it up
        logger.warning("erasure %s not enqueued", request_id, exc_info=True)


def deletion_for(*, tenant: Tenant, request_id: str) -> DeletionRequest:
    request = DeletionRequest.objects.filter(tenant=tenant, request_id=request_id).first()
    if request is None:
        raise NotFound(f"No deletion request {request_id!r}.")
    return request


def deletions_to_resume(*, older_than_seconds: int = 300, limit: int = 50) -> Sequence[str]:
    """Approved erasures that have not finished and have not moved for a while."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    return list(
        DeletionRequest.objects.filter(
            status=DeletionRequest.Status.ERASING, updated_at__lt=cutoff
        ).values_list("request_id", flat=True)[:limit]
    )
