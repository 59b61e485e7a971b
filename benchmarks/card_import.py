"""Card import and audited writes of one tenant, through Django's full stack in this process.

Imports of 100, 1,000 and 10,000 cards go through `POST /v1/ltm/cards:import` (middleware,
authentication, validation, redaction, the service, the audit trail); a size above the import
limit (`LTM_IMPORT_MAX_CARDS`) is sent in requests of the limit. Last comes the largest import
the limits allow: as many cards as allowed, their contents as long as the body limit allows.
For each the script prints the wall ms, the ms per card, and the PostgreSQL time the service
measured itself (`Server-Timing: store.postgresql`), after one warm-up request.
Cards are LoCoMo turns over 50 end users, each with its importer's id, entities, tags and
source ids, as a real importer sends them. The outbox drain they queue is not run (embedding is
the drain's cost, not the import's).

Then 1, 8 and 32 threads, each with its own PostgreSQL connection and test client, post
proposals (one memory each, so one audit event each) to the same tenant for `--seconds`: it
prints audited writes per second (audit events written over the wall time) and the p50 / p95
request ms. The same thread counts then append audit events alone (`audit_record`, one event
per transaction), which is the chain's own ceiling for one tenant: every append of a tenant
waits for the previous one's commit, and one writer appends batches of 1 to 1,000 events a
transaction (`audit_record_many`, best of five). Last, the tenant's audit chain is verified
(`audit_verify`) and timed. Everything written is removed afterwards. `DATABASE_URL` chooses
the database (one of the benchmark's own keeps it apart from others' schema changes; the
script migrates it first).

    .venv/bin/python benchmarks/card_import.py   # --sizes 100,1000,10000 --threads 1,8,32
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import uuid
from collections import Counter
from typing import Any

from _service import ServiceRun, percentile, remove_everything, tenant_with_key
from _setup import django_setup, locomo_turns

ENTITIES = ["createOrder", "payment-service", "prod-k8s", "redis", "线程池", "数据库", "kafka"]
TYPES = ["semantic_fact", "episodic_case", "procedure", "knowledge"]
USERS = 50


def card_body(n: int, turns: list[str], batch: str) -> dict[str, Any]:
    text = turns[n % len(turns)]
    card = {
        "id": f"imp_{batch}_{n}",
        "memory_type": TYPES[n % len(TYPES)],
        "title": text[:60],
        "summary": text[:400],
        "content": turns[(n + 1) % len(turns)][:800],
        "entities": [ENTITIES[n % len(ENTITIES)], ENTITIES[(n * 3) % len(ENTITIES)]],
        "tags": ["import", f"t{n % 10}"],
        "source_refs": {"message_ids": [f"m_{n}"]},
        "importance": 0.5,
        "confidence": 0.8,
    }
    if n % 4:  # every fourth card is shared knowledge, the rest belong to a user
        card["user_id"] = f"u_{n % USERS}"
    return card


def server_timing(response: Any) -> dict[str, float]:
    timing = {}
    for part in response.get("Server-Timing", "").split(","):
        if ";dur=" in part:
            name, value = part.strip().split(";dur=")
            timing[name] = float(value)
    return timing


def imports(client: Any, headers: dict[str, str], sizes: list[int], turns: list[str]) -> None:
    from django.conf import settings

    limit = settings.LTM_IMPORT_MAX_CARDS

    def send(cards: list[dict[str, Any]]) -> tuple[float, float]:
        body = json.dumps({"cards": cards})
        started = time.perf_counter()
        response = client.post(
            "/v1/ltm/cards:import", data=body, content_type="application/json", **headers
        )
        took = (time.perf_counter() - started) * 1000
        if response.status_code != 201:
            raise SystemExit(f"import: {response.status_code} {response.content[:300]!r}")
        return took, server_timing(response).get("store.postgresql", 0.0)

    def row(label: str, cards: list[dict[str, Any]]) -> None:
        wall = pg = slowest = 0.0
        requests = 0
        for start in range(0, len(cards), limit):
            took, store = send(cards[start : start + limit])
            wall, pg, slowest, requests = wall + took, pg + store, max(slowest, took), requests + 1
        print(
            f"{label:>12} {requests:>8} {wall:>9.0f} {wall / len(cards):>8.2f} {pg:>9.0f}"
            f" {slowest:>8.0f}",
            flush=True,
        )

    print(f"import limit: {limit} cards per request (LTM_IMPORT_MAX_CARDS)")
    send([card_body(0, turns, "warm")])  # a worker's first request loads what later ones reuse
    print(
        f"{'cards':>12} {'requests':>8} {'wall ms':>9} {'ms/card':>8} {'pg ms':>9} {'slowest':>8}"
    )
    for size in sizes:
        batch = uuid.uuid4().hex[:6]
        row(str(size), [card_body(n, turns, batch) for n in range(size)])
    # The largest import the limits allow: as many cards as allowed, as long as the body allows.
    batch = uuid.uuid4().hex[:6]
    largest = [card_body(n, turns, batch) for n in range(limit)]
    room = int(settings.API_MAX_BODY_BYTES * 0.95) - len(json.dumps({"cards": largest}))
    for n, card in enumerate(largest):
        card["content"] += (
            " " + " ".join(turns[(n + k) % len(turns)] for k in range(200))[: max(0, room // limit)]
        )
    row(f"{limit} ({settings.API_MAX_BODY_BYTES // 2**20} MB)", largest)


def writers(secret: str, tenant: Any, threads: int, seconds: float) -> None:
    from django.db import connection
    from django.test import Client

    from memories.audit.models import AuditEvent

    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    failures: list[str] = []
    start_line = threading.Barrier(threads + 1)

    def write(worker: int) -> None:
        client = Client()
        headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
        n = 0
        try:
            start_line.wait()
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline:
                n += 1
                body = {
                    "proposals": [
                        {
                            "user_id": f"w{threads}_{worker}_{n % 4}",
                            "session_id": f"s_w{threads}_{worker}",
                            "memory_type": "decision",
                            "summary": f"We decided to run order-exec build {n} of writer"
                            f" {worker} on prod-k8s with a pool of {n % 64 + 1} threads.",
                            "source": {"kind": "user", "message_ids": [f"m_{worker}_{n}"]},
                            "confidence": 0.9,
                            "importance": 0.7,
                        }
                    ]
                }
                started = time.perf_counter()
                response = client.post(
                    "/v1/memories/proposals",
                    data=json.dumps(body),
                    content_type="application/json",
                    **headers,
                )
                latencies.append((time.perf_counter() - started) * 1000)
                if response.status_code not in (200, 201):
                    failures.append(f"{response.status_code} {response.content[:200]!r}")
                    return
                outcomes.update(r["outcome"] for r in response.json()["results"])
        finally:
            connection.close()

    before = AuditEvent.objects.filter(tenant=tenant).count()
    pool = [threading.Thread(target=write, args=(w,)) for w in range(threads)]
    for thread in pool:
        thread.start()
    start_line.wait()
    started = time.perf_counter()
    for thread in pool:
        thread.join()
    wall = time.perf_counter() - started
    if failures:
        raise SystemExit(f"proposals: {failures[0]}")
    audited = AuditEvent.objects.filter(tenant=tenant).count() - before
    print(
        f"{threads:>7} {audited / wall:>12.1f} {len(latencies) / wall:>10.1f}"
        f" {statistics.median(latencies):>8.0f} {percentile(latencies, 0.95):>8.0f}  "
        + ", ".join(f"{name} {count}" for name, count in outcomes.most_common()),
        flush=True,
    )


def appenders(tenant: Any, threads: int, seconds: float) -> None:
    """The chain alone: threads appending one audit event per transaction to one tenant."""
    from django.db import connection

    from memories.audit.models import AuditEvent
    from memories.audit.services import Actor, audit_record

    start_line = threading.Barrier(threads + 1)

    def append(worker: int) -> None:
        try:
            start_line.wait()
            deadline = time.perf_counter() + seconds
            n = 0
            while time.perf_counter() < deadline:
                n += 1
                audit_record(
                    tenant=tenant,
                    action="update",
                    actor=Actor.job("benchmark"),
                    object_type="profile",
                    object_id=f"end_user:{worker}",
                    after={"n": n},
                )
        finally:
            connection.close()

    before = AuditEvent.objects.filter(tenant=tenant).count()
    pool = [threading.Thread(target=append, args=(w,)) for w in range(threads)]
    for thread in pool:
        thread.start()
    start_line.wait()
    started = time.perf_counter()
    for thread in pool:
        thread.join()
    wall = time.perf_counter() - started
    appended = AuditEvent.objects.filter(tenant=tenant).count() - before
    print(f"{threads:>7} {appended / wall:>12.1f} {wall * 1000 / max(appended, 1):>12.2f}")


def batches(tenant: Any) -> None:
    """Audit events appended in batches by one writer: the chain's cost per event."""
    from django.db import transaction

    from memories.audit.services import Actor, AuditEntry, audit_record_many

    for size in (1, 10, 100, 1000):
        entries = [
            AuditEntry(
                action="create",
                object_type="ltm_card",
                object_id=f"ltm_{n}",
                after={"summary": "x" * 300, "n": n},
                details={"version": 1},
            )
            for n in range(size)
        ]
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            with transaction.atomic():
                audit_record_many(tenant=tenant, actor=Actor.job("benchmark"), entries=entries)
            best = min(best, time.perf_counter() - started)
        print(f"{size:>7} {best * 1000:>12.1f} {best * 1e6 / size:>12.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--threads", default="1,8,32")
    parser.add_argument("--seconds", type=float, default=10.0, help="per writer count")
    args = parser.parse_args()
    run = ServiceRun("bench-import", uuid.uuid4().hex[:8])
    django_setup(
        migrate=True,
        **run.env(),
        ALLOWED_HOSTS="*",
        LOG_LEVEL="ERROR",
        API_RATE_LIMIT_PER_MINUTE="10000000",
    )
    import redis
    from django.conf import settings
    from django.test import Client

    from memories.audit.services import audit_verify

    turns = [t["content"] for t in locomo_turns()]
    try:
        tenant, secret = tenant_with_key(slug=run.prefix, name="Card import benchmark")
        headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
        imports(Client(), headers, [int(s) for s in args.sizes.split(",")], turns)
        print(
            f"\n{'writers':>7} {'audited/s':>12} {'requests/s':>10} {'p50 ms':>8} {'p95 ms':>8}"
            "  outcomes"
        )
        for threads in (int(t) for t in args.threads.split(",")):
            writers(secret, tenant, threads, args.seconds)
        print(f"\n{'appenders':>7} {'events/s':>12} {'ms/event':>12}   (audit_record alone)")
        for threads in (int(t) for t in args.threads.split(",")):
            appenders(tenant, threads, args.seconds / 2)
        print(f"\n{'batch':>7} {'best ms':>12} {'us/event':>12}   (audit_record_many, one writer)")
        batches(tenant)
        started = time.perf_counter()
        report = audit_verify(tenant=tenant)
        took = time.perf_counter() - started
        print(f"\naudit chain: {report.events} events, verifies {report.ok}, in {took:.1f}s")
    finally:
        remove_everything(run)
        queue = settings.CELERY_TASK_DEFAULT_QUEUE
        broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        # The queue and kombu's bindings of it (`_kombu.binding.<queue>`, ...).
        stale = list(broker.scan_iter(match=f"*{queue}*", count=1000))
        if stale:
            broker.delete(*stale)


if __name__ == "__main__":
    main()
