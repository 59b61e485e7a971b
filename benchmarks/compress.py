"""Session compression: ratio and time for sessions of 50, 200 and 1,000 events.

LoCoMo dialogues have no tool calls, so the sessions are generated: seeded agent sessions in
which a user asks, the agent calls tools (logs, code search, file reads, test runs) whose
outputs are tens to hundreds of lines, and replies that either quote what a result showed or
move on. Events go through the transcript service; extraction runs inline (the rule extractor
turns error outputs, constraints and decisions into short-term items, citing their events),
and every twentieth event the agent proposes a next step. Each session is then compressed
through the endpoint (in-process, with an API key) at each budget, `--runs` times, and the
script prints before/after tokens, the ratio (after / before), the mode (none, light, formal),
what was stubbed and folded, the endpoint's median and p95 time, the median time of the
planning alone (transcript and Redis already read), and PASS/FAIL for "every near-field turn
survived verbatim". Everything written (tenant, sessions, transcript objects, Redis keys) is
removed afterwards.

    .venv/bin/python benchmarks/compress.py   # --sizes 50,200,1000 --budgets 4000,16000,64000
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _setup import clear_prefix_keys, django_setup

SERVICES = ["payment-svc", "order-api", "inventory", "gateway", "billing-worker"]
ERRORS = ["TimeoutError", "ConnectionResetError", "OOMKilled", "ECONNREFUSED", "HTTP 503"]
LOG_MESSAGES = [
    "request served in {ms}ms",
    "cache hit ratio {pct}%",
    "heartbeat ok",
    "pool active={a}/200 queue={q}/1000",
    "retrying upstream call attempt={n}",
    "GC pause {ms}ms",
]
ASKS = [
    "Why is {svc} slow since this morning?",
    "Check the logs of {svc} around the last deploy.",
    "Look for where {svc} sets its client timeout.",
    "Run the tests for {svc} again.",
    "What changed in {svc} yesterday?",
    "createOrder 又超时了，看一下 {svc} 的线程池。",
    "Is the database the problem for {svc}?",
]
CONSTRAINTS = [
    "Don't restart prod pods without my approval.",
    "We must keep the API backwards compatible.",
    "不要直接改 prod 的配置，必须先在 staging 验证。",
    "Only use read-only database credentials.",
]
DECISIONS = [
    "Let's go with raising the pool size to 400.",
    "We'll go with a 5s client timeout for {svc}.",
    "决定先回滚 {svc} 的上一个版本。",
]
CODE = [
    "def handle_{n}(request):",
    "    timeout = settings.CLIENT_TIMEOUT_{n}",
    "    return client.post(url, json=payload, timeout=timeout)",
    "class Worker{n}(BaseWorker):",
    "    max_threads = {a}",
    "# retry with backoff, see ticket OPS-{n}",
]


class SessionMaker:
    """Seeded agent sessions of an exact number of events, ending with the user's new ask."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.calls = 0

    def tool_output(self, kind: str, svc: str) -> tuple[str, str]:
        """(output, a distinctive token of it a reply may quote)."""
        rng = self.rng
        pod = f"{svc}-{rng.randrange(16**4):04x}"
        if kind == "logs":
            lines = []
            for n in range(rng.randint(40, 250)):
                message = rng.choice(LOG_MESSAGES).format(
                    ms=rng.randint(3, 4000),
                    pct=rng.randint(40, 99),
                    a=rng.randint(1, 200),
                    q=rng.randint(0, 1000),
                    n=rng.randint(1, 5),
                )
                lines.append(
                    f"2024-05-01T10:{n % 60:02d}:{rng.randint(0, 59):02d}Z INFO {pod} {message}"
                )
            token = pod
            if rng.random() < 0.4:
                error = rng.choice(ERRORS)
                lines.insert(rng.randrange(len(lines)), f"2024-05-01T10:59:59Z ERROR {pod} {error}")
                token = f"{pod} {error}"
            return "\n".join(lines), token
        if kind == "search":
            hits = [
                f"{n + 1}. {svc}/src/{rng.choice(['client', 'pool', 'config'])}_{n}.py:"
                f"{rng.randint(1, 400)}: timeout = {rng.randint(1, 30)}s"
                for n in range(rng.randint(8, 40))
            ]
            return "\n".join(hits), hits[0].split(":")[0].split(" ")[1]
        if kind == "file":
            n = rng.randint(10, 99)
            lines = [
                rng.choice(CODE).format(n=n + i, a=rng.randint(50, 400))
                for i in range(rng.randint(60, 300))
            ]
            return "\n".join(lines), f"CLIENT_TIMEOUT_{n}"
        failed = rng.random() < 0.3
        lines = [
            f"tests/test_{svc.replace('-', '_')}.py::test_case_{i} PASSED"
            for i in range(rng.randint(20, 120))
        ]
        if failed:
            lines.append(
                f"tests/test_{svc.replace('-', '_')}.py::test_timeout FAILED AssertionError"
            )
        lines.append(f"{len(lines)} passed in {rng.randint(2, 90)}.{rng.randint(0, 99)}s")
        return "\n".join(lines), lines[-1].split(" ")[0]

    def turn(self) -> list[dict[str, Any]]:
        """A user ask, one to three tool calls with results, and the agent's reply."""
        rng = self.rng
        svc = rng.choice(SERVICES)
        roll = rng.random()
        if roll < 0.1:
            ask = rng.choice(CONSTRAINTS)
        elif roll < 0.18:
            ask = rng.choice(DECISIONS).format(svc=svc)
        else:
            ask = rng.choice(ASKS).format(svc=svc)
        events: list[dict[str, Any]] = [{"role": "user", "content": ask}]
        quotable = []
        for _ in range(rng.randint(1, 3)):
            kind = rng.choice(["logs", "search", "file", "tests"])
            self.calls += 1
            call = f"call_{self.calls}"
            events.append({"role": "assistant", "content": f"Running {kind} on {svc}."})
            output, token = self.tool_output(kind, svc)
            events.append(
                {
                    "role": "tool",
                    "content": output,
                    "tool_call_id": call,
                    "metadata": {"tool_name": kind},
                }
            )
            quotable.append(token)
        if rng.random() < 0.5:
            found = rng.choice(quotable)
            reply = f"Found it: {found} is where {svc} goes wrong; next I check its callers."
        else:
            reply = f"Nothing conclusive in {svc} there; moving on to the next component."
        events.append({"role": "assistant", "content": reply})
        return events

    def session(self, size: int) -> list[dict[str, Any]]:
        events = [{"role": "user", "content": "createOrder times out in prod-k8s; find out why."}]
        while True:
            turn = self.turn()
            if len(events) + len(turn) > size - 1:
                break
            events += turn
        while len(events) < size - 1:  # short exchanges to land on the exact size
            role = "assistant" if events[-1]["role"] == "user" else "user"
            text = "Noted." if role == "assistant" else "Go on."
            events.append({"role": role, "content": text})
        if events[-1]["role"] == "user":
            events[-1] = {"role": "assistant", "content": "Noted; continuing."}
        events.append(
            {"role": "user", "content": "Summarise where we are and raise the pool to 400."}
        )
        return events


