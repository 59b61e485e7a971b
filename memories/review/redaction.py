"""Redaction of what was stored before redaction covered it (`manage.py redact_existing`).

Every derived text in every store is read again and redacted with its tenant's redactor as a
write would be today: Layer 1 profiles, preference and fact versions, short-term items in
Redis (their index keys move with their task ids, entities and canonical keys), long-term cards
(a new version, reindexed in Elasticsearch and Milvus through the outbox), history entries
(rebuilt from the transcript where one still holds a raw value), and promotion and deletion
requests. A row whose redaction changes nothing is left alone, so a second run changes
nothing; each row changed is one audit event (`redact`) naming its fields and the kinds
removed, never the values. Work goes in bounded batches, one transaction each.

Not rewritten: the transcript (Layer 0 keeps what was said; every view of it is redacted) and
audit events (append-only and hash-chained; their admin view is redacted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import models, transaction

from memories.audit.services import Action, Actor, audit_record
from memories.history.entries import documents_for_range
from memories.history.search import history_search_index
from memories.history.services import index_documents
from memories.ltm.models import LtmCard, LtmOutbox
from memories.ltm.services import outbox_drain_enqueue
from memories.review.models import DeletionRequest, PromotionRequest
from memories.stm.items import StmItem
from memories.stm.store import stm_store
from memoryproject.redaction import (
    NAMES_CONTEXT,
    Redactor,
    Report,
    redact_record,
    redactor_for,
)
from memoryproject.redis_keys import Owner
from profiles.models import EndUser, StableFact, Tenant, UserPreference, UserProfile
from transcripts.models import Session

ACTOR = Actor.job("redact_existing")
STORES = ("profiles", "preferences", "facts", "stm", "ltm", "history", "promotions", "deletions")
# A store's progress: (store, done, total).
Progress = Callable[[str, int, int], None]


@dataclass
class StoreCount:
    checked: int = 0
    changed: int = 0
    skipped: int = 0  # changed by a writer while being redacted: the next run takes it


@dataclass
class RedactExistingResult:
    dry_run: bool
    stores: dict[str, StoreCount] = field(default_factory=dict)

    @property
    def changed(self) -> int:
        return sum(count.changed for count in self.stores.values())


class _Redactors:
    """One redactor per tenant (its patterns read once per run)."""

    def __init__(self) -> None:
        self._by_tenant: dict[int, Redactor] = {}

    def __call__(self, tenant_id: int) -> Redactor:
        if tenant_id not in self._by_tenant:
            self._by_tenant[tenant_id] = redactor_for(tenant_id)
        return self._by_tenant[tenant_id]


def redact_existing(
    *,
    tenant: Tenant | None = None,
    stores: Sequence[str] = STORES,
    batch_size: int = 200,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> RedactExistingResult:
    """Redact every stored derived text (of one tenant, or all) that still holds a value
    redaction would remove; `dry_run` counts what would change and writes nothing."""
    unknown = sorted(set(stores) - set(STORES))
    if unknown:
        raise ValueError(f"Unknown stores: {', '.join(unknown)}.")
    result = RedactExistingResult(dry_run=dry_run)
    redactors = _Redactors()
    passes: dict[str, Callable[..., StoreCount]] = {
        "profiles": _profiles,
        "preferences": _versioned(UserPreference, "preference", "pref"),
        "facts": _versioned(StableFact, "fact", "fact"),
        "stm": _stm,
        "ltm": _cards,
        "history": _history,
        "promotions": _requests(
            PromotionRequest,
            "promotion_request",
            ("proposal", "evidence", "existing", "decision_reason"),
        ),
        "deletions": _requests(DeletionRequest, "deletion_request", ("reason", "decision_reason")),
    }
    for name in STORES:
        if name not in stores:
            continue
        result.stores[name] = passes[name](
            tenant=tenant,
            redactors=redactors,
            batch_size=max(batch_size, 1),
            dry_run=dry_run,
            progress=_reporter(progress, name),
        )
    return result


def _reporter(progress: Progress | None, store: str) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(store, done, total)

    return report


# --- shared --------------------------------------------------------------------------------------
def _audit(
    *,
    tenant_id: int,
    object_type: str,
    object_id: str,
    end_user_pk: int | None,
    fields: Sequence[str],
    kinds: set[str],
    after: Any,
) -> None:
    # The state before is not hashed: a hash of a short raw value (a card number) can be
    # found by trying every candidate.
    audit_record(
        tenant=tenant_id,
        action=Action.REDACT,
        actor=ACTOR,
        object_type=object_type,
        object_id=object_id,
        after=after,
        end_user_pk=end_user_pk,
        details={"fields": sorted(fields), "kinds": sorted(kinds)},
    )


def _redacted_row(
    redactor: Redactor,
    values: dict[str, Any],
    *,
    lists: Sequence[str] = (),
    contexts: dict[str, str] | None = None,
) -> tuple[dict[str, Any], Report]:
    """The values redacted as one record; list fields lose entries that were all sensitive
    (as a write drops them)."""
    contexts = contexts or {}

    def redact(redactor: Redactor, report: Report) -> dict[str, Any]:
        out = {}
        for name, value in values.items():
            if name in lists:
                out[name] = redactor.strings(
                    value or [], path=name, report=report, context=NAMES_CONTEXT
                )
            elif value in (None, "", {}, []):
                out[name] = value
            else:
                out[name] = redactor.value(
                    value, path=name, report=report, context=contexts.get(name, "")
                )
        return out

    return redact_record(redactor, redact)


def _pages(queryset: Any, batch_size: int) -> Iterator[list[Any]]:
    """Rows by primary key in pages of `batch_size`, each page locked in its own
    transaction (the caller's `with` block)."""
    last = None
    while True:
        with transaction.atomic():
            page_query = queryset.order_by("pk")
            if last is not None:
                page_query = page_query.filter(pk__gt=last)
            page = list(page_query.select_for_update(of=("self",))[:batch_size])
            if not page:
                return
            yield page
        last = page[-1].pk
        if len(page) < batch_size:
            return


def _rewrite_rows(
    *,
    queryset: Any,
    names: Sequence[str],
    batch_size: int,
    dry_run: bool,
    progress: Callable[[int, int], None],
    redactors: _Redactors,
    tenant_of: Callable[[Any], int],
    describe: Callable[[Any], tuple[str, str, int | None]],
    lists: Sequence[str] = (),
    contexts: Callable[[Any], dict[str, str]] = lambda row: {},
    bumped: Sequence[str] = (),
    before_save: Callable[[Any], None] = lambda row: None,
    after_save: Callable[[Any], None] = lambda row: None,
) -> StoreCount:
    """Redact the named fields of every row; save and audit those that change (in the page's
    transaction, `before_save` setting the `bumped` fields and `after_save` following up)."""
    touched = [*bumped, *(["updated_at"] if _has_field(queryset.model, "updated_at") else [])]
    count, total = StoreCount(), queryset.count()
    for page in _pages(queryset, batch_size):
        for row in page:
            count.checked += 1
            values = {name: getattr(row, name) for name in names}
            redacted, report = _redacted_row(
                redactors(tenant_of(row)), values, lists=lists, contexts=contexts(row)
            )
            changed = [name for name in names if redacted[name] != values[name]]
            if not changed:
                continue
            count.changed += 1
            if dry_run:
                continue
            for name in changed:
                setattr(row, name, redacted[name])
            before_save(row)
            # save() rather than update(): Layer 1's signals refresh recall's cached blocks.
            row.save(update_fields=[*changed, *touched])
            after_save(row)
            object_type, object_id, end_user_pk = describe(row)
            _audit(
                tenant_id=tenant_of(row),
                object_type=object_type,
                object_id=object_id,
                end_user_pk=end_user_pk,
                fields=changed,
                kinds=report.kinds,
                after={name: redacted[name] for name in names},
            )
        progress(count.checked, total)
    return count


def _has_field(model: type[models.Model], name: str) -> bool:
    return any(f.name == name for f in model._meta.concrete_fields)


def _scoped(queryset: Any, tenant: Tenant | None, path: str = "tenant") -> Any:
    return queryset.filter(**{path: tenant}) if tenant is not None else queryset


# --- Layer 1 -------------------------------------------------------------------------------------
def _profiles(*, tenant: Tenant | None, **options: Any) -> StoreCount:
    return _rewrite_rows(
        queryset=_scoped(
            UserProfile.objects.select_related("end_user"), tenant, "end_user__tenant"
        ),
        names=("display_name", "answer_style", "extras"),
        tenant_of=lambda row: row.end_user.tenant_id,
        describe=lambda row: ("profile", f"end_user:{row.end_user_id}", row.end_user_id),
        **options,
    )


def _versioned(model: type[models.Model], object_type: str, prefix: str) -> Callable[..., Any]:
    """Every version of a preference or fact, current or not, in place: the version keeps its
    number (what changed is how it is stored, not what it says)."""

    def run(*, tenant: Tenant | None, **options: Any) -> StoreCount:
        return _rewrite_rows(
            queryset=_scoped(model.objects.all(), tenant),  # type: ignore[attr-defined]
            names=("value",),
            tenant_of=lambda row: row.tenant_id,
            describe=lambda row: (object_type, f"{prefix}_{row.pk}", row.end_user_id),
            contexts=lambda row: {"value": row.key},
            **options,
        )

    return run


# --- review --------------------------------------------------------------------------------------
def _requests(
    model: type[models.Model], object_type: str, names: Sequence[str]
) -> Callable[..., Any]:
    def run(*, tenant: Tenant | None, **options: Any) -> StoreCount:
        return _rewrite_rows(
            queryset=_scoped(model.objects.all(), tenant),  # type: ignore[attr-defined]
            names=names,
            tenant_of=lambda row: row.tenant_id,
            describe=lambda row: (object_type, row.request_id, getattr(row, "end_user_id", None)),
            **options,
        )

    return run


# --- Layer 3 -------------------------------------------------------------------------------------
def _cards(*, tenant: Tenant | None, **options: Any) -> StoreCount:
    """Cards as a new version each, with its outbox row: the drain reindexes a live card in
    Elasticsearch and Milvus (a deleted one is only removed from them again)."""

    def bump(card: LtmCard) -> None:
        card.version += 1

    def queue(card: LtmCard) -> None:
        LtmOutbox.objects.create(card=card, version=card.version)
        transaction.on_commit(outbox_drain_enqueue)

    return _rewrite_rows(
        queryset=_scoped(LtmCard.objects.all(), tenant),
        names=("title", "summary", "content", "entities", "tags"),
        lists=("entities", "tags"),
        tenant_of=lambda card: card.tenant_id,
        describe=lambda card: ("ltm_card", card.memory_id, card.end_user_id),
        bumped=("version",),
        before_save=bump,
        after_save=queue,
        **options,
    )


# --- Layer 2 -------------------------------------------------------------------------------------
STM_FIELDS = (
    "summary",
    "detail",
    "entities",
    "tags",
    "task_id",
    "subtype",
    "canonical_fact_key",
    "fact_value",
)


def _stm_redacted(item: StmItem, redactor: Redactor) -> tuple[StmItem, list[str], Report]:
    values = {name: getattr(item, name) for name in STM_FIELDS}
    redacted, report = _redacted_row(
        redactor,
        values,
        lists=("entities", "tags"),
        contexts={"fact_value": item.canonical_fact_key},
    )
    changed = [name for name in STM_FIELDS if redacted[name] != values[name]]
    return replace(item, **redacted), changed, report


def _stm(
    *,
    tenant: Tenant | None,
    redactors: _Redactors,
    batch_size: int,
    dry_run: bool,
    progress: Callable[[int, int], None],
) -> StoreCount:
    """Every item of every user (live or superseded, until swept), a page at a time."""
    store, count = stm_store(), StoreCount()
    owners: list[Owner] = []
    cursor = None
    while cursor != 0:
        cursor, page = store.owners_page(cursor=cursor or 0, count=batch_size)
        owners += _known(o for o in page if tenant is None or o.tenant_id == tenant.pk)
    for done, owner in enumerate(dict.fromkeys(owners), start=1):
        redactor = redactors(owner.tenant_id)
        item_cursor = None
        while item_cursor != 0:
            item_cursor, ids = store.item_ids_page(
                owner=owner, cursor=item_cursor or 0, count=batch_size
            )
            for item in store.get_many(owner=owner, item_ids=ids):
                count.checked += 1
                redacted, changed, report = _stm_redacted(item, redactor)
                if not changed:
                    continue
                if dry_run:
                    count.changed += 1
                    continue
                with transaction.atomic():
                    _audit(
                        tenant_id=owner.tenant_id,
                        object_type="stm_item",
                        object_id=item.id,
                        end_user_pk=owner.end_user_id,
                        fields=changed,
                        kinds=report.kinds,
                        after={name: getattr(redacted, name) for name in STM_FIELDS},
                    )
                    outcome = store.rewrite_text(item=redacted, read_version=item.version)
                    if outcome != "rewritten":  # merged or gone meanwhile: nothing to record
                        transaction.set_rollback(True)
                if outcome == "rewritten":
                    count.changed += 1
                elif outcome == "changed":
                    count.skipped += 1
        progress(done, len(owners))
    return count


def _known(owners: Iterable[Owner]) -> list[Owner]:
    """The owners whose end user still exists (a purged tenant's keys may linger a while)."""
    wanted = list(owners)
    existing = set(
        EndUser.objects.filter(pk__in=[o.end_user_id for o in wanted]).values_list(
            "pk", "tenant_id"
        )
    )
    return [o for o in wanted if (o.end_user_id, o.tenant_id) in existing]


# --- history -------------------------------------------------------------------------------------
def _history(
    *,
    tenant: Tenant | None,
    redactors: _Redactors,
    batch_size: int,
    dry_run: bool,
    progress: Callable[[int, int], None],
) -> StoreCount:
    """Entries that still hold a raw value are rebuilt from their session's transcript (as
    indexing does today, the tenant's redaction applied), and written where they differ."""
    index, count = history_search_index(), StoreCount()
    tenants = [tenant] if tenant is not None else list(Tenant.objects.order_by("pk"))
    for done, each in enumerate(tenants, start=1):
        redactor = redactors(each.pk)
        stored: dict[str, tuple[str, str]] = {}
        flagged: set[int] = set()
        for entry_id, session_pk, text, context in index.texts(tenant_id=str(each.pk)):
            count.checked += 1
            if redactor.text(text).text != text or redactor.text(context).text != context:
                flagged.add(session_pk)
                stored[entry_id] = (text, context)
        sessions = Session.objects.filter(pk__in=flagged, erased_at__isnull=True)
        for session in sessions.select_related("tenant", "end_user").order_by("pk"):
            documents = [
                document
                for document in documents_for_range(
                    session=session, first_seq=1, last_seq=session.event_count, redactor=redactor
                )
                if document.entry_id in stored
                and (document.text, document.context) != stored[document.entry_id]
            ]
            if not documents:
                continue
            count.changed += len(documents)
            if dry_run:
                continue
            for start in range(0, len(documents), batch_size):
                chunk = documents[start : start + batch_size]
                with transaction.atomic():
                    _audit(
                        tenant_id=each.pk,
                        object_type="history_entries",
                        object_id=f"session:{session.pk}",
                        end_user_pk=session.end_user_id,
                        fields=["text", "context"],
                        kinds=set().union(
                            *(redactor.text(stored[d.entry_id][0]).kinds for d in chunk)
                        ),
                        after=[d.entry_id for d in chunk],
                    )
                    index_documents(chunk)
        progress(done, len(tenants))
    return count
