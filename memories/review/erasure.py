"""The erasure job: remove an approved deletion's data from every store, verify, and receipt it.

Steps run in a fixed order and each records its result on the request before the next starts,
so a run stopped by a store outage resumes at the step that failed. Every step is safe to
repeat. The request is done only when verification finds nothing by id, by content hash or
by a nearest-neighbour probe of the erased vectors; a failed verification runs the steps again.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from memories.audit.services import Action, Actor, audit_record, state_sha256
from memories.history.search import history_search_index
from memories.history.services import history_erase_user
from memories.history.vectors import history_vector_index
from memories.ltm.models import LtmCard
from memories.ltm.scope import Scope
from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memories.quarantine.models import QuarantinedText
from memories.recall.cache import context_cache
from memories.review.deletion import fact_row_for
from memories.review.models import DeletionRequest, PromotionRequest
from memories.stm.store import stm_store
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_keys import Owner
from profiles.models import EndUser, StableFact, UserPreference
from transcripts.models import EventRef, Segment, Session
from transcripts.segments import decode_segment, event_digest
from transcripts.selectors import transcript_verify
from transcripts.services import session_erase
from transcripts.storage import segment_read, transcript_storage

logger = logging.getLogger(__name__)

# A deleted vector's nearest neighbour at least this close counts as the same memory.
VECTOR_PROBE_THRESHOLD = 0.97
PROBE_SAMPLE = 50  # vectors and texts kept (during the job only) to probe with
MAX_VERIFY_ROUNDS = 3
STATUSES = ("active", "archived")

Kind = DeletionRequest.Kind


def content_sha256(*, title: str, summary: str, content: str) -> str:
    """The content hash of a card, as PostgreSQL computes it in `_cards_with_hashes`."""
    return hashlib.sha256("\n".join((title, summary, content)).encode()).hexdigest()


def _encode_vector(vector: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode()


def _decode_vector(text: str) -> list[float]:
    return np.frombuffer(base64.b64decode(text), dtype=np.float32).tolist()


# --- inventory: what is to be erased, noted before anything is removed ----------------------
def _card_probes(cards: Sequence[LtmCard]) -> dict[str, Any]:
    sample = list(cards[:PROBE_SAMPLE])
    vectors = vector_index().vectors_of(ids=[c.memory_id for c in sample])
    return {
        "card_ids": [c.memory_id for c in cards],
        "card_hashes": [
            content_sha256(title=c.title, summary=c.summary, content=c.content) for c in cards
        ],
        "probe_texts": [c.text for c in sample],
        "probe_vectors": {memory_id: _encode_vector(v) for memory_id, v in vectors.items()},
    }


def _inventory(request: DeletionRequest) -> dict[str, Any]:
    tenant_id = request.tenant_id
    if request.kind == Kind.USER:
        end_user = EndUser.objects.filter(tenant_id=tenant_id, external_id=request.target).first()
        if end_user is None:
            return {"missing": True}
        cards = list(LtmCard.objects.filter(tenant_id=tenant_id, end_user=end_user))
        sessions = list(Session.objects.filter(end_user=end_user).values_list("pk", flat=True))
        digests = list(
            EventRef.objects.filter(session_id__in=sessions).values_list("digest", flat=True)[
                :PROBE_SAMPLE
            ]
        )
        owner = Owner(tenant_id, end_user.pk)
        stm_ids = [item.id for item in stm_store().items_of(owner=owner, limit=PROBE_SAMPLE)]
        history_ids = history_search_index().ids_where(
            tenant_id=str(tenant_id), user_id=end_user.external_id
        )
        return {
            "end_user_pk": end_user.pk,
            "user_id": end_user.external_id,
            "session_pks": sessions,
            "history_entry_ids": history_ids,
            "event_digests": digests,
            "stm_item_ids": stm_ids,
            **_card_probes(cards),
        }
    if request.kind == Kind.CARD:
        card = LtmCard.objects.filter(tenant_id=tenant_id, memory_id=request.target).first()
        if card is None:
            return {"missing": True}
        return {"end_user_pk": card.end_user_id, **_card_probes([card])}
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


# --- steps ---------------------------------------------------------------------------------
def _owner(request: DeletionRequest, inventory: dict[str, Any]) -> Owner | None:
    pk = inventory.get("end_user_pk")
    return Owner(request.tenant_id, pk) if pk else None


def _step_redis(request: DeletionRequest, inventory: dict[str, Any]) -> dict[str, int]:
    owner = _owner(request, inventory)
    if owner is None:
        return {"keys": 0}
    store = stm_store()
    if request.kind == Kind.USER:
        removed = store.erase_owner(owner=owner)
        cached = context_cache().forget_user(
            tenant_id=request.tenant_id, user_id=inventory["user_id"]
        )
        return {"keys": removed, "cache_keys": cached}
    if request.kind in (Kind.FACT, Kind.PREFERENCE):
        found = store.lookup(owner=owner, fingerprint="", canonical_fact_key=inventory["key"])
        item_id = found.get("canonical")
        deleted = store.delete(owner=owner, item_id=item_id) if item_id else False
        return {"items": int(deleted)}
    return {"keys": 0}


def _step_elasticsearch(request: DeletionRequest, inventory: dict[str, Any]) -> dict[str, int]:
    index = card_search_index()
    deleted = index.remove_ids(ids=inventory.get("card_ids", []))
    if request.kind == Kind.USER:
        deleted += index.remove_user(tenant_id=str(request.tenant_id), user_id=inventory["user_id"])
    return {"documents": deleted}


def _step_milvus(request: DeletionRequest, inventory: dict[str, Any]) -> dict[str, int]:
    vectors = vector_index()
    ids = inventory.get("card_ids", [])
    held = vectors.ids_where(tenant_id=str(request.tenant_id), ids=ids)
    vectors.remove(ids=held)
    deleted = len(held)
    if request.kind == Kind.USER:
        deleted += vectors.remove_user(
            tenant_id=str(request.tenant_id), user_id=inventory["user_id"]
        )
    vectors.flush()
    return {"vectors": deleted}


def _step_history(request: DeletionRequest, inventory: dict[str, Any]) -> dict[str, int]:
    """The user's episodic history entries, from Elasticsearch and Milvus."""
    if request.kind != Kind.USER:
        return {"documents": 0, "vectors": 0}
    ids = inventory.get("history_entry_ids", [])
    removed = history_erase_user(tenant_id=request.tenant_id, user_id=inventory["user_id"])
    # By id too: an entry written under the user's id is gone whatever its fields say.
    history_search_index().remove_ids(ids=ids)
    history_vector_index().remove_ids(ids=ids)
    return {"documents": removed["history_documents"], "vectors": removed["history_vectors"]}


