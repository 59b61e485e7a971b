"""The erasure job: remove an approved deletion's data from every store, verify, and receipt it.

Steps run in a fixed order (every registered store's, `memoryproject.stores`, then the
PostgreSQL rows of record) and each records its result on the request before the next starts,
so a run stopped by a store outage resumes at the step that failed. Every step is safe to
repeat. The request is done only when verification (here for PostgreSQL, by each store's own
`verify` for the rest) finds nothing by id, by content hash or by a nearest-neighbour probe of
the erased vectors; a failed verification runs the steps again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, router, transaction
from django.db.models import Q, QuerySet
from django.db.models.deletion import Collector
from django.utils import timezone

from memories.audit.models import AuditChange
from memories.audit.services import Action, Actor, audit_record, state_sha256
from memories.ltm.models import LtmCard
from memories.quarantine.models import QuarantinedText
from memories.review.deletion import fact_row_for
from memories.review.models import DeletionRequest, PromotionRequest
from memoryproject.errors import StoreUnavailable
from memoryproject.stores import PROBE_SAMPLE, Erasure, Findings, registered, steps_of
from profiles.models import EndUser, StableFact, UserPreference
from profiles.services.profile_versions import fact_field
from transcripts.models import Session
from transcripts.services import sessions_erase

logger = logging.getLogger(__name__)

MAX_VERIFY_ROUNDS = 3

Kind = DeletionRequest.Kind
StepRun = Callable[[DeletionRequest, dict[str, Any]], dict[str, int]]


def _erasure(request: DeletionRequest, inventory: dict[str, Any]) -> Erasure:
    """The request as the stores see it, sharing its inventory (a step may add to it)."""
    return Erasure(
        request_id=request.request_id,
        tenant_id=request.tenant_id,
        kind=request.kind,
        target=request.target,
        inventory=inventory,
    )


# --- inventory: what is to be erased, noted before anything is removed ----------------------
def _inventory(request: DeletionRequest) -> dict[str, Any]:
    """The target's rows of record, then each store's notes (ids, hashes, probes)."""
    tenant_id = request.tenant_id
    if request.kind == Kind.USER:
        end_user = EndUser.objects.filter(tenant_id=tenant_id, external_id=request.target).first()
        if end_user is None:
            return {"missing": True}
        inventory: dict[str, Any] = {"end_user_pk": end_user.pk, "user_id": end_user.external_id}
    elif request.kind == Kind.CARD:
        card = LtmCard.objects.filter(tenant_id=tenant_id, memory_id=request.target).first()
        if card is None:
            return {"missing": True}
        inventory = {"end_user_pk": card.end_user_id}
    else:
        inventory = _fact_inventory(request)
    for store in registered():
        if store.inventory is not None:
            inventory |= store.inventory(_erasure(request, inventory))
    return inventory


@dataclass(frozen=True)
class InventoryLine:
    """One line of what an erasure removes, as its reviewer reads it before approving."""

    store: str
    what: str
    count: int
    at_least: bool = False  # a sample that stops at its bound: there may be more


def erasure_inventory(request: DeletionRequest) -> list[InventoryLine]:
    """What approving `request` would erase (or what its erasure noted, once it started): each
    registered store's inventory entry point, as the erasure job notes it, and the PostgreSQL
    rows its `postgres` step removes. Reads every store, so it may raise `StoreUnavailable`."""
    inventory = (request.progress or {}).get("inventory") or _inventory(request)
    if inventory.get("missing"):
        return []
    lines = [InventoryLine("postgres", what, n) for what, n in _rows_of_record(request, inventory)]
    ids = (
        ("short_term", "short-term items", "stm_item_ids", True),
        ("cards", "long-term cards (Elasticsearch, Milvus)", "card_ids", False),
        ("history", "episodic history entries", "history_entry_ids", False),
        ("transcripts", "transcript sessions", "session_pks", False),
    )
    for store, what, key, sampled in ids:
        if key in inventory:
            count = len(inventory[key])
            lines.append(InventoryLine(store, what, count, sampled and count >= PROBE_SAMPLE))
    return lines


def _rows_of_record(request: DeletionRequest, inventory: dict[str, Any]) -> list[tuple[str, int]]:
    """The PostgreSQL rows the `postgres` step removes, by kind."""
    if request.kind == Kind.USER:
        end_user = EndUser.objects.filter(pk=inventory["end_user_pk"]).first()
        if end_user is None:
            return []
        collector = Collector(using=router.db_for_write(EndUser))
        collector.collect([end_user])
        counts: dict[str, int] = {}
        for model, rows in collector.data.items():
            counts[str(model._meta.verbose_name_plural)] = len(rows)
        for queryset in collector.fast_deletes:
            name = str(queryset.model._meta.verbose_name_plural)
            counts[name] = counts.get(name, 0) + queryset.count()
        # Held texts are filed by the tenant's user id, not by a key to the row.
        counts["quarantined texts"] = QuarantinedText.objects.filter(
            tenant_id=request.tenant_id, user_id=inventory["user_id"]
        ).count()
        return [(name, n) for name, n in sorted(counts.items()) if n]
    if request.kind == Kind.CARD:
        return [("long-term card ledger rows", len(inventory.get("card_ids", [])))]
    versions = len(inventory["row_ids"])
    noun = "preference" if inventory["model"] == "UserPreference" else "stable fact"
    lines = [(f"{noun} versions of {inventory['key']}", versions)]
    values = _audit_values_of_fact(request, inventory).count()
    return [*lines, ("audit changes' values", values)] if values else lines


def _fact_inventory(request: DeletionRequest) -> dict[str, Any]:
    row = fact_row_for(tenant=request.tenant, fact_id=request.target)
    versions = list(
        type(row).objects.filter(**_fact_owner(row), key=row.key).values_list("pk", "value")
    )
    return {
        "model": type(row).__name__,
        "key": row.key,
        "end_user_pk": row.end_user_id,
        "owner": _fact_owner(row),
        "row_ids": [pk for pk, _ in versions],
        "value_hashes": [state_sha256(value) for _, value in versions],
    }


def _fact_owner(row: UserPreference | StableFact) -> dict[str, Any]:
    if isinstance(row, UserPreference):
        return {"tenant_id": row.tenant_id, "end_user_id": row.end_user_id}
    return {
        "tenant_id": row.tenant_id,
        "scope": row.scope,
        "project_id": row.project_id,
        "end_user_id": row.end_user_id,
    }


# --- steps: every registered store's, in registry order, then the rows of record -------------
def _step_postgres(request: DeletionRequest, inventory: dict[str, Any]) -> dict[str, int]:
    with transaction.atomic():
        if request.kind == Kind.USER:
            pk = inventory["end_user_pk"]
            # Locked, no session can start for the user until it is gone; one that started
            # after the transcripts step is erased here, or it would outlive its user.
            late = {"sessions": 0}
            if EndUser.objects.select_for_update().filter(pk=pk).exists():
                late = sessions_erase(
                    sessions=Session.objects.filter(end_user_id=pk, erased_at__isnull=True),
                    request_id=request.request_id,
                    erased=inventory.setdefault("session_pks", []),
                )
            PromotionRequest.objects.filter(end_user_id=pk).delete()
            # Held texts of the user, also those written before the end user existed.
            QuarantinedText.objects.filter(
                tenant_id=request.tenant_id, user_id=inventory["user_id"]
            ).delete()
            _, per_model = EndUser.objects.filter(pk=pk).delete()
            counts = {label.rsplit(".", 1)[-1].lower(): n for label, n in per_model.items() if n}
            if not late["sessions"]:
                return counts
            return counts | {f"late_{name}": n for name, n in late.items()}
        if request.kind == Kind.CARD:
            deleted, _ = LtmCard.objects.filter(
                tenant_id=request.tenant_id, memory_id__in=inventory["card_ids"]
            ).delete()
            return {"ltmcard": deleted}
        model = UserPreference if inventory["model"] == "UserPreference" else StableFact
        deleted, _ = model.objects.filter(pk__in=inventory["row_ids"]).delete()
        values, _ = _audit_values_of_fact(request, inventory).delete()
        return {model.__name__.lower(): deleted, "audit_values": values}


def _audit_values_of_fact(request: DeletionRequest, inventory: dict[str, Any]) -> QuerySet[Any]:
    """The values the audit trail kept of the erased fact's or preference's key (a user's
    go with the user's row; their events stay, naming the values' hashes only)."""
    key = inventory["key"]
    if inventory["model"] == "UserPreference":
        fields = Q(field=f"preferences.{key}")
    else:
        fields = Q(field=fact_field(key)) | Q(field__startswith=f"{fact_field(key)}@")
    return AuditChange.objects.filter(
        fields, event__tenant_id=request.tenant_id, end_user_id=inventory["end_user_pk"]
    )


def _store_step(run: Callable[[Erasure], dict[str, int]]) -> StepRun:
    return lambda request, inventory: run(_erasure(request, inventory))


class RegisteredSteps(Sequence[tuple[str, StepRun]]):
    """The steps, read from the registry when the job runs: each registered store's under its
    receipt key (`redis`, `elasticsearch`, `milvus`, `history`, `transcripts` today), then
    `postgres`, the rows of record, last of all."""

    def _steps(self) -> list[tuple[str, StepRun]]:
        stores = [(step.key, _store_step(step.run)) for step in steps_of("erase")]
        return [*stores, ("postgres", _step_postgres)]

    def __iter__(self) -> Iterator[tuple[str, StepRun]]:
        return iter(self._steps())

    def __len__(self) -> int:
        return len(self._steps())

    def __getitem__(self, index: Any) -> Any:
        return self._steps()[index]


STEPS: Sequence[tuple[str, StepRun]] = RegisteredSteps()


# --- verification ----------------------------------------------------------------------------
def _cards_with_hashes(
    tenant_id: int, hashes: Sequence[str], *, end_user_pk: int | None, ids: Sequence[str]
) -> tuple[int, int]:
    """Cards of the tenant with one of these content hashes: (of the erased owner or ids,
    of anyone else). Someone else's card with the same text is reported, not erased."""
    if not hashes:
        return 0, 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FILTER (WHERE end_user_id = %s OR memory_id = ANY(%s)), count(*)"
            " FROM memories_ltmcard WHERE tenant_id = %s AND encode(sha256(convert_to("
            "title || E'\\n' || summary || E'\\n' || content, 'UTF8')), 'hex') = ANY(%s)",
            [end_user_pk, list(ids), tenant_id, list(hashes)],
        )
        erased, everyone = cursor.fetchone()
        return int(erased), int(everyone) - int(erased)


