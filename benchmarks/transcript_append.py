"""Transcript append throughput over HTTP against the running service.

Eight concurrent clients (one API key and one session each, as eight agents would) append
LoCoMo dialogue turns in batches of 1 and of 100 events, and the script prints events/s,
requests/s and latency percentiles for each batch size. Target: >= 2,000 events/s at batch 100.

    ./scripts/run.sh                                   # in another terminal
    .venv/bin/python benchmarks/transcript_append.py   # --seconds 10 --clients 8
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import statistics
import threading
import time
import uuid
from urllib.parse import urlsplit

from _setup import django_setup, locomo_turns


def benchmark_tenant(count: int) -> tuple[object, list[str]]:
    """A fresh tenant with one API key per client, made through the service's own code."""
    django_setup()
    from profiles.services.api_keys import api_key_create
    from profiles.services.tenants import tenant_create

    tenant = tenant_create(slug=f"bench-{uuid.uuid4().hex[:8]}", name="Benchmark")
    keys = [
        api_key_create(tenant=tenant, name=f"bench {i}", scopes=["write"])[1] for i in range(count)
    ]
    return tenant, keys


def run(
    *, url: str, keys: list[str], batch: int, seconds: float, turns: list[dict[str, str]]
) -> dict[str, float]:
    parts = urlsplit(url)
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds
    run_id = uuid.uuid4().hex[:8]

    def client(index: int, key: str) -> None:
        conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=30)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        source = itertools.cycle(turns[index * 50 :] + turns[: index * 50])
        path = f"/v1/sessions/bench-{run_id}-{batch}-{index}/events"
        mine: list[float] = []
        while time.perf_counter() < deadline:
            body = json.dumps(
                {"user_id": f"bench-user-{index}", "events": list(itertools.islice(source, batch))}
            )
            started = time.perf_counter()
            conn.request("POST", path, body=body, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            if response.status != 201:
                with lock:
                    errors.append(f"{response.status} {payload[:200]!r}")
                continue
            mine.append(time.perf_counter() - started)
        conn.close()
        with lock:
            latencies.extend(mine)

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i, k)) for i, k in enumerate(keys)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        print(f"  {len(errors)} failed requests, first: {errors[0]}")
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "events_per_s": len(ordered) * batch / elapsed,
        "requests_per_s": len(ordered) / elapsed,
        "p50_ms": statistics.median(ordered) * 1000 if ordered else 0.0,
        "p95_ms": ordered[int(len(ordered) * 0.95) - 1] * 1000 if ordered else 0.0,
        "errors": len(errors),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--batches", default="1,100", help="comma-separated batch sizes")
    args = parser.parse_args()

    turns = locomo_turns()
    tenant, keys = benchmark_tenant(args.clients)
    print(
        f"transcript append: {args.clients} clients, {args.seconds:.0f}s per batch size, "
        f"{len(turns)} LoCoMo turns as content, {args.url}"
    )
    for batch in (int(b) for b in args.batches.split(",")):
        # a short warm-up so connection set-up and first-request costs are not measured
        run(url=args.url, keys=keys, batch=batch, seconds=1.0, turns=turns)
        result = run(url=args.url, keys=keys, batch=batch, seconds=args.seconds, turns=turns)
        print(
            f"batch={batch:<4} events/s={result['events_per_s']:>9.1f}  "
            f"requests/s={result['requests_per_s']:>7.1f}  p50={result['p50_ms']:.1f}ms  "
            f"p95={result['p95_ms']:.1f}ms  requests={result['requests']}  "
            f"errors={result['errors']}"
        )
    if "100" in args.batches.split(","):
        print("target: >= 2000 events/s at batch 100")
    from profiles.services.tenants import tenant_delete

    tenant_delete(tenant=tenant)  # type: ignore[arg-type]  # its sessions and metadata go with it


if __name__ == "__main__":
    main()