def _step_transcripts(request: DeletionRequest, inventory: dict[str, Any]) -> dict[str, int]:
    counts = {"sessions": 0, "segments": 0, "events": 0}
    if request.kind != Kind.USER:
        return counts  # a card, fact or preference is erased, not the user's conversations
    # Sessions started since the inventory are the user's too.
    sessions = Session.objects.filter(
        Q(pk__in=inventory.get("session_pks", [])) | Q(end_user_id=inventory.get("end_user_pk"))
    )
    _erase_sessions(request, inventory, sessions, counts)
    return counts


def _erase_sessions(
    request: DeletionRequest, inventory: dict[str, Any], sessions: Any, counts: dict[str, int]
) -> None:
    known = inventory.setdefault("session_pks", [])
    for session in sessions:
        erased = session_erase(session=session, request_id=request.request_id)
        counts["sessions"] = counts.get("sessions", 0) + 1
        counts["segments"] = counts.get("segments", 0) + erased["segments"]
        counts["events"] = counts.get("events", 0) + erased["events"]
        if session.pk not in known:
            known.append(session.pk)


def _step_postgres(request: DeletionRequest, inventory: dict[str, Any]) -> dict[str, int]:
    with transaction.atomic():
        if request.kind == Kind.USER:
            pk = inventory["end_user_pk"]
            # Locked, no session can start for the user until it is gone; one that started
            # after the transcripts step is erased here, or it would outlive its user.
            late: dict[str, int] = {}
            if EndUser.objects.select_for_update().filter(pk=pk).exists():
                _erase_sessions(
                    request,
                    inventory,
                    Session.objects.filter(end_user_id=pk, erased_at__isnull=True),
                    late,
                )
            PromotionRequest.objects.filter(end_user_id=pk).delete()
            # Held texts of the user, also those written before the end user existed.
            QuarantinedText.objects.filter(
                tenant_id=request.tenant_id, user_id=inventory["user_id"]
            ).delete()
            _, per_model = EndUser.objects.filter(pk=pk).delete()
            counts = {label.rsplit(".", 1)[-1].lower(): n for label, n in per_model.items() if n}
            return counts | {f"late_{name}": n for name, n in late.items()} if late else counts
        if request.kind == Kind.CARD:
            deleted, _ = LtmCard.objects.filter(
                tenant_id=request.tenant_id, memory_id__in=inventory["card_ids"]
            ).delete()
            return {"ltmcard": deleted}
        model = UserPreference if inventory["model"] == "UserPreference" else StableFact
        deleted, _ = model.objects.filter(pk__in=inventory["row_ids"]).delete()
        return {model.__name__.lower(): deleted}