def _verify(request: DeletionRequest, inventory: dict[str, Any]) -> dict[str, Any]:
    """What is left of the erased data: in PostgreSQL here, in each registered store by its
    own `verify`."""
    findings = Findings()
    _verify_postgres(request, inventory, findings)
    erasure = _erasure(request, inventory)
    for store in registered():
        if store.verify is not None:
            store.verify(erasure, findings)
    ok = findings.ok and not any(findings.by_id.values()) and not any(findings.by_hash.values())
    return {
        "ok": ok,
        "by_id": findings.by_id,
        "by_hash": findings.by_hash,
        # Same content held by other users (or shared): reported, not a failure of this erasure.
        "same_content_elsewhere": findings.elsewhere,
        **findings.sections,
    }


def _verify_postgres(
    request: DeletionRequest, inventory: dict[str, Any], findings: Findings
) -> None:
    """The erased cards by id and content hash, the user's rows, the fact's versions."""
    card_ids = inventory.get("card_ids", [])
    if card_ids or request.kind in (Kind.USER, Kind.CARD):
        findings.by_id["postgres_cards"] = LtmCard.objects.filter(
            tenant_id=request.tenant_id, memory_id__in=card_ids
        ).count()
        findings.by_hash["postgres_cards"], findings.elsewhere["cards"] = _cards_with_hashes(
            request.tenant_id,
            sorted(set(inventory.get("card_hashes", []))),
            end_user_pk=inventory.get("end_user_pk"),
            ids=card_ids,
        )
    if request.kind == Kind.USER:
        pk = inventory["end_user_pk"]
        findings.by_id["postgres_user"] = EndUser.objects.filter(pk=pk).count()
        findings.by_id["postgres_rows"] = (
            UserPreference.objects.filter(end_user_id=pk).count()
            + StableFact.objects.filter(end_user_id=pk).count()
            + PromotionRequest.objects.filter(end_user_id=pk).count()
            + AuditChange.objects.filter(end_user_id=pk).count()
        )
    if request.kind in (Kind.FACT, Kind.PREFERENCE):
        model = UserPreference if inventory["model"] == "UserPreference" else StableFact
        findings.by_id["postgres_rows"] = model.objects.filter(pk__in=inventory["row_ids"]).count()
        findings.by_id["postgres_audit_values"] = _audit_values_of_fact(request, inventory).count()
        remaining = model.objects.filter(**inventory["owner"], key=inventory["key"])
        erased_values = set(inventory["value_hashes"])
        findings.by_hash["postgres_values"] = sum(
            state_sha256(value) in erased_values
            for value in remaining.values_list("value", flat=True)
        )


