"""Changes of one card through the API: an edit of the ledger, guarded as an import is.

An edit keeps the card's id, owner, project and type; it may change its texts, entities, tags,
importance, confidence and when what it remembers happened. Its texts are redacted (a field of
nothing but sensitive data is `Invalid`) and screened by meaning as well as by the patterns (one
card, so the embedding is affordable); what reads as an instruction to the model is held for
review and changes nothing. The new version, its outbox row and its audit event (each field's
value before and after, redacted) commit together; the indexes follow from the outbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from memories.audit.services import Action, Actor, audit_record, changes_between, state_sha256
from memories.ltm.models import LtmCard, LtmOutbox
from memories.ltm.services import CardInput, outbox_drain_enqueue, redacted_cards
from memories.quarantine.services import released_refs
from memoryproject.errors import Conflict, Invalid, NotFound
from memoryproject.quarantine import WritePath, held_view, hold, screen_for
from memoryproject.redaction import redactor_for
from profiles.models import Tenant

EDITABLE = (
    "title",
    "summary",
    "content",
    "entities",
    "tags",
    "importance",
    "confidence",
    "occurred_at",
)
SCREENED = ("title", "summary", "content", "entities", "tags")


class Outcome:
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    QUARANTINED = "quarantined"


@dataclass(frozen=True)
class CardUpdateResult:
    """What an edit did, and the card as it is now."""

    outcome: str
    card: LtmCard
    redacted: list[str]
    quarantine: dict[str, str] | None = None


def card_update(
    *,
    tenant: Tenant,
    memory_id: str,
    changes: Mapping[str, Any],
    actor: Actor,
    expected_version: int | None = None,
    screen: bool = True,
) -> CardUpdateResult:
    """Change one card of the tenant that is not deleted (NotFound otherwise).

    `changes` maps names of `EDITABLE` to their new values. `expected_version`: apply only to
    that version (`Conflict` otherwise). `screen=False` is a reviewer's release of an edit the
    quarantine held.
    """
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise Invalid(
            "These fields of a card cannot be changed.",
            fields={name: ["Not editable."] for name in unknown},
        )
    with transaction.atomic():
        card = (
            LtmCard.objects.select_for_update(of=("self",))
            .select_related("end_user", "project")
            .filter(tenant=tenant, memory_id=memory_id)
            .exclude(status=LtmCard.Status.DELETED)
            .first()
        )
        if card is None:
            raise NotFound(f"No card {memory_id!r}.")
        if expected_version is not None and card.version != expected_version:
            raise Conflict(
                f"Card {memory_id!r} is at version {card.version}, not {expected_version}."
            )
        before = _values(card)
        [edited] = redacted_cards([_input(card, changes)], redactor=redactor_for(tenant), path="")
        after = {**before, **_values(edited)}
        # The fields redaction rewrote (the writer sees which of theirs were not kept as given).
        redacted = sorted(
            name for name in SCREENED if name in changes and after[name] != _plain(changes[name])
        )
        if screen:
            held = _quarantined(tenant, card, {n: after[n] for n in changes})
            if held is not None:
                return CardUpdateResult(
                    Outcome.QUARANTINED, card=card, redacted=redacted, quarantine=held
                )
        written = [name for name in EDITABLE if after[name] != before[name]]
        if not written:
            return CardUpdateResult(Outcome.UNCHANGED, card=card, redacted=redacted)
        for name in written:
            setattr(card, name, after[name])
        card.version += 1
        card.save()
        LtmOutbox.objects.create(card=card, version=card.version)
        audit_record(
            tenant=tenant,
            action=Action.UPDATE,
            actor=actor,
            object_type="ltm_card",
            object_id=card.memory_id,
            before=_serialisable(before),
            after=_serialisable(after),
            changes=changes_between(_serialisable(before), _serialisable(after)),
            end_user_pk=card.end_user_id,
            details={"version": card.version, "fields": written},
        )
        transaction.on_commit(outbox_drain_enqueue)
    return CardUpdateResult(Outcome.UPDATED, card=card, redacted=redacted)


def _input(card: LtmCard, changes: Mapping[str, Any]) -> CardInput:
    values = {name: changes.get(name, getattr(card, name)) for name in EDITABLE}
    return CardInput(
        memory_type=card.memory_type,
        title=values["title"],
        summary=values["summary"],
        content=values["content"],
        entities=tuple(values["entities"]),
        tags=tuple(values["tags"]),
        importance=float(values["importance"]),
        confidence=float(values["confidence"]),
        occurred_at=values["occurred_at"],
    )


def _values(card: LtmCard | CardInput) -> dict[str, Any]:
    return {name: _plain(getattr(card, name)) for name in EDITABLE}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple | list) else value


def _serialisable(values: Mapping[str, Any]) -> dict[str, Any]:
    return {
        name: value.isoformat() if isinstance(value, datetime) else value
        for name, value in values.items()
    }


def _quarantined(tenant: Tenant, card: LtmCard, given: Mapping[str, Any]) -> dict[str, str] | None:
    """Hold the edit when a text it gives reads as an instruction to the model; its quarantine
    view, or None when it passes (a reviewer may have released the same edit before)."""
    finding = screen_for(tenant, by_meaning=True).fields(
        (name, value) for name, value in given.items() if name in SCREENED
    )
    if finding is None:
        return None
    edit = _serialisable(given)
    ref = f"{WritePath.CARD_UPDATE}:{card.memory_id}:{card.version}:{state_sha256(edit)[:24]}"
    if released_refs(tenant=tenant, refs=[ref]):
        return None
    held_id = hold(
        tenant=tenant,
        path=WritePath.CARD_UPDATE,
        finding=finding,
        text="\n".join(str(edit[name]) for name in SCREENED if name in edit),
        payload={"memory_id": card.memory_id, "changes": edit, "version": card.version},
        source_kind="import",
        user_id=card.end_user.external_id if card.end_user else "",
        ref=ref,
    )
    return held_view(quarantine_id=held_id, finding=finding)