STEPS: tuple[tuple[str, Callable[[DeletionRequest, dict[str, Any]], dict[str, int]]], ...] = (
    ("redis", _step_redis),
    ("elasticsearch", _step_elasticsearch),
    ("milvus", _step_milvus),
    ("history", _step_history),
    ("transcripts", _step_transcripts),
    ("postgres", _step_postgres),
)


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


def _stored_event_digests(session_pks: Sequence[int]) -> set[str]:
    """Digests of every event still readable in these sessions' transcript objects."""
    digests = set()
    for segment in Segment.objects.filter(session_id__in=session_pks):
        try:
            _, events = decode_segment(segment_read(name=segment.path))
        except (FileNotFoundError, ValueError):
            continue
        for event in events:
            digests.add(
                event_digest(
                    role=event.get("role", ""),
                    content=event.get("content", ""),
                    tool_call_id=event.get("tool_call_id", ""),
                    metadata=event.get("metadata", {}),
                )
            )
    return digests


def _verify(request: DeletionRequest, inventory: dict[str, Any]) -> dict[str, Any]:
    by_id: dict[str, int] = {}
    by_hash: dict[str, int] = {}
    # Same content held by other users (or shared): reported, not a failure of this erasure.
    elsewhere: dict[str, int] = {}
    if inventory.get("card_ids", []) or request.kind in (Kind.USER, Kind.CARD):
        _verify_cards(request, inventory, by_id, by_hash, elsewhere)
    if request.kind == Kind.USER:
        _verify_user(request, inventory, by_id, by_hash, elsewhere)
    if request.kind in (Kind.FACT, Kind.PREFERENCE):
        _verify_fact(request, inventory, by_id, by_hash)
    vector_check = _vector_probe(request, inventory)
    transcripts = _transcript_check(inventory)
    ok = (
        not any(by_id.values())
        and not any(by_hash.values())
        and vector_check["hits_of_erased"] == 0
        and transcripts["ok"]
    )
    return {
        "ok": ok,
        "by_id": by_id,
        "by_hash": by_hash,
        "same_content_elsewhere": elsewhere,
        "by_vector": vector_check,
        "transcripts": transcripts,
    }


def _verify_cards(
    request: DeletionRequest,
    inventory: dict[str, Any],
    by_id: dict[str, int],
    by_hash: dict[str, int],
    elsewhere: dict[str, int],
) -> None:
    """The erased cards, by id and by content, in PostgreSQL, Elasticsearch and Milvus."""
    tenant_id = str(request.tenant_id)
    card_ids = inventory.get("card_ids", [])
    hashes = set(inventory.get("card_hashes", []))
    search, vectors = card_search_index(), vector_index()
    by_id["postgres_cards"] = LtmCard.objects.filter(
        tenant_id=request.tenant_id, memory_id__in=card_ids
    ).count()
    by_id["elasticsearch"] = len(search.ids_where(tenant_id=tenant_id, ids=card_ids))
    by_id["milvus"] = len(vectors.ids_where(tenant_id=tenant_id, ids=card_ids))
    erased_user = inventory.get("user_id", "\x00")
    by_hash["postgres_cards"], elsewhere["cards"] = _cards_with_hashes(
        request.tenant_id,
        sorted(hashes),
        end_user_pk=inventory.get("end_user_pk"),
        ids=card_ids,
    )
    lexical = lexical_elsewhere = 0
    for text in inventory.get("probe_texts", []):
        found = search.matching_texts(tenant_id=tenant_id, text=text[:2000])
        for memory_id, doc in found.items():
            content = content_sha256(
                title=doc.get("title", ""),
                summary=doc.get("summary", ""),
                content=doc.get("content", ""),
            )
            if content not in hashes:
                continue
            if memory_id in card_ids or doc.get("user_id") == erased_user:
                lexical += 1
            else:
                lexical_elsewhere += 1
    by_hash["elasticsearch"] = lexical
    elsewhere["elasticsearch"] = lexical_elsewhere


