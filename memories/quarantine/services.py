"""Keeping held texts: the recorder `memoryproject.quarantine.hold` calls, and the checks the
memory writers make (their tenant's screen; whether a reviewer released a write they meet
again). Releasing and discarding, which write through the pipelines, are in
`memories.review.quarantine`."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import IntegrityError, transaction

from memories.audit.services import Action, Actor, audit_record
from memories.policies.selectors import injection_screen
from memories.quarantine.models import QuarantinedText
from memoryproject.quarantine import Finding, WritePath, hold
from memoryproject.redaction import redactor_for
from profiles.models import EndUser, Tenant
from transcripts.models import Session

SCREENED_ROLES = frozenset({"user", "assistant", "tool"})
# The user's own words are screened by meaning too; assistant and tool events, recalled quoted
# and attributed as evidence, by the patterns alone.
ROLES_BY_MEANING = frozenset({"user"})


def new_quarantine_id() -> str:
    return f"qtn_{uuid.uuid4().hex[:20]}"


def quarantine_record(
    *,
    tenant: Tenant | int,
    path: str,
    finding: Finding,
    text: str,
    payload: dict[str, Any],
    source_kind: str = "",
    user_id: str = "",
    ref: str = "",
) -> tuple[str, bool]:
    """Keep one held text (in the caller's transaction) with its audit event; returns its id
    and whether it is new (the same `ref` held before returns the id it was held under)."""
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    if ref:
        known = QuarantinedText.objects.filter(tenant_id=tenant_id, ref=ref).first()
        if known is not None:
            return known.quarantine_id, False
    end_user = (
        EndUser.objects.filter(tenant_id=tenant_id, external_id=user_id).first()
        if user_id
        else None
    )
    redactor = redactor_for(tenant_id)
    row = QuarantinedText(
        quarantine_id=new_quarantine_id(),
        tenant_id=tenant_id,
        end_user=end_user,
        user_id=user_id,
        path=path,
        source_kind=source_kind[:32],
        reason=finding.reason,
        field=finding.path[:200],
        excerpt=redactor.text(finding.excerpt).text[:200],
        text=redactor.text(text).text,
        payload=payload,
        ref=ref[:200],
    )
    try:
        with transaction.atomic():
            row.save()
            audit_record(
                tenant=tenant_id,
                action=Action.CREATE,
                actor=Actor.job("quarantine"),
                object_type="quarantined_text",
                object_id=row.quarantine_id,
                after={"text": row.text, "payload": payload},
                end_user_pk=end_user.pk if end_user else None,
                details={"path": path, "reason": finding.reason, "field": row.field},
            )
    except IntegrityError:  # the same ref held meanwhile
        return QuarantinedText.objects.get(tenant_id=tenant_id, ref=ref).quarantine_id, False
    return row.quarantine_id, True


def released_refs(*, tenant: Tenant | int, refs: Iterable[str]) -> set[str]:
    """Which of the refs a reviewer released (their writes pass the screen from then on)."""
    wanted = [ref for ref in refs if ref]
    if not wanted:
        return set()
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    return set(
        QuarantinedText.objects.filter(
            tenant_id=tenant_id, ref__in=wanted, status=QuarantinedText.Status.RELEASED
        ).values_list("ref", flat=True)
    )


def event_ref(*, session_pk: int, seq: int) -> str:
    """The ref of a transcript event held from extraction and history."""
    return f"event:{session_pk}:{seq}"


def events_held(*, session: Session, events: Sequence[dict[str, Any]]) -> set[int]:
    """The seqs of the session's user, assistant and tool events whose text reads as an
    instruction to the model, each held (once) for review; released ones pass. User events
    are screened by meaning as well as by the patterns.

    Neither extraction nor the history index uses a held event; the transcript keeps it
    (Layer 0 is append-only).
    """
    by_meaning = injection_screen(session.tenant_id, by_meaning=True)
    patterns = by_meaning.patterns_only()
    found: dict[int, tuple[dict[str, Any], Finding]] = {}
    for event in events:
        if event.get("role") not in SCREENED_ROLES:
            continue
        screen = by_meaning if event.get("role") in ROLES_BY_MEANING else patterns
        finding = screen.text(str(event.get("content") or ""), path="content")
        if finding is not None:
            found[int(event["seq"])] = (event, finding)
    if not found:
        return set()
    refs = {seq: event_ref(session_pk=session.pk, seq=seq) for seq in found}
    released = released_refs(tenant=session.tenant_id, refs=refs.values())
    user_id = session.end_user.external_id if session.end_user else ""
    held = set()
    for seq, (event, finding) in found.items():
        if refs[seq] in released:
            continue
        hold(
            tenant=session.tenant_id,
            path=WritePath.EVENT,
            finding=finding,
            text=str(event.get("content") or ""),
            payload={
                "session_pk": session.pk,
                "session_id": session.external_id,
                "seq": seq,
                "event_id": str(event.get("id", "")),
                "role": str(event.get("role", "")),
            },
            source_kind=str(event.get("role", "")),
            user_id=user_id,
            ref=refs[seq],
        )
        held.add(seq)
    return held


def proposal_held(
    *, tenant: Tenant, fingerprint: str, proposal: dict[str, Any], user_id: str, origin: str
) -> bool:
    """Whether a promotion proposal (of the scan or of reflection) reads as an instruction to
    the model: then it is held for review, once per fingerprint, instead of proposed; once a
    reviewer releases it, the next scan proposes it. Screened by meaning too: a promoted text
    becomes a rule or a profile fact."""
    finding = injection_screen(tenant, by_meaning=True).value(proposal)
    if finding is None:
        return False
    ref = f"promotion:{fingerprint}"
    if released_refs(tenant=tenant, refs=[ref]):
        return False
    text = "\n".join(
        str(proposal.get(name))
        for name in ("title", "summary", "content", "value")
        if proposal.get(name)
    )
    hold(
        tenant=tenant,
        path=WritePath.PROMOTION,
        finding=finding,
        text=text,
        payload={"proposal": proposal, "origin": origin},
        source_kind=origin,
        user_id=user_id,
        ref=ref,
    )
    return True