def load(tenant: Any, sizes: list[int]) -> dict[int, str]:
    """One session per size, appended in batches as agents do; returns session ids."""
    from memories.write.candidates import Candidate
    from memories.write.services import proposals_submit
    from transcripts.services import EventIn, events_append

    ids = {}
    for size in sizes:
        session_id = f"bench-{size}"
        events = SessionMaker(size).session(size)
        for start in range(0, len(events), 20):
            batch = events[start : start + 20]
            result = events_append(
                tenant=tenant,
                session_id=session_id,
                user_id="bench-user",
                task_id="bug456",
                events=[
                    EventIn(
                        role=e["role"],
                        content=e["content"],
                        tool_call_id=e.get("tool_call_id", ""),
                        metadata=e.get("metadata", {}),
                    )
                    for e in batch
                ],
            )
            message_ids = [m for _, m in result.ids]
            proposals_submit(
                tenant=tenant,
                candidates=[
                    Candidate(
                        user_id="bench-user",
                        session_id=session_id,
                        task_id="bug456",
                        memory_type="decision",
                        subtype="next_step",
                        summary=f"Next: check the callers seen in events {start + 1}+",
                        message_ids=tuple(message_ids[-2:]),
                        verified=True,
                        confidence=0.9,
                        importance=0.6,
                    )
                ],
            )
        ids[size] = session_id
    return ids