def _verify_user(
    request: DeletionRequest,
    inventory: dict[str, Any],
    by_id: dict[str, int],
    by_hash: dict[str, int],
    elsewhere: dict[str, int],
) -> None:
    """The erased user's rows, index entries, Redis keys and transcript events."""
    tenant_id = str(request.tenant_id)
    search, vectors = card_search_index(), vector_index()
    user_id, pk = inventory["user_id"], inventory["end_user_pk"]
    owner = Owner(request.tenant_id, pk)
    by_id["postgres_user"] = EndUser.objects.filter(pk=pk).count()
    by_id["postgres_rows"] = (
        UserPreference.objects.filter(end_user_id=pk).count()
        + StableFact.objects.filter(end_user_id=pk).count()
        + PromotionRequest.objects.filter(end_user_id=pk).count()
    )
    by_id["elasticsearch_user"] = len(search.ids_where(tenant_id=tenant_id, user_id=user_id))
    by_id["milvus_user"] = len(vectors.ids_where(tenant_id=tenant_id, user_id=user_id))
    history_ids = inventory.get("history_entry_ids", [])
    for name, index in (
        ("history_elasticsearch", history_search_index()),
        ("history_milvus", history_vector_index()),
    ):
        held = set(index.ids_where(tenant_id=tenant_id, user_id=user_id))
        if history_ids:
            held |= set(index.ids_where(tenant_id=tenant_id, ids=history_ids))
        by_id[name] = len(held)
    by_id["redis_keys"] = len(stm_store().owner_keys(owner))
    by_id["redis_items"] = len(
        stm_store().get_many(owner=owner, item_ids=inventory.get("stm_item_ids", []))
    )
    by_id["event_refs"] = EventRef.objects.filter(
        session_id__in=inventory.get("session_pks", [])
    ).count()
    digests = set(inventory.get("event_digests", []))
    by_hash["transcript_events"] = len(
        digests & _stored_event_digests(inventory.get("session_pks", []))
    )
    elsewhere["transcript_events"] = EventRef.objects.filter(
        session__tenant_id=request.tenant_id, digest__in=digests
    ).count()


def _verify_fact(
    request: DeletionRequest,
    inventory: dict[str, Any],
    by_id: dict[str, int],
    by_hash: dict[str, int],
) -> None:
    """The erased fact's or preference's versions, its value elsewhere, its Redis pointer."""
    model = UserPreference if inventory["model"] == "UserPreference" else StableFact
    by_id["postgres_rows"] = model.objects.filter(pk__in=inventory["row_ids"]).count()
    remaining = model.objects.filter(**inventory["owner"], key=inventory["key"])
    erased_values = set(inventory["value_hashes"])
    by_hash["postgres_values"] = sum(
        state_sha256(value) in erased_values for value in remaining.values_list("value", flat=True)
    )
    fact_owner = _owner(request, inventory)
    if fact_owner is not None:
        pointers = stm_store().lookup(
            owner=fact_owner, fingerprint="", canonical_fact_key=inventory["key"]
        )
        by_id["redis_items"] = int("canonical" in pointers)


def _vector_probe(request: DeletionRequest, inventory: dict[str, Any]) -> dict[str, Any]:
    erased = set(inventory.get("card_ids", []))
    scope = Scope(tenant_id=str(request.tenant_id), statuses=STATUSES)
    hits_of_erased = similar_elsewhere = 0
    probes = inventory.get("probe_vectors", {})
    for encoded in probes.values():
        for hit in vector_index().nearest(vector=_decode_vector(encoded), scope=scope, limit=3):
            if hit.score < VECTOR_PROBE_THRESHOLD:
                continue
            if hit.memory_id in erased:
                hits_of_erased += 1
            else:
                similar_elsewhere += 1
    return {
        "probes": len(probes),
        "threshold": VECTOR_PROBE_THRESHOLD,
        "hits_of_erased": hits_of_erased,
        "similar_cards_of_others": similar_elsewhere,
    }


def _transcript_check(inventory: dict[str, Any]) -> dict[str, Any]:
    sessions = list(Session.objects.filter(pk__in=inventory.get("session_pks", [])))
    storage = transcript_storage()
    live_segments = Segment.objects.filter(session__in=sessions, tombstone_sha256="").count()
    reports = [transcript_verify(session=s) for s in sessions]
    objects_left = 0
    for segment in Segment.objects.filter(session__in=sessions):
        original = f"{segment.path.removesuffix('-erased.jsonl')}.jsonl"
        objects_left += original != segment.path and storage.exists(original)
    return {
        "ok": live_segments == 0 and objects_left == 0 and all(r.ok for r in reports),
        "sessions": len(sessions),
        "segments_not_tombstoned": live_segments,
        "erased_objects_left": objects_left,
        "chains_verified": sum(r.ok for r in reports),
    }


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
