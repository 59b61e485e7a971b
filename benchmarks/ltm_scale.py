"""Hybrid long-term search latency with filters at 10k and 100k cards, and the vector index
type measured: filtered recall@10 of HNSW against exact FLAT search on the same vectors.

Card texts are LoCoMo turns; their vectors are the turns' real multilingual-e5-small
embeddings with a little noise (embedding 100k passages on 2 CPU cores would take most of an
hour and measure the embedder, not the search). Cards are spread over 10 tenants x 100 users;
queries filter by tenant and user, the way recall asks. Runs under prefixes of its own and
removes everything afterwards.

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    django_setup(
        migrate=True,
        ELASTICSEARCH_INDEX_PREFIX=f"bench-scale-{RUN}",
        MILVUS_COLLECTION_PREFIX=f"bench_scale_{RUN}",
        REDIS_KEY_PREFIX=f"bench-scale-{RUN}",
    )
    from memories.ltm.embedder import embedder, query_vector
    from memories.ltm.scope import CardDocument, Scope
    from memories.ltm.search import card_search_index
    from memories.ltm.selectors import ltm_search
    from memories.ltm.text import bm25_text
    from memories.ltm.vectors import MilvusVectorIndex, milvus_client, vector_index
    from memoryproject.errors import StoreUnavailable
    from profiles.services import tenant_create, tenant_delete

    rng = random.Random(7)
    turns = [t["content"] for t in locomo_turns()]
    started = time.perf_counter()
    base = embedder().embed_passages(turns)
    print(f"embedded {len(turns)} LoCoMo turns in {time.perf_counter() - started:.0f}s")
    tenants = [tenant_create(slug=f"bench-scale-{RUN}-{n}", name="scale") for n in range(TENANTS)]
    search, vectors = card_search_index(), vector_index()
    model, dim = embedder().model_name, embedder().dim
    hnsw = MilvusVectorIndex(
        milvus_client(),
        f"bench_scale_{RUN}_hnsw",
        dim=dim,
        model=model,
        index_type="HNSW",
        index_params={"M": 16, "efConstruction": 200},
    )
    for index in (search, vectors, hnsw):
        index.ensure()
    written = 0
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            while written < size:
                batch = []
                for n in range(written, min(size, written + 2000)):
                    turn = n % len(turns)
                    noise = np.random.default_rng(n).normal(0, 0.02, dim).astype(np.float32)
                    vector = base[turn] + noise
                    tenant = tenants[n % TENANTS]
                    batch.append(
                        CardDocument(
                            memory_id=f"ltm_scale_{n}",
                            version=1,
                            vector=(vector / np.linalg.norm(vector)).tolist(),
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
                vectors.upsert(documents=batch)
                hnsw.upsert(documents=batch)
                search.upsert(documents=batch)
                written += len(batch)
            vectors.flush()
            hnsw.flush()

            latencies: dict[str, list[float]] = {"lexical": [], "vector": [], "hybrid": []}
            recalls, degraded = [], 0
            for q in range(args.queries):
                question = turns[rng.randrange(len(turns))]
                tenant = tenants[q % TENANTS]
                user = f"u_{rng.randrange(USERS)}"
                for mode in ("vector", "lexical", "hybrid"):  # vector first warms the cache
                    began = time.perf_counter()
                    try:
                        result = ltm_search(
                            tenant=tenant, query=question, mode=mode, k=10, user_id=user
                        )
                        degraded += mode == "hybrid" and result.degraded
                    except StoreUnavailable:
                        degraded += 1
                    latencies[mode].append((time.perf_counter() - began) * 1000)
                scope = Scope(tenant_id=str(tenant.pk), user_ids=(user,))
                qv = query_vector(question).tolist()
                exact = {h.memory_id for h in vectors.nearest(vector=qv, scope=scope, limit=10)}
                approx = {h.memory_id for h in hnsw.nearest(vector=qv, scope=scope, limit=10)}
                recalls.append(len(exact & approx) / max(len(exact), 1))
            cells = []
            for mode, values in latencies.items():
                ordered = sorted(values)
                p50, p95 = statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]
                cells.append(f"{mode} p50 {p50:.0f} ms / p95 {p95:.0f} ms")
            print(f"{size:>7} cards, tenant+user filters: {'; '.join(cells)}")
            print(
                f"{'':>7}   hybrid results degraded: {degraded}/{args.queries}; HNSW filtered "
                f"recall@10 against FLAT: {100 * statistics.mean(recalls):.1f}%"
            )
    finally:
        time.sleep(5)  # let a busy Elasticsearch finish what timed-out searches left queued
        for index in (search, vectors, hnsw):
            index.drop()
        for tenant in tenants:
            tenant_delete(tenant=tenant)
        clear_prefix_keys()


if __name__ == "__main__":
    main()
