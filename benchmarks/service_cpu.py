"""The service's own CPU per request, apart from the stores', for recall and the write paths.

The stores (PostgreSQL, Redis, the Elasticsearch stand-in, Milvus) run in processes of their
own, so the CPU time of this process while it serves a request is the service's own cost:
Django, DRF, the recall pipeline, extraction rules, serialisation, the query embedding. It is
far steadier than wall time on a shared machine, which makes it the figure to compare two
versions of the code by (run the script in each checkout; same data, same request sequence).

Requests go through Django's full stack in this process (middleware, authentication, the
views), with the stores real. Operations:

- `recall task`: a task step answered from Redis and PostgreSQL (recall_latency's `redis+pg`);
- `recall ltm`: a question about an earlier case, with a query of its own (embedding, long-term
  search and history);
- `append`: five transcript events (the extraction and history tasks are queued, not run);
- `proposals`: three structured memory proposals judged by the write policy and upserted.

It prints, per operation, CPU ms per request (p50 / mean / p95) and wall ms (p50 / p95).

    .venv/bin/python benchmarks/service_cpu.py            # --users 200 --requests 200
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable

from _setup import clear_prefix_keys, django_setup, locomo_turns
from recall_latency import cleanup, load, ltm_request, settings_env, task_request


def measure(
    name: str, call: Callable[[], None], requests: int, warm: int = 10, profile: bool = False
) -> None:
    for _ in range(warm):
        call()
    cpu, wall = [], []
    profiler = cProfile.Profile() if profile else None
    for _ in range(requests):
        started_cpu, started = time.process_time(), time.perf_counter()
        if profiler is not None:
            profiler.enable()
        call()
        if profiler is not None:
            profiler.disable()
        cpu.append((time.process_time() - started_cpu) * 1000)
        wall.append((time.perf_counter() - started) * 1000)
    if profiler is not None:
        # The request thread only: the branch searches and the embedding run in a pool.
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
    cpu.sort()
    wall.sort()

    def p95(values: list[float]) -> float:
        return values[min(len(values) - 1, int(len(values) * 0.95))]

    print(
        f"{name:>12}: CPU ms p50 {statistics.median(cpu):6.1f} mean {statistics.mean(cpu):6.1f} "
        f"p95 {p95(cpu):6.1f}; wall ms p50 {statistics.median(wall):6.1f} p95 {p95(wall):6.1f}"
        f" ({requests} requests)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--items-per-user", type=int, default=100)
    parser.add_argument("--cards", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=200, help="per operation")
    parser.add_argument(
        "--profile",
        default="",
        choices=("", "recall task", "recall ltm", "append", "proposals"),
        help="print where this operation's request thread spends its time (cProfile)",
    )
    args = parser.parse_args()
    run = uuid.uuid4().hex[:8]
    django_setup(
        migrate=True, **settings_env(run), SECURE_COOKIES="0", ALLOWED_HOSTS="*", LOG_LEVEL="ERROR"
    )
    from django.test import Client

    turns = [t["content"] for t in locomo_turns()]
    print(f"run {run}: loading {args.users} users, {args.users * args.items_per_user:,} items")
    # Card vectors are embeddings of the first 300 turns (with noise): enough distinct texts.
    secrets = load(run, args.users, args.items_per_user, args.cards, turns[:300])
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secrets[0]}"}
    rng = random.Random(7)

    def post(path: str, body: dict, expect: tuple[int, ...] = (200,)) -> None:
        response = client.post(
            path, data=json.dumps(body), content_type="application/json", **headers
        )
        if response.status_code not in expect:
            raise SystemExit(f"{path}: {response.status_code} {response.content[:300]!r}")

    def append() -> None:
        n = rng.randrange(args.users)
        session = f"bench_{n}_{uuid.uuid4().hex[:8]}"
        events = [
            {"role": "user" if k % 2 == 0 else "assistant", "content": rng.choice(turns)}
            for k in range(5)
        ]
        post(f"/v1/sessions/{session}/events", {"user_id": f"u_{n}", "events": events}, (201,))

    def proposals() -> None:
        n = rng.randrange(args.users)
        batch = [
            {
                "user_id": f"u_{n}",
                "session_id": f"s_{n}_0",
                "memory_type": "fact",
                "summary": f"{rng.choice(turns)[:150]} ({uuid.uuid4().hex[:6]})",
                "source": {"kind": "user", "message_ids": [f"m_{uuid.uuid4().hex[:8]}"]},
                "confidence": 0.9,
                "importance": 0.7,
            }
            for _ in range(3)
        ]
        post("/v1/memories/proposals", {"proposals": batch}, (200, 201))

    try:
        measure(
            "recall task",
            lambda: post("/v1/recall", task_request(rng, args.users, turns)),
            args.requests,
            profile=args.profile == "recall task",
        )
        measure(
            "recall ltm",
            lambda: post("/v1/recall", ltm_request(rng, args.users, turns)),
            max(20, args.requests // 4),
            profile=args.profile == "recall ltm",
        )
        measure("append", append, args.requests, profile=args.profile == "append")
        measure("proposals", proposals, args.requests, profile=args.profile == "proposals")
    finally:
        cleanup(run)
        clear_prefix_keys()
        drop_queued_tasks()
        print("removed everything written")


def drop_queued_tasks() -> None:
    """The extraction and history tasks the appends queued (no worker runs here)."""
    import redis
    from django.conf import settings

    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queued = list(broker.scan_iter(match=f"*{settings.CELERY_TASK_DEFAULT_QUEUE}*", count=1000))
    if queued:
        broker.delete(*queued)


if __name__ == "__main__":
    sys.exit(main())
