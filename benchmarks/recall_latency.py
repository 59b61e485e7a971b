"""Recall latency over HTTP with 1,000,000 short-term items over 10,000 users and 100,000
long-term cards.

The script loads the data through the service's own store code under prefixes of its own,
starts the service (gunicorn) and a Celery worker on them, and fires recall requests from 8
concurrent clients. Requests are grouped by the layers their routing asked:

- `redis+pg`: continuing a task, references to the current context, profile and config
  questions (Layer 1 is served from its Redis cache unless a change invalidated it);
- `ltm`: requests for similar or earlier cases, each with a query text of its own, so every
  one embeds its query (no embedding cache hit).

It prints p50 / p95 / p99 per group, the share of time per layer (from the Server-Timing
header the service sends), and p50 / p95 of the time inside each store (Redis, PostgreSQL,
Elasticsearch, Milvus, the query embedding) and of the whole recall without the time only the
Elasticsearch stand-in was waited on, so the service's own time is known apart from it. A
Celery worker (at lower CPU priority) and beat apply recall's side effects meanwhile, on the
same 2 cores; with --defer-effects they start only after the load, as if workers ran on other
machines, and the time they take to catch up is printed. Targets on a 2-core
machine: `redis+pg` p50 <= 20 ms and p95 <= 50 ms. Everything written is removed afterwards
unless --keep is given (then --reuse RUN skips loading next time).

Card texts are LoCoMo turns; their vectors are the turns' real multilingual-e5-small
embeddings with a little noise (embedding 100,000 passages on 2 cores would take an hour and
measure the embedder, not recall).

    .venv/bin/python benchmarks/recall_latency.py      # --seconds 30 --clients 8 --workers 3
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict

import orjson
from _setup import ROOT, clear_prefix_keys, django_setup, locomo_turns

ENTITIES = ["createOrder", "payment-service", "prod-k8s", "redis", "线程池", "数据库", "kafka"]
TYPES = ["fact", "decision", "constraint", "observation"]
SESSIONS_PER_USER, TASKS_PER_USER = 10, 5
PORT = 8765
CLIENT_KEYS = 16


def settings_env(run: str) -> dict[str, str]:
    return {
        "REDIS_KEY_PREFIX": f"bench-recall-{run}",
        "ELASTICSEARCH_INDEX_PREFIX": f"bench-recall-{run}",
        "MILVUS_COLLECTION_PREFIX": f"bench_recall_{run}",
        "CELERY_QUEUE": f"bench-recall-{run}",
    }


# --- loading -----------------------------------------------------------------------------------
def load(run: str, users: int, items_per_user: int, cards: int, turns: list[str]) -> list[str]:
    """Users with profiles and roles in PostgreSQL, short-term items in Redis, cards in both
    long-term indexes. Returns API keys of the benchmark tenant."""
    import hashlib

    import numpy as np

    from memories.ltm.embedder import embedder
    from memories.ltm.scope import CardDocument
    from memories.ltm.search import card_search_index
    from memories.ltm.text import bm25_text
    from memories.ltm.vectors import vector_index
    from memories.services import stores_ensure
    from memories.stm.items import StmItem
    from memories.stm.store import stm_store
    from profiles.models import EndUser, Project, UserProfile, UserProjectRole
    from profiles.services.api_keys import api_key_create
    from profiles.services.tenants import tenant_create

    stores_ensure()
    tenant = tenant_create(slug=f"bench-recall-{run}", name="Recall benchmark")
    # One key per client, as separate agents would have (each key has its own rate limit).
    secrets = [
        api_key_create(tenant=tenant, name=f"bench {n}", scopes=["read", "write"])[1]
        for n in range(CLIENT_KEYS)
    ]
    project = Project.objects.create(
        tenant=tenant, key="payment", name="Payment", default_env="prod-cn"
    )
    started = time.perf_counter()
    end_users = EndUser.objects.bulk_create(
        [EndUser(tenant=tenant, external_id=f"u_{n}") for n in range(users)], batch_size=2000
    )
    UserProfile.objects.bulk_create(
        [
            UserProfile(end_user=u, language="zh-CN" if n % 2 else "en", answer_style="brief_first")
            for n, u in enumerate(end_users)
        ],
        batch_size=2000,
    )
    UserProjectRole.objects.bulk_create(
        [
            UserProjectRole(
                tenant=tenant,
                end_user=u,
                project=project,
                role="developer",
                permission_scope="read_only",
            )
            for u in end_users
        ],
        batch_size=2000,
    )
    print(
        f"PostgreSQL: {users} users with profiles and roles in {time.perf_counter() - started:.0f}s"
    )

    started = time.perf_counter()
    store = stm_store()
    now = time.time()
    rng = random.Random(1)
    for n, end_user in enumerate(end_users):
        items = []
        for k in range(items_per_user):
            fact = f"{turns[(n * items_per_user + k) % len(turns)][:160]} #{k}"
            fingerprint = hashlib.sha256(f"{n}:{fact}".encode()).hexdigest()[:24]
            session = f"s_{n}_{k % SESSIONS_PER_USER}"
            updated = now - rng.uniform(0, 6 * 3600)
            items.append(
                StmItem(
                    id=f"stm_{end_user.pk}_{uuid.uuid4().hex[:16]}",
                    tenant_id=tenant.pk,
                    end_user_id=end_user.pk,
                    user_id=end_user.external_id,
                    session_id=session,
                    task_id=f"task_{n}_{k % TASKS_PER_USER}",
                    memory_type=TYPES[k % len(TYPES)],
                    summary=fact,
                    fingerprint=fingerprint,
                    fingerprints=[fingerprint],
                    entities=[ENTITIES[k % len(ENTITIES)], ENTITIES[(k * 3 + n) % len(ENTITIES)]],
                    source={"kind": "user", "message_ids": [f"m_{k}"], "tool_call_ids": []},
                    confidence=0.8,
                    importance=rng.uniform(0.3, 0.9),
                    created_at=updated,
                    updated_at=updated,
                    last_access_at=updated,
                    expires_at=now + 2 * 86400,
                    sessions=[session],
                )
            )
        store.upsert(items=items, now=now)
        if (n + 1) % 1000 == 0:
            rate = (n + 1) * items_per_user / (time.perf_counter() - started)
            print(f"  Redis: {(n + 1) * items_per_user:,} items ({rate:,.0f}/s)", flush=True)
    print(f"Redis: {users * items_per_user:,} items in {time.perf_counter() - started:.0f}s")

    started = time.perf_counter()
    sample = turns[:1500]
    base = embedder().embed_passages(sample)
    took = time.perf_counter() - started
    print(f"embedded {len(sample)} LoCoMo turns for card vectors in {took:.0f}s")
    started = time.perf_counter()
    search, vectors = card_search_index(), vector_index()
    written = 0
    while written < cards:
        batch = []
        for n in range(written, min(cards, written + 2000)):
            turn = n % len(sample)
            noise = np.random.default_rng(n).normal(0, 0.02, base.shape[1]).astype(np.float32)
            vector = base[turn] + noise
            batch.append(
                CardDocument(
                    memory_id=f"ltm_bench_{n}",
                    version=1,
                    vector=(vector / np.linalg.norm(vector)).tolist(),
                    fields={
                        "tenant_id": str(tenant.pk),
                        "user_id": f"u_{n % users}" if n % 4 else "",
                        "project_id": "",
                        "memory_type": "episodic_case",
                        "summary": sample[turn],
                        "entities": [ENTITIES[n % len(ENTITIES)]],
                        "bm25_text": bm25_text(f"{sample[turn]} {ENTITIES[n % len(ENTITIES)]}"),
                        "status": "active",
                        "importance": 0.5,
                        "confidence": 0.8,
                        "updated_at": "2026-11-01T00:00:00+00:00",
                    },
                )
            )
        vectors.upsert(documents=batch)
        search.upsert(documents=batch)
        written += len(batch)
        if written % 20000 == 0:
            print(f"  long-term: {written:,} cards", flush=True)
    vectors.flush()
    print(f"long-term: {cards:,} cards in {time.perf_counter() - started:.0f}s")
    state = ROOT / "var" / f"bench-recall-{run}.json"
    state.parent.mkdir(exist_ok=True)
    state.write_text(json.dumps({"secrets": secrets, "users": users}))
    return secrets


def cleanup(run: str) -> None:
    from memories.ltm.search import card_search_index
    from memories.ltm.vectors import vector_index
    from profiles.models import Tenant
    from profiles.services.tenants import tenant_delete

    for index in (card_search_index(), vector_index()):
        index.drop()
    for tenant in Tenant.objects.filter(slug=f"bench-recall-{run}"):
        tenant_delete(tenant=tenant)
    clear_prefix_keys()
    (ROOT / "var" / f"bench-recall-{run}.json").unlink(missing_ok=True)
    for leftover in (ROOT / "var").glob(f"bench-recall-{run}-beat*"):
        leftover.unlink()


# --- the service -------------------------------------------------------------------------------
def start_service(run: str, workers: int, threads: int) -> list[subprocess.Popen]:
    env = {**os.environ, **settings_env(run), "SECURE_COOKIES": "0"}
    venv = ROOT / ".venv" / "bin"
    web = subprocess.Popen(
        [
            str(venv / "gunicorn"),
            "memoryproject.wsgi",
            "--bind",
            f"127.0.0.1:{PORT}",
            "--workers",
            str(workers),
            # Threads give keep-alive connections (sync workers close each one).
            "--worker-class",
            "gthread" if threads > 1 else "sync",
            "--threads",
            str(threads),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(ROOT / "var" / "bench-recall-web.log").open("w"),  # one access-log line a request
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return [web]
        except OSError:
            time.sleep(0.3)
    raise SystemExit("the service did not start")


def start_workers(run: str) -> list[subprocess.Popen]:
    """A Celery worker (at lower CPU priority) and beat, as run.sh starts them."""
    env = {**os.environ, **settings_env(run), "SECURE_COOKIES": "0"}
    venv = ROOT / ".venv" / "bin"
    worker = subprocess.Popen(
        [
            "nice",  # the worker stands for workers on other machines: it gets spare CPU only
            "-n",
            "10",
            str(venv / "celery"),
            "-A",
            "memoryproject",
            "worker",
            "--concurrency",
            "1",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(ROOT / "var" / "bench-recall-worker.log").open("w"),
    )
    beat = subprocess.Popen(
        [
            str(venv / "celery"),
            "-A",
            "memoryproject",
            "beat",
            "--loglevel",
            "WARNING",
            "--schedule",
            str(ROOT / "var" / f"bench-recall-{run}-beat"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return [worker, beat]


def stop_service(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()


# --- load generation ---------------------------------------------------------------------------
def task_request(rng: random.Random, users: int, turns: list[str]) -> dict:
    n = rng.randrange(users)
    k = rng.randrange(SESSIONS_PER_USER)
    task = f"task_{n}_{k % TASKS_PER_USER}"
    query = rng.choice(
        [
            f"继续 {task}，下一步做什么？",
            f"continue {task}: what is the next step?",
            f"刚才那个 {ENTITIES[k % len(ENTITIES)]} 的结论还成立吗",
            "我的默认配置是什么",
            "what is my answer style preference?",
        ]
    )
    return {"user_id": f"u_{n}", "session_id": f"s_{n}_{k}", "task_id": task, "query": query}


def ltm_request(rng: random.Random, users: int, turns: list[str]) -> dict:
    n = rng.randrange(users)
    turn = turns[rng.randrange(len(turns))][:120]
    query = rng.choice(
        [f"以前有类似的情况吗：{turn}", f"something like this happened before? {turn}"]
    )
    return {"user_id": f"u_{n}", "session_id": f"s_{n}_new", "query": query}


def fire(
    secrets: list[str], make, users: int, turns: list[str], clients: int, seconds: float
) -> dict:
    results: list[tuple[float, dict[str, float], list[str]]] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(index: int) -> None:
        rng = random.Random(index * 7919 + int(time.time()))
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
        secret = secrets[index % len(secrets)]
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        mine = []
        while time.perf_counter() < deadline:
            body = json.dumps(make(rng, users, turns))
            started = time.perf_counter()
            conn.request("POST", "/v1/recall", body=body, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            elapsed = (time.perf_counter() - started) * 1000
            if response.status != 200:
                with lock:
                    errors.append(f"{response.status} {payload[:200]!r}")
                continue
            timing = {}
            for part in (response.getheader("Server-Timing") or "").split(","):
                if ";dur=" in part:
                    name, value = part.strip().split(";dur=")
                    timing[name] = float(value)
            mine.append((elapsed, timing, orjson.loads(payload)["degraded"]))
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"results": results, "errors": errors, "seconds": seconds}


def report(name: str, fired: dict) -> None:
    results = fired["results"]
    if not results:
        print(f"{name}: no successful request; errors: {fired['errors'][:3]}")
        return
    latencies = sorted(r[0] for r in results)

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(len(latencies) * p))]

    print(
        f"{name:>9}: {len(results)} requests, {len(results) / fired['seconds']:.0f}/s; "
        f"p50 {statistics.median(latencies):.1f} ms, p95 {pct(0.95):.1f} ms, p99 {pct(0.99):.1f} ms"
        f"; errors {len(fired['errors'])}; degraded {sum(1 for r in results if r[2])}"
    )
    totals: dict[str, float] = defaultdict(float)
    for _, timing, _ in results:
        for layer, value in timing.items():
            totals[layer] += value
    client_total = sum(latencies)
    server = totals.pop("total", 0.0)
    layers = {k: v for k, v in totals.items() if not k.startswith("ltm.")}
    shares = ", ".join(f"{k} {100 * v / client_total:.1f}%" for k, v in sorted(layers.items()))
    rest = 100 * (server - sum(layers.values())) / client_total
    outside = 100 * (client_total - server) / client_total
    print(
        f"{'':>11}share of client-side time: {shares}, rest of recall {rest:.1f}%, "
        f"HTTP/auth/queueing/serialisation {outside:.1f}%"
    )
    print_store_table(results)


STORE_COLUMNS = ("redis", "postgresql", "elasticsearch", "milvus", "embedding")


def print_store_table(results: list[tuple[float, dict[str, float], list[str]]]) -> None:
    """p50 / p95 of the whole recall and of the time inside each store (Server-Timing
    `store.*`; a request that did not call a store counts 0 for it), and of the whole recall
    without the time only the Elasticsearch stand-in was waited on."""

    def pcts(values: list[float]) -> str:
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
        return f"{statistics.median(ordered):.1f} / {p95:.1f}"

    columns = {
        "client": [r[0] for r in results],
        "server": [r[1].get("total", 0.0) for r in results],
        **{name: [r[1].get(f"store.{name}", 0.0) for r in results] for name in STORE_COLUMNS},
        "client without ES": [
            r[0] - r[1].get("store.elasticsearch_exclusive", 0.0) for r in results
        ],
        "server without ES": [
            r[1].get("total", 0.0) - r[1].get("store.elasticsearch_exclusive", 0.0) for r in results
        ],
    }
    print(f"{'':>11}p50 / p95 ms: " + "; ".join(f"{k} {pcts(v)}" for k, v in columns.items()))


def effects_backlog() -> None:
    """How many recalls' side effects were still queued, and how long the worker took to
    apply them once the load stopped."""
    from memoryproject import redis_keys as keys
    from memoryproject.redis_client import redis_connection

    client = redis_connection()
    queued = client.llen(keys.recall_log())
    started = time.perf_counter()
    while client.llen(keys.recall_log()) and time.perf_counter() - started < 300:
        time.sleep(0.5)
    left = client.llen(keys.recall_log())
    print(
        f"recall side effects queued when the load stopped: {queued}; applied by the worker "
        f"{time.perf_counter() - started:.0f}s later ({left} left)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--items-per-user", type=int, default=100)
    parser.add_argument("--cards", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=1, help="threads per gunicorn worker")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--defer-effects",
        action="store_true",
        help="start the worker only after the load (as if workers ran on other machines)",
    )
    parser.add_argument("--keep", action="store_true", help="leave the data for --reuse")
    parser.add_argument("--reuse", default="", help="the RUN id of data kept by --keep")
    args = parser.parse_args()
    run = args.reuse or uuid.uuid4().hex[:8]
    django_setup(migrate=True, **settings_env(run))
    turns = [t["content"] for t in locomo_turns()]
    print(f"run {run}")
    try:
        if args.reuse:
            state = json.loads((ROOT / "var" / f"bench-recall-{run}.json").read_text())
            secrets, users = state["secrets"], state["users"]
        else:
            secrets = load(run, args.users, args.items_per_user, args.cards, turns)
            users = args.users
        processes = start_service(run, args.workers, args.threads)
        if not args.defer_effects:
            processes += start_workers(run)
        try:
            fire(secrets, task_request, users, turns, args.clients, 3)  # warm-up: caches, imports
            fire(secrets, ltm_request, users, turns, args.clients, 3)
            report(
                "redis+pg", fire(secrets, task_request, users, turns, args.clients, args.seconds)
            )
            report("ltm", fire(secrets, ltm_request, users, turns, args.clients, args.seconds))
            if args.defer_effects:
                processes += start_workers(run)
            effects_backlog()
        finally:
            stop_service(processes)
    finally:
        if not args.keep:
            cleanup(run)
            print("removed everything written")
        else:
            print(f"data kept: rerun with --reuse {run}")


if __name__ == "__main__":
    sys.exit(main())