# --- the job ----------------------------------------------------------------------------------
def _save(request: DeletionRequest, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(request, name, value)
    request.save(update_fields=[*fields, "updated_at"])


def erasure_run(*, request_id: str) -> str:
    """Run or resume an approved erasure; returns its status.

    A StoreUnavailable is recorded on the request and raised again, so the task retries.
    """
    request = DeletionRequest.objects.select_related("tenant").get(request_id=request_id)
    if request.status != DeletionRequest.Status.ERASING:
        return request.status
    progress = dict(request.progress or {})
    try:
        if "inventory" not in progress:
            progress["inventory"] = _inventory(request)
            progress["started_at"] = timezone.now().isoformat()
            _save(request, progress=progress)
        inventory = progress["inventory"]
        for _ in range(MAX_VERIFY_ROUNDS):
            steps = progress.setdefault("steps", {})
            if not inventory.get("missing"):
                for name, step in STEPS:
                    if name in steps:
                        continue
                    started = time.perf_counter()
                    steps[name] = step(request, inventory)
                    steps[name]["ms"] = round((time.perf_counter() - started) * 1000)
                    _save(request, progress=progress)
            started = time.perf_counter()
            checks = _verify(request, inventory)
            checks["ms"] = round((time.perf_counter() - started) * 1000)
            if checks["ok"]:
                return _complete(request, progress, checks)
            # Something arrived or survived: run every step again, then verify again.
            logger.warning("erasure %s verification failed: %s", request_id, checks)
            progress["failed_checks"] = checks
            progress["steps"] = {}
            _save(request, progress=progress)
    except StoreUnavailable as exc:
        _save(request, attempts=request.attempts + 1, last_error=str(exc)[:2000], progress=progress)
        raise
    _save(request, attempts=request.attempts + 1, last_error="verification kept failing")
    return "unverified"


def _complete(request: DeletionRequest, progress: dict[str, Any], checks: dict[str, Any]) -> str:
    inventory = progress["inventory"]
    completed = timezone.now()
    receipt = {
        "request_id": request.request_id,
        "tenant": request.tenant.slug,
        "kind": request.kind,
        "target": request.target,
        "approved_by": request.decided_by.get_username() if request.decided_by else None,
        "approved_at": request.decided_at.isoformat() if request.decided_at else None,
        "started_at": progress.get("started_at"),
        "completed_at": completed.isoformat(),
        "nothing_to_erase": bool(inventory.get("missing")),
        "stores": progress.get("steps", {}),
        "checks": checks,
        "card_content_sha256": inventory.get("card_hashes", []),
    }
    digest = receipt_digest(receipt)
    with transaction.atomic():
        # The probes held erased text and vectors; only counts and hashes outlive the job.
        _save(
            request,
            status=DeletionRequest.Status.DONE,
            receipt=receipt,
            receipt_sha256=digest,
            completed_at=completed,
            progress={"steps": progress.get("steps", {}), "started_at": progress.get("started_at")},
            last_error="",
        )
        audit_record(
            tenant=request.tenant_id,
            action=Action.ERASE,
            actor=Actor.job("erasure"),
            object_type=request.kind,
            object_id=(
                f"end_user:{inventory.get('end_user_pk')}"
                if request.kind == Kind.USER
                else request.target
            ),
            before={"content_sha256": inventory.get("card_hashes", [])},
            after=None,
            end_user_pk=inventory.get("end_user_pk"),
            details={"request": request.request_id, "receipt_sha256": digest},
        )
    return DeletionRequest.Status.DONE


def receipt_digest(receipt: dict[str, Any]) -> str:
    """A receipt's hash; recomputed from a stored receipt it must equal `receipt_sha256`."""
    return state_sha256(receipt)
