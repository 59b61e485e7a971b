"""Erasure of one end user holding 10,000 short-term items and 1,000 long-term cards.

Loads the user into every store through the service's own code (short-term items through the
Redis store, cards through the ledger and outbox into Elasticsearch and Milvus, transcript
events through the append service, a profile with preferences), plus a second user whose data
must survive. Then approves a right-to-erasure request and times the erasure job, step by
step, with its verification. Runs under prefixes of its own and removes everything afterwards.

    .venv/bin/python benchmarks/erasure.py            # --items 10000 --cards 1000 --events 2000
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from _setup import clear_prefix_keys, django_setup, locomo_turns

RUN = uuid.uuid4().hex[:8]
STORAGE = Path(tempfile.gettempdir()) / f"bench-erasure-{RUN}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--cards", type=int, default=1_000)
    parser.add_argument("--events", type=int, default=2_000)
    args = parser.parse_args()
    django_setup(
        migrate=True,
        ELASTICSEARCH_INDEX_PREFIX=f"bench-erasure-{RUN}",
        MILVUS_COLLECTION_PREFIX=f"bench_erasure_{RUN}",
        REDIS_KEY_PREFIX=f"bench-erasure-{RUN}",
        TRANSCRIPT_STORAGE=str(STORAGE),
    )
    from django.contrib.auth import get_user_model

    from memories.ltm.search import card_search_index
    from memories.ltm.vectors import vector_index
    from memories.services import stores_ensure
    from profiles.services.tenants import tenant_create, tenant_delete

    stores_ensure()
    tenant = tenant_create(slug=f"bench-erasure-{RUN}", name="erasure")
    reviewer = get_user_model().objects.create(username=f"bench-erasure-{RUN}", is_staff=True)
    try:
        load(tenant, args)
        erase(tenant, reviewer)
    finally:
        tenant_delete(tenant=tenant)
        reviewer.delete()
        card_search_index().drop()
        vector_index().drop()
        clear_prefix_keys()
        shutil.rmtree(STORAGE, ignore_errors=True)


def load(tenant, args: argparse.Namespace) -> None:  # type: ignore[no-untyped-def]
    from memories.ltm.services import CardInput, cards_import, outbox_drain
    from memories.stm.items import StmItem
    from memories.stm.store import now_seconds, stm_store
    from memoryproject.redis_keys import Owner
    from profiles.services.profile_patch import ProfilePatch, profile_update
    from transcripts.services import EventIn, events_append

    turns = [t["content"] for t in locomo_turns()]
    for user in ("u_erase", "u_keep"):
        profile_update(
            tenant=tenant,
            external_id=user,
            patch=ProfilePatch(
                profile={"display_name": user, "language": "en"},
                preferences=[{"key": "preference.answer_style", "value": "brief_first"}],
            ),
        )
    started = time.perf_counter()
    for user, count in (("u_erase", args.events), ("u_keep", 100)):
        for start in range(0, count, 100):
            events_append(
                tenant=tenant,
                session_id=f"{user}-s{start // 1000}",
                user_id=user,
                events=[
                    EventIn(role="user" if i % 2 else "assistant", content=turns[i % len(turns)])
                    for i in range(start, min(start + 100, count))
                ],
            )
    print(f"transcripts: {args.events} events appended in {time.perf_counter() - started:.1f}s")

    from profiles.models import EndUser

    store, now = stm_store(), now_seconds()
    started = time.perf_counter()
    for user, count in (("u_erase", args.items), ("u_keep", 100)):
        end_user = EndUser.objects.get(tenant=tenant, external_id=user)
        owner = Owner(tenant.pk, end_user.pk)
        items = [
            StmItem(
                id=f"stm_{end_user.pk}_{n:06d}",
                tenant_id=owner.tenant_id,
                end_user_id=owner.end_user_id,
                user_id=user,
                session_id=f"{user}-s{n % 10}",
                task_id=f"task-{n % 50}",
                memory_type="fact",
                summary=turns[n % len(turns)][:300],
                fingerprint=f"fp{n}",
                fingerprints=[f"fp{n}"],
                entities=[f"entity-{n % 200}", f"topic-{n % 37}"],
                sessions=[f"{user}-s{n % 10}"],
                canonical_fact_key=f"task-{n % 50}:k{n}",
                created_at=now,
                updated_at=now + n * 1e-4,
                last_access_at=now,
                expires_at=now + 7 * 86400,
            )
            for n in range(count)
        ]
        for start in range(0, count, 20):
            store.upsert(items=items[start : start + 20], now=now)
    print(f"short-term: {args.items} items loaded in {time.perf_counter() - started:.1f}s")

    started = time.perf_counter()
    for user, count in (("u_erase", args.cards), ("u_keep", 20)):
        for start in range(0, count, 250):
            cards_import(
                tenant=tenant,
                cards=[
                    CardInput(
                        memory_type="episodic_case",
                        summary=f"{turns[(n * 7) % len(turns)]} (case {n})",
                        user_id=user,
                        entities=[f"entity-{n % 200}"],
                    )
                    for n in range(start, min(start + 250, count))
                ],
            )
    while outbox_drain(limit=250).more:
        pass
    print(f"long-term: {args.cards} cards indexed in {time.perf_counter() - started:.1f}s")


def erase(tenant, reviewer) -> None:  # type: ignore[no-untyped-def]
    from memories.audit.services import Actor, audit_verify
    from memories.ltm.search import card_search_index
    from memories.review.deletion import deletion_approve, deletion_request
    from memories.review.erasure import erasure_run, receipt_digest
    from memories.review.models import DeletionRequest
    from profiles.models import EndUser

    request, _ = deletion_request(
        tenant=tenant, kind="user", target="u_erase", actor=Actor.job("benchmark")
    )
    deletion_approve(request=request, reviewer=reviewer)
    started = time.perf_counter()
    status = erasure_run(request_id=request.request_id)
    elapsed = time.perf_counter() - started
    request = DeletionRequest.objects.get(pk=request.pk)
    receipt = request.receipt
    print(f"\nerasure: {status} in {elapsed:.1f}s")
    for name, counts in receipt["stores"].items():
        shown = ", ".join(f"{k} {v}" for k, v in counts.items() if k != "ms")
        print(f"  {name:<14} {counts['ms'] / 1000:6.1f}s  {shown}")
    checks = receipt["checks"]
    print(f"  {'verification':<14} {checks['ms'] / 1000:6.1f}s  ok={checks['ok']}")
    print(f"  by id:   {checks['by_id']}")
    print(f"  by hash: {checks['by_hash']}")
    print(f"  vector:  {checks['by_vector']}")
    print(f"  receipt hash matches: {receipt_digest(receipt) == request.receipt_sha256}")
    keep = EndUser.objects.get(tenant=tenant, external_id="u_keep")
    kept = card_search_index().ids_where(tenant_id=str(tenant.pk), user_id=keep.external_id)
    print(f"  the other user's cards still found: {len(kept)} of 20")
    print(f"  audit chain verifies: {audit_verify(tenant=tenant).ok}")


if __name__ == "__main__":
    main()
