"""The hourly promotion scan over a large short-term memory.

Loads short-term items for many users (default 100,000 items over 1,000 users) through the
Redis store, of which a small share meets the promotion triggers: keyed preferences (profile
facts) and items seen in several sessions (cards, whose proposals look up the nearest cards,
one query embedding each). Then runs the scan page by page, as the beat job does, and prints
items examined per second and proposals made; a second scan checks nothing is proposed twice.
Runs under prefixes of its own and removes everything afterwards.

    .venv/bin/python benchmarks/promotion_scan.py     # --items 100000 --users 1000 --qualify 200
"""

from __future__ import annotations

import argparse
import time
import uuid

from _setup import clear_prefix_keys, django_setup, locomo_turns

RUN = uuid.uuid4().hex[:8]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--qualify", type=int, default=200, help="items meeting the triggers")
    args = parser.parse_args()
    django_setup(
        migrate=True,
        ELASTICSEARCH_INDEX_PREFIX=f"bench-promo-{RUN}",
        MILVUS_COLLECTION_PREFIX=f"bench_promo_{RUN}",
        REDIS_KEY_PREFIX=f"bench-promo-{RUN}",
    )
    from memories.ltm.search import card_search_index
    from memories.ltm.vectors import vector_index
    from memories.review.models import PromotionRequest
    from memories.review.promotion_scan import promotion_scan
    from memories.services import stores_ensure
    from profiles.services.tenants import tenant_create, tenant_delete

    stores_ensure()
    tenant = tenant_create(slug=f"bench-promo-{RUN}", name="promotion scan")
    try:
        load(tenant, args)
        for label in ("first scan", "second scan"):
            started, cursor, examined, proposed, pages = time.perf_counter(), 0, 0, 0, 0
            while True:
                result = promotion_scan(cursor=cursor, owners=200, tenant=tenant)
                examined, proposed, pages = (
                    examined + result.examined,
                    proposed + result.proposed,
                    pages + 1,
                )
                cursor = result.next_cursor
                if not cursor:
                    break
            elapsed = time.perf_counter() - started
            print(
                f"{label}: {examined} items of {args.users} users in {elapsed:.1f}s "
                f"({examined / elapsed:,.0f} items/s, {pages} pages), proposed {proposed}"
            )
        paths = PromotionRequest.objects.filter(tenant=tenant).values_list("path", flat=True)
        print(f"proposals by path: A {list(paths).count('postgres')}, B {list(paths).count('ltm')}")
    finally:
        tenant_delete(tenant=tenant)
        card_search_index().drop()
        vector_index().drop()
        clear_prefix_keys()


def load(tenant, args: argparse.Namespace) -> None:  # type: ignore[no-untyped-def]
    from memories.stm.items import StmItem
    from memories.stm.store import now_seconds, stm_store
    from memoryproject.redis_keys import Owner
    from profiles.models import EndUser

    turns = [t["content"] for t in locomo_turns()]
    users = EndUser.objects.bulk_create(
        EndUser(tenant=tenant, external_id=f"u_{n}") for n in range(args.users)
    )
    store, now = stm_store(), now_seconds()
    per_user = args.items // args.users
    every = max(1, args.items // max(1, args.qualify))
    started = time.perf_counter()
    for u, end_user in enumerate(users):
        owner = Owner(tenant.pk, end_user.pk)
        items = []
        for k in range(per_user):
            n = u * per_user + k
            qualifies = n % every == 0
            keyed = qualifies and (n // every) % 2 == 0
            items.append(
                StmItem(
                    id=f"stm_{end_user.pk}_{k:05d}",
                    tenant_id=owner.tenant_id,
                    end_user_id=owner.end_user_id,
                    user_id=end_user.external_id,
                    session_id=f"s{k % 7}",
                    task_id="" if qualifies else f"task-{k % 9}",
                    memory_type="preference" if keyed else "fact",
                    summary=turns[n % len(turns)][:200],
                    fingerprint=f"fp{n}",
                    fingerprints=[f"fp{n}"],
                    sessions=[f"s{k % 7}", f"s{(k + 1) % 7}"] if qualifies else [f"s{k % 7}"],
                    canonical_fact_key="preference.answer_style" if keyed else "",
                    fact_value=f"style-{n}" if keyed else "",
                    confidence=0.9,
                    importance=0.6,
                    hit_count=1,
                    created_at=now - 3 * 86400,
                    updated_at=now - 3600 + k * 1e-3,
                    last_access_at=now,
                    expires_at=now + 7 * 86400,
                )
            )
        for start in range(0, len(items), 50):
            store.upsert(items=items[start : start + 50], now=now)
    print(
        f"loaded {args.items} items of {args.users} users in {time.perf_counter() - started:.0f}s"
    )


if __name__ == "__main__":
    main()
