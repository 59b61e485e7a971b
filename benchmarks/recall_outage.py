"""Recall latency while Redis is down, and whether each recall's transcript record survives.

The script starts a Redis server of its own (cache, short-term memory and broker), points the
service at it under prefixes of its own, and times recalls through Django's request handling
(in process) in three phases: Redis healthy, Redis killed (connections refused) and Redis
frozen (SIGSTOP: connections open, nothing answers, as behind a dead link). It prints p50 /
p95 / max per phase. Then it starts Redis again, runs the recall-effects job and counts how
many of the outage's recalls have their `system` event in the transcript. Everything written
is removed afterwards.

    .venv/bin/python benchmarks/recall_outage.py      # --recalls 50
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import uuid

from _setup import django_setup


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_redis(port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server
        except OSError:
            time.sleep(0.05)
    raise SystemExit("redis-server did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recalls", type=int, default=50, help="recalls per phase")
    args = parser.parse_args()

    run = uuid.uuid4().hex[:8]
    port = free_port()
    storage = tempfile.mkdtemp(prefix="bench-outage-")
    server = start_redis(port)
    django_setup(
        migrate=True,
        REDIS_URL=f"redis://127.0.0.1:{port}/0",
        CELERY_BROKER_URL=f"redis://127.0.0.1:{port}/1",
        REDIS_KEY_PREFIX=f"bench-outage-{run}",
        ELASTICSEARCH_INDEX_PREFIX=f"bench-outage-{run}",
        MILVUS_COLLECTION_PREFIX=f"bench_outage_{run}",
        CELERY_QUEUE=f"bench-outage-{run}",
        TRANSCRIPT_STORAGE=storage,
    )
    from django.conf import settings
    from django.test import Client

    from memories.ltm.search import card_search_index
    from memories.ltm.vectors import vector_index
    from memories.recall.effects import recall_effects_apply
    from memories.services import stores_ensure
    from profiles.services.api_keys import api_key_create
    from profiles.services.tenants import tenant_create, tenant_delete
    from transcripts.models import EventRef

    stores_ensure()
    tenant = tenant_create(slug=f"bench-outage-{run}", name="outage benchmark")
    _, secret = api_key_create(tenant=tenant, name="bench", scopes=["read", "write"])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    body = {"user_id": "u_1", "session_id": "s_1", "query": "createOrder 在 prod-k8s 超时"}
    append = {"user_id": "u_1", "events": [{"role": "user", "content": "createOrder 超时了"}]}
    client.post("/v1/sessions/s_1/events", append, content_type="application/json")

    def phase(name: str) -> list[str]:
        took, ids = [], []
        for _ in range(args.recalls):
            started = time.perf_counter()
            response = client.post("/v1/recall", body, content_type="application/json")
            took.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, response.content
            ids.append(response.json()["recall_id"])
        took.sort()
        p95 = took[min(len(took) - 1, int(len(took) * 0.95))]
        print(  # noqa: T201
            f"{name:>14}: p50 {statistics.median(took):7.1f} ms   p95 {p95:7.1f} ms   "
            f"max {took[-1]:7.1f} ms   ({len(took)} recalls)"
        )
        return ids

    try:
        phase("warm-up")
        phase("Redis healthy")
        server.kill()
        server.wait(10)
        lost = phase("Redis killed")
        server = start_redis(port)
        time.sleep(settings.REDIS_FAIL_FAST_SECONDS)
        os.kill(server.pid, signal.SIGSTOP)
        lost += phase("Redis frozen")
        os.kill(server.pid, signal.SIGCONT)
        server.kill()
        server.wait(10)

        server = start_redis(port)  # back, empty
        time.sleep(settings.REDIS_FAIL_FAST_SECONDS)
        while recall_effects_apply().applied:
            pass
        recorded = EventRef.objects.filter(session__tenant=tenant, message_id__in=lost).count()
        print(f"recorded after the outage: {recorded} of {len(lost)} recalls")  # noqa: T201
    finally:
        tenant_delete(tenant=tenant)
        card_search_index().drop()
        vector_index().drop()
        server.kill()  # this script's own server, with everything it held
        server.wait(10)
        shutil.rmtree(storage, ignore_errors=True)


if __name__ == "__main__":
    main()