def near_field_ok(tenant: Any, body: dict[str, Any]) -> tuple[bool, str]:
    """The latest user message, the one before it and the replies to that one are verbatim."""
    from transcripts.selectors import events_after, session_for

    session = session_for(tenant=tenant, session_id=body["session_id"])
    events = events_after(session=session, limit=session.event_count).events
    users = [i for i, e in enumerate(events) if e["role"] == "user"]
    wanted = [events[users[-1]], events[users[-2]]]
    wanted += [e for e in events[users[-2] + 1 : users[-1]] if e["role"] == "assistant"]
    messages = {m["id"]: m for m in body["messages"]}
    for event in wanted:
        message = messages.get(event["id"])
        if (
            message is None
            or message["state"] != "verbatim"
            or event["content"] not in body["context"]
        ):
            return False, f"#{event['seq']} did not survive verbatim"
    return True, f"{len(wanted)} turns verbatim"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="50,200,1000")
    parser.add_argument("--budgets", default="4000,16000,64000")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    run = uuid.uuid4().hex[:8]
    storage = Path(tempfile.mkdtemp(prefix=f"bench-compress-{run}-"))
    django_setup(
        migrate=True,
        REDIS_KEY_PREFIX=f"bench-compress-{run}",
        CELERY_QUEUE=f"bench-compress-{run}",
        CELERY_TASK_ALWAYS_EAGER="1",  # extraction runs inline on each append
        TRANSCRIPT_STORAGE=str(storage / "transcripts"),
        SECURE_COOKIES="0",
    )
    from django.urls import reverse
    from rest_framework.test import APIClient

    from memories.compression.plan import compress
    from memories.stm.selectors import stm_items_for
    from profiles.services.api_keys import api_key_create
    from profiles.services.tenants import tenant_create, tenant_delete
    from transcripts.selectors import events_after, session_for

    sizes = [int(s) for s in args.sizes.split(",")]
    budgets = [int(b) for b in args.budgets.split(",")]
    tenant = tenant_create(slug=f"bench-compress-{run}", name="Compression benchmark")
    failures = 0
    try:
        started = time.perf_counter()
        sessions = load(tenant, sizes)
        print(f"loaded {len(sizes)} sessions in {time.perf_counter() - started:.1f}s (run {run})")
        _, secret = api_key_create(tenant=tenant, name="bench", scopes=["read"])
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        print(
            f"{'events':>6} {'items':>5} {'budget':>6} {'before':>8} {'after':>6} {'ratio':>6} "
            f"{'mode':>6} {'stubbed':>7} {'folded':>6} {'fits':>4} "
            f"{'median ms':>9} {'p95 ms':>7} {'plan ms':>7}  near field"
        )
        for size in sizes:
            session_id = sessions[size]
            url = reverse("memories:compress", kwargs={"session_id": session_id})
            session = session_for(tenant=tenant, session_id=session_id)
            events = events_after(session=session, limit=session.event_count).events
            items = stm_items_for(
                tenant=tenant, user_id="bench-user", session_id=session_id, limit=500
            ).items
            for budget in budgets:
                times, plan_times = [], []
                body: dict[str, Any] = {}
                client.post(url, {"budget_tokens": budget}, format="json")  # warm-up
                for _ in range(args.runs):
                    began = time.perf_counter()
                    response = client.post(url, {"budget_tokens": budget}, format="json")
                    times.append((time.perf_counter() - began) * 1000)
                    if response.status_code != 200:
                        raise SystemExit(f"{response.status_code}: {response.content[:300]!r}")
                    body = response.json()
                    began = time.perf_counter()
                    compress(events=events, items=items, budget_tokens=budget, task_id="bug456")
                    plan_times.append((time.perf_counter() - began) * 1000)
                ok, detail = near_field_ok(tenant, body)
                failures += not ok
                tokens = body["tokens"]
                mode = "formal" if body["summary"] else "light" if body["stubbed"] else "none"
                times.sort()
                p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
                print(
                    f"{size:>6} {len(items):>5} {budget:>6} {tokens['before']:>8} "
                    f"{tokens['after']:>6} {tokens['after'] / tokens['before']:>6.3f} {mode:>6} "
                    f"{len(body['stubbed']):>7} {len(body['folded']):>6} "
                    f"{'yes' if body['within_budget'] else 'no':>4} "
                    f"{statistics.median(times):>9.1f} {p95:>7.1f} "
                    f"{statistics.median(plan_times):>7.1f}  {'PASS' if ok else 'FAIL'} ({detail})"
                )
    finally:
        try:
            tenant_delete(tenant=tenant)
        finally:
            clear_prefix_keys()
            shutil.rmtree(storage, ignore_errors=True)
        print("removed everything written")
    print("near field:", "PASS" if not failures else f"FAIL ({failures})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
