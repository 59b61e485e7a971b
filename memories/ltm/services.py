"""Writes of long-term memory: the card ledger in PostgreSQL and its two indexes.

A card change and its outbox row commit together; `outbox_drain` then writes the card's
current version to Milvus and Elasticsearch (in that order, so whatever Elasticsearch can
find, Milvus holds too) and deletes the row. Replays are harmless: both writes are keyed by
memory_id and Elasticsearch refuses versions older than the one it has.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memories.audit.services import Action, Actor, AuditEntry, audit_record_many
from memories.ltm.embedder import embedder
from memories.ltm.models import LtmCard, LtmOutbox
from memories.ltm.scope import CardDocument
from memories.ltm.search import card_search_index
from memories.ltm.text import bm25_text
from memories.ltm.vectors import vector_index
from memoryproject.errors import Invalid, NotFound, StoreUnavailable
from memoryproject.quarantine import WritePath, held_view, hold, screen_for
from memoryproject.redaction import (
    NAMES_CONTEXT,
    Redactor,
    Report,
    redact_record,
    redactor_for,
)
from profiles.models import Project, Tenant
from profiles.services.end_users import end_users_get_or_create

logger = logging.getLogger(__name__)

# Rows per INSERT or UPDATE of an import: a card has about 20 columns, so 1,000 rows stay far
# below PostgreSQL's 65,535 parameters per statement.
WRITE_BATCH = 1000

CARD_FIELDS = (
    "memory_type",
    "title",
    "summary",
    "content",
    "entities",
    "tags",
    "source_type",
    "source_refs",
    "importance",
    "confidence",
    "occurred_at",
)


@dataclass(frozen=True)
class CardInput:
    """One card as an importer (or a promotion) gives it."""

    memory_type: str
    summary: str
    title: str = ""
    content: str = ""
    external_id: str = ""
    user_id: str = ""
    project: str = ""
    entities: Sequence[str] = ()
    tags: Sequence[str] = ()
    source_type: str = LtmCard.SourceType.IMPORT
    source_refs: dict[str, list[str]] = field(default_factory=dict)
    importance: float = 0.5
    confidence: float = 0.8
    occurred_at: datetime | None = None  # when what the card remembers happened


def new_memory_id() -> str:
    return f"ltm_{uuid.uuid4().hex[:20]}"


@transaction.atomic
def cards_import(
    *, tenant: Tenant, cards: Sequence[CardInput], actor: Actor | None = None
) -> list[tuple[LtmCard, str]]:
    """Create or update cards as one unit; returns each card with created/updated/unchanged.

    A card with the `external_id` of an existing one updates it (a new version). Every text
    is redacted first; a field that held nothing but sensitive content, or a card the ledger
    refuses, refuses the whole import (`Invalid` naming `cards.<index>.<field>`). The writes
    are batched (one INSERT of the new cards, one UPDATE of the changed, one INSERT of their
    outbox rows and one of their audit events), so an import costs a few round trips, and the
    tenant's audit lock is taken once, last, and held only until the commit.
    """
    redacted = redacted_cards(cards, redactor=redactor_for(tenant), path="cards")
    return _cards_write(tenant=tenant, cards=redacted, positions=range(len(redacted)), actor=actor)


def _cards_write(
    *, tenant: Tenant, cards: Sequence[CardInput], positions: Sequence[int], actor: Actor | None
) -> list[tuple[LtmCard, str]]:
    """Write redacted cards (in the caller's transaction); `positions` are their indexes in
    the request, for the names of the fields a refusal gives."""
    project_keys = {c.project for c in cards if c.project}
    projects = {p.key: p for p in Project.objects.filter(tenant=tenant, key__in=project_keys)}
    missing = sorted(project_keys - projects.keys())
    if missing:
        raise Invalid(
            "Unknown project(s).", fields={"project": [f"No project {k!r}." for k in missing]}
        )
    users = end_users_get_or_create(
        tenant=tenant, external_ids={c.user_id for c in cards if c.user_id}
    )
    existing = {
        card.external_id: card
        for card in LtmCard.objects.select_for_update().filter(
            tenant=tenant, external_id__in=[c.external_id for c in cards if c.external_id]
        )
    }
    now = timezone.now()
    results: list[tuple[LtmCard, str]] = []
    problems: dict[str, list[str]] = {}
    for index, given in zip(positions, cards, strict=True):
        values: dict[str, Any] = {name: getattr(given, name) for name in CARD_FIELDS}
        values["entities"], values["tags"] = list(given.entities), list(given.tags)
        end_user, project = users.get(given.user_id), projects.get(given.project)
        values["end_user_id"] = end_user.pk if end_user else None
        values["project_id"] = project.pk if project else None
        card = existing.get(given.external_id) if given.external_id else None
        if card is None:
            card = LtmCard(
                tenant=tenant, memory_id=new_memory_id(), external_id=given.external_id, **values
            )
            outcome = "created"
        elif all(getattr(card, k) == v for k, v in values.items()) and card.status == "active":
            results.append((card, "unchanged"))
            continue
        else:
            for name, value in values.items():
                setattr(card, name, value)
            card.status = LtmCard.Status.ACTIVE
            card.version += 1
            card.updated_at = now
            outcome = "updated"
        try:
            # The related rows were just read (or created), so their checks, a query per
            # card each, are left out.
            card.full_clean(
                exclude=["tenant", "end_user", "project"],
                validate_unique=False,
                validate_constraints=False,
            )
        except ValidationError as error:
            for name, messages in error.message_dict.items():
                problems[f"cards.{index}.{name}"] = list(messages)
        results.append((card, outcome))
    if problems:
        raise Invalid("A card is not valid.", fields=problems)
    LtmCard.objects.bulk_create(
        [card for card, outcome in results if outcome == "created"], batch_size=WRITE_BATCH
    )
    LtmCard.objects.bulk_update(
        [card for card, outcome in results if outcome == "updated"],
        [*CARD_FIELDS, "end_user", "project", "status", "version", "updated_at"],
        batch_size=WRITE_BATCH,
    )
    changed = [(card, outcome) for card, outcome in results if outcome != "unchanged"]
    LtmOutbox.objects.bulk_create(
        [LtmOutbox(card=card, version=card.version) for card, _ in changed],
        batch_size=WRITE_BATCH,
    )
    _audit_cards(tenant, changed, actor or Actor.job("import"))
    if changed:
        transaction.on_commit(outbox_drain_enqueue)
    return results


@dataclass(frozen=True)
class ImportResult:
    """What became of one imported card: written (with its outcome) or held for review."""

    outcome: str  # created | updated | unchanged | quarantined
    card: LtmCard | None = None
    quarantine: dict[str, str] | None = None


@transaction.atomic
def cards_import_screened(
    *, tenant: Tenant, cards: Sequence[CardInput], actor: Actor | None = None
) -> list[ImportResult]:
    """`cards_import` for cards from outside: a card whose text reads as an instruction to the
    model is held for review (`quarantined`, nothing of it written), the others import."""
    redacted = redacted_cards(cards, redactor=redactor_for(tenant), path="cards")
    # The patterns alone: an imported card is recalled quoted and attributed as evidence, and
    # an import of a thousand cards cannot wait for an embedding per card.
    screen = screen_for(tenant)
    held: dict[int, dict[str, str]] = {}
    for index, card in enumerate(redacted):
        finding = screen.fields(
            (
                (f"cards.{index}.title", card.title),
                (f"cards.{index}.summary", card.summary),
                (f"cards.{index}.content", card.content),
                (f"cards.{index}.entities", list(card.entities)),
                (f"cards.{index}.tags", list(card.tags)),
            )
        )
        if finding is None:
            continue
        payload = asdict(card)
        if card.occurred_at is not None:
            payload["occurred_at"] = card.occurred_at.isoformat()
        held_id = hold(
            tenant=tenant,
            path=WritePath.IMPORT,
            finding=finding,
            text="\n".join(part for part in (card.title, card.summary, card.content) if part),
            payload={"card": payload},
            source_kind="import",
            user_id=card.user_id,
        )
        held[index] = held_view(quarantine_id=held_id, finding=finding)
    passing = [index for index in range(len(redacted)) if index not in held]
    passed = [redacted[index] for index in passing]
    written = iter(
        _cards_write(tenant=tenant, cards=passed, positions=passing, actor=actor) if passed else []
    )
    results = []
    for index in range(len(redacted)):
        if index in held:
            results.append(ImportResult("quarantined", quarantine=held[index]))
        else:
            written_card, outcome = next(written)
            results.append(ImportResult(outcome, card=written_card))
    return results


def _audit_cards(tenant: Tenant, changed: Sequence[tuple[LtmCard, str]], actor: Actor) -> None:
    """One audit event per card created or updated, all appended at once."""
    audit_record_many(
        tenant=tenant,
        actor=actor,
        entries=[
            AuditEntry(
                action=Action.CREATE if outcome == "created" else Action.UPDATE,
                object_type="ltm_card",
                object_id=card.memory_id,
                after={
                    name: value.isoformat() if isinstance(value, datetime) else value
                    for name, value in ((n, getattr(card, n)) for n in CARD_FIELDS)
                },
                end_user_pk=card.end_user_id,
                details={"version": card.version},
            )
            for card, outcome in changed
        ],
    )


def redacted_cards(cards: Sequence[CardInput], *, redactor: Redactor, path: str) -> list[CardInput]:
    """The cards with their texts, entities and tags redacted (a value found in one field of
    a card in all of its fields); `Invalid` naming each field (`<path>.<index>.<field>`) that
    held nothing but sensitive content."""
    emptied: list[str] = []
    redacted = []
    for index, card in enumerate(cards):
        where = f"{path}.{index}" if path else ""
        lists = f"{where}." if where else ""

        def redact(
            redactor: Redactor,
            report: Report,
            card: CardInput = card,
            where: str = where,
            lists: str = lists,
        ) -> CardInput:
            def text(name: str, value: str) -> str:
                named = f"{where}.{name}" if where else name
                return str(redactor.value(value, path=named, report=report))

            return replace(
                card,
                title=text("title", card.title),
                summary=text("summary", card.summary),
                content=text("content", card.content),
                entities=redactor.strings(
                    card.entities, path=f"{lists}entities", report=report, context=NAMES_CONTEXT
                ),
                tags=redactor.strings(
                    card.tags, path=f"{lists}tags", report=report, context=NAMES_CONTEXT
                ),
            )

        one, report = redact_record(redactor, redact)
        redacted.append(one)
        emptied += report.emptied
    if emptied:
        raise Invalid(
            "A card holds nothing but sensitive data.",
            fields={
                name: ["Holds nothing but sensitive data (redacted), so not stored."]
                for name in emptied
            },
        )
    return redacted


@transaction.atomic
def card_merge(*, tenant: Tenant, memory_id: str, addition: CardInput) -> LtmCard:
    """Fold another card's evidence into an existing active card, as its next version."""
    [addition] = redacted_cards([addition], redactor=redactor_for(tenant), path="")
    card = LtmCard.objects.select_for_update().filter(tenant=tenant, memory_id=memory_id).first()
    if card is None or card.status != LtmCard.Status.ACTIVE:
        raise NotFound(f"No active card {memory_id!r}.")
    if addition.summary and addition.summary not in card.text:
        card.content = "\n".join(part for part in (card.content, addition.summary) if part)
    card.entities = list(dict.fromkeys([*card.entities, *addition.entities]))
    card.tags = list(dict.fromkeys([*card.tags, *addition.tags]))
    refs = {kind: list(ids) for kind, ids in (card.source_refs or {}).items()}
    for kind, ids in addition.source_refs.items():
        refs[kind] = list(dict.fromkeys([*refs.get(kind, []), *ids]))
    card.source_refs = refs
    card.confidence = max(card.confidence, addition.confidence)
    card.importance = max(card.importance, addition.importance)
    card.version += 1
    card.save()
    LtmOutbox.objects.create(card=card, version=card.version)
    transaction.on_commit(outbox_drain_enqueue)
    return card


@transaction.atomic
def card_delete(*, tenant: Tenant, memory_id: str) -> LtmCard:
    """Mark a card deleted (the ledger keeps the tombstone) and remove it from both indexes."""
    card = LtmCard.objects.select_for_update().filter(tenant=tenant, memory_id=memory_id).first()
    if card is None or card.status == LtmCard.Status.DELETED:
        raise NotFound(f"No card {memory_id!r}.")
    card.status = LtmCard.Status.DELETED
    card.version += 1
    card.save(update_fields=["status", "version", "updated_at"])
    LtmOutbox.objects.create(card=card, version=card.version)
    transaction.on_commit(outbox_drain_enqueue)
    return card


def outbox_drain_enqueue() -> None:
    """Ask a worker to drain the outbox now (after a commit that added rows to it)."""
    from memories.ltm.tasks import ltm_outbox_drain_task

    try:
        ltm_outbox_drain_task.delay()
    except Exception:  # the broker is down: the beat job drains the outbox later
        logger.warning("could not enqueue the LTM outbox drain", exc_info=True)


def card_document(card: LtmCard, vector: Sequence[float] = ()) -> CardDocument:
    """The card as both indexes store it."""
    return CardDocument(
        memory_id=card.memory_id,
        version=card.version,
        vector=list(vector),
        fields={
            **card.index_fields(),
            "bm25_text": bm25_text(" ".join([card.text, *card.entities, *card.tags])),
        },
    )


def index_cards(cards: Sequence[LtmCard], *, es_index: str | None = None) -> None:
    """Write the cards' current versions to both indexes (Milvus first), or remove deleted
    ones (Elasticsearch first): a card is searchable only once both hold it."""
    live = [c for c in cards if c.status != LtmCard.Status.DELETED]
    gone = [c for c in cards if c.status == LtmCard.Status.DELETED]
    if live:
        vectors = embedder().embed_passages([c.text for c in live])
        documents = [card_document(c, v) for c, v in zip(live, vectors.tolist(), strict=True)]
        vector_index().upsert(documents=documents)
        card_search_index().upsert(documents=documents, index=es_index)
    if gone:
        card_search_index().remove(versions={c.memory_id: c.version for c in gone})
        vector_index().remove(ids=[c.memory_id for c in gone])
    vector_index().flush()


@dataclass(frozen=True)
class DrainResult:
    indexed: int
    skipped: int
    more: bool


def outbox_drain(*, limit: int = 200) -> DrainResult:
    """Index the cards of up to `limit` outbox rows; rows are deleted once both indexes agree."""
    with transaction.atomic():
        rows = list(
            LtmOutbox.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("card__end_user", "card__project")
            .order_by("pk")[:limit]
        )
        if not rows:
            return DrainResult(indexed=0, skipped=0, more=False)
        # Every row of a card indexes that card's current version, so once per card suffices.
        cards = list({row.card_id: row.card for row in rows}.values())
        try:
            index_cards(cards)
        except StoreUnavailable as exc:
            error = str(exc)[:1000]
        else:
            error = ""
            LtmOutbox.objects.filter(pk__in=[r.pk for r in rows]).delete()
    if error:
        LtmOutbox.objects.filter(pk__in=[r.pk for r in rows]).update(
            attempts=F("attempts") + 1, last_error=error
        )
        raise StoreUnavailable(error)
    more = LtmOutbox.objects.exists()
    return DrainResult(indexed=len(cards), skipped=len(rows) - len(cards), more=more)
