"""Long-term search latency with filters at 10k and 100k cards, per store, and the HNSW `ef`
that production Milvus should search with.

Card texts are LoCoMo turns; their vectors are the turns' real multilingual-e5-small
embeddings with a little noise (embedding 100k passages on 2 CPU cores would take most of an
hour and measure the embedder, not the search). Cards are spread over 10 tenants x 100 users;
queries filter by tenant and user, the way recall asks. Each search runs under a store clock
(`memoryproject.store_timing`), so the time inside Milvus, Elasticsearch and the embedder is
printed apart from the whole call (p50 / p95). Runs under prefixes of its own and removes
everything afterwards.

The local Milvus (milvus-lite 2.5) accepts only FLAT, IVF_FLAT and AUTOINDEX. HNSW, which a
production Milvus uses, is measured with hnswlib (the graph library knowhere's HNSW derives
from; `pip install hnswlib`) on the same vectors with the same tenant + user filter: filtered
recall@10 against the exact FLAT answer of Milvus, per `ef`.

    .venv/bin/python benchmarks/ltm_scale.py            # --sizes 10000,100000 --queries 200
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import uuid

import numpy as np
from _setup import clear_prefix_keys, django_setup, locomo_turns

RUN = uuid.uuid4().hex[:8]
TENANTS, USERS = 10, 100
EFS = (16, 32, 64, 128, 256)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else 0.0


def cell(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.1f} / {pct(values, 0.95):.1f}"


def hnsw_table(vectors: np.ndarray, owners: list[tuple[int, str]], queries: list) -> list[str]:
    """Filtered recall@10 and latency of HNSW (M 16, efConstruction 200) per ef."""
    try:
        import hnswlib
    except ImportError:
        return ["HNSW: hnswlib is not installed (pip install hnswlib); not measured"]
    graph = hnswlib.Index(space="cosine", dim=vectors.shape[1])
    graph.init_index(max_elements=len(vectors), M=16, ef_construction=200, random_seed=7)
    graph.add_items(vectors, np.arange(len(vectors)), num_threads=2)
    lines = []
    for ef in EFS:
        graph.set_ef(ef)
        recalls, took = [], []
        for vector, owner, exact in queries:
            began = time.perf_counter()
            try:
                labels, _ = graph.knn_query(
                    vector, k=10, num_threads=1, filter=lambda i, owner=owner: owners[i] == owner
                )
            except RuntimeError:  # the graph walk found fewer than 10 of the owner's cards
                labels = [[]]
            took.append((time.perf_counter() - began) * 1000)
            found = {f"ltm_scale_{int(n)}" for n in labels[0]}
            recalls.append(len(found & exact) / max(len(exact), 1))
        lines.append(
            f"  HNSW ef {ef:>3}: filtered recall@10 {100 * statistics.mean(recalls):.1f}% of "
            f"FLAT; search p50 / p95 {cell(took)} ms (hnswlib, in process)"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--modes", default="vector,lexical,hybrid")
    args = parser.parse_args()
    django_setup(
        migrate=True,
        ELASTICSEARCH_INDEX_PREFIX=f"bench-scale-{RUN}",
        MILVUS_COLLECTION_PREFIX=f"bench_scale_{RUN}",
        REDIS_KEY_PREFIX=f"bench-scale-{RUN}",
    )
    from django.conf import settings

    from memories.ltm.embedder import embedder, query_vector
    from memories.ltm.scope import CardDocument, Scope
    from memories.ltm.search import card_search_index
    from memories.ltm.selectors import ltm_search
    from memories.ltm.text import bm25_text
    from memories.ltm.vectors import vector_index
    from memoryproject.errors import StoreUnavailable
    from memoryproject.store_timing import measuring
    from profiles.services.tenants import tenant_create, tenant_delete

    rng = random.Random(7)
    turns = [t["content"] for t in locomo_turns()]
    started = time.perf_counter()
    base = embedder().embed_passages(turns)
    print(f"embedded {len(turns)} LoCoMo turns in {time.perf_counter() - started:.0f}s")
    print(
        f"Milvus {settings.MILVUS_URI}: index {settings.MILVUS_INDEX_TYPE}, consistency "
        f"{settings.MILVUS_CONSISTENCY_LEVEL}; Elasticsearch {settings.ELASTICSEARCH_URL}"
    )
    tenants = [tenant_create(slug=f"bench-scale-{RUN}-{n}", name="scale") for n in range(TENANTS)]
    search, vectors = card_search_index(), vector_index()
    dim = embedder().dim
    for index in (search, vectors):
        index.ensure()
    written = 0
    blocks: list[np.ndarray] = []
    owners: list[tuple[int, str]] = []
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            load_started = time.perf_counter()
            milvus_load = 0.0
            while written < size:
                batch, block = [], []
                for n in range(written, min(size, written + 2000)):
                    turn = n % len(turns)
                    noise = np.random.default_rng(n).normal(0, 0.02, dim).astype(np.float32)
                    vector = base[turn] + noise
                    vector = vector / np.linalg.norm(vector)
                    block.append(vector)
                    tenant = tenants[n % TENANTS]
                    owners.append((n % TENANTS, f"u_{n % USERS}"))
                    batch.append(
                        CardDocument(
                            memory_id=f"ltm_scale_{n}",
                            version=1,
                            vector=vector.tolist(),
                            fields={
                                "tenant_id": str(tenant.pk),
                                "user_id": f"u_{n % USERS}",
                                "memory_type": "episodic_case",
                                "summary": turns[turn],
                                "bm25_text": bm25_text(turns[turn]),
                                "status": "active",
                                "importance": 0.5,
                            },
                        )
                    )
                began = time.perf_counter()
                vectors.upsert(documents=batch)
                milvus_load += time.perf_counter() - began
                search.upsert(documents=batch)
                blocks.append(np.array(block, dtype=np.float32))
                written += len(batch)
            vectors.flush()
            print(
                f"{size:>7} cards loaded in {time.perf_counter() - load_started:.0f}s "
                f"({milvus_load:.0f}s of it in Milvus upserts)"
            )

            total: dict[str, list[float]] = {m: [] for m in args.modes.split(",")}
            stores: dict[str, dict[str, list[float]]] = {m: {} for m in total}
            degraded = {mode: 0 for mode in total}
            probes = []
            for _ in range(args.queries):
                question = turns[rng.randrange(len(turns))]
                user_no = rng.randrange(USERS)
                tenant_no = user_no % TENANTS  # card n belongs to tenant n % 10 and user n % 100
                tenant, user = tenants[tenant_no], f"u_{user_no}"
                for mode in total:  # vector first (as listed) embeds; the others reuse it
                    began = time.perf_counter()
                    with measuring() as clock:
                        try:
                            result = ltm_search(
                                tenant=tenant, query=question, mode=mode, k=10, user_id=user
                            )
                            degraded[mode] += result.degraded
                        except StoreUnavailable:
                            degraded[mode] += 1
                    total[mode].append((time.perf_counter() - began) * 1000)
                    for store, ms in clock.totals_ms().items():
                        stores[mode].setdefault(store, []).append(ms)
                    if "elasticsearch" in clock.totals_ms():
                        stores[mode].setdefault("elasticsearch exclusive", []).append(
                            clock.exclusive_ms("elasticsearch")
                        )
                        stores[mode].setdefault("all but the ES stand-in", []).append(
                            total[mode][-1] - clock.exclusive_ms("elasticsearch")
                        )
                scope = Scope(tenant_id=str(tenant.pk), user_ids=(user,))
                qv = query_vector(question).tolist()
                exact = {h.memory_id for h in vectors.nearest(vector=qv, scope=scope, limit=10)}
                probes.append((np.array(qv, dtype=np.float32), (tenant_no, user), exact))
            print(f"{size:>7} cards, tenant + user filters, {args.queries} queries, p50 / p95 ms:")
            names = ["whole search", "milvus", "elasticsearch", "embedding"]
            names += ["elasticsearch exclusive", "all but the ES stand-in"]
            print("  " + " | ".join(["mode".ljust(8), *(n.rjust(14) for n in names)]))
            for mode in total:
                cells = [cell(total[mode])] + [cell(stores[mode].get(n, [])) for n in names[1:]]
                print("  " + " | ".join([mode.ljust(8), *(c.rjust(14) for c in cells)]))
            empty = sum(1 for _, _, exact in probes if not exact)
            print(
                f"  degraded or failed (a branch dropped after LTM_BRANCH_TIMEOUT_MS): "
                f"{', '.join(f'{m} {n}' for m, n in degraded.items())} of {args.queries}; "
                f"empty exact answers: {empty}"
            )
            for line in hnsw_table(np.vstack(blocks), owners, probes):
                print(line)
    finally:
        time.sleep(5)  # let a busy Elasticsearch finish what timed-out searches left queued
        for index in (search, vectors):
            index.drop()
        for tenant in tenants:
            tenant_delete(tenant=tenant)
        clear_prefix_keys()


if __name__ == "__main__":
    main()
