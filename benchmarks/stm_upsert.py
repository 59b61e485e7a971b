"""Short-term memory: upserts/s with 4 clients, and the time to sweep 1,000,000 expired items.

Runs the service's own store code (the Lua upsert and sweep scripts, the expiry job) against
the local Redis under a key prefix of its own, checks every index against the items, and
removes everything it wrote. Targets: >= 10,000 upserts/s; sweep of 1,000,000 items < 60 s.

    .venv/bin/python benchmarks/stm_upsert.py            # --items 1000000 --seconds 10
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import random
import statistics
import time
import uuid

from _setup import django_setup, locomo_turns

PREFIX = f"bench-stm-{uuid.uuid4().hex[:8]}"
CLIENTS = 4
PREPARED_PER_CLIENT = 60_000
OWNERS = 1000
TENANT_ID = 1


def make_item(owner_n: int, fact: str, n: int | str, *, now: float, expires_at: float):  # noqa: ANN201
    from memories.stm.items import StmItem

    fingerprint = hashlib.sha256(fact.encode()).hexdigest()[:24]
    return StmItem(
        id=f"stm_{owner_n}_{uuid.uuid4().hex[:16]}",
        tenant_id=TENANT_ID,
        end_user_id=owner_n,
        user_id=f"u_{owner_n}",
        session_id=f"s_{owner_n % 7}",
        task_id=f"task_{owner_n % 3}",
        memory_type=random.choice(["fact", "decision", "constraint", "observation"]),
        summary=fact[:200],
        fingerprint=fingerprint,
        fingerprints=[fingerprint],
        entities=[w for w in fact.split()[:3] if w.isalpha()],
        tags=["benchmark"],
        source={"kind": "user", "message_ids": [f"m{n}"], "tool_call_ids": []},
        created_at=now,
        updated_at=now,
        last_access_at=now,
        expires_at=expires_at,
        sessions=[f"s_{owner_n % 7}"],
    )


def prepared_batches(client_n: int, batch: int, facts: list[str]) -> list[list]:
    """One client's batches, each of one user's items (as one session's extraction or
    proposals are); a quarter of the items repeat an earlier fact (a merge)."""
    rng = random.Random(client_n)
    now = time.time()
    batches = []
    for b in range(PREPARED_PER_CLIENT // batch):
        owner = rng.randrange(1, OWNERS + 1)
        batches.append(
            [
                make_item(
                    owner,
                    facts[rng.randrange(len(facts))]
                    if rng.random() < 0.25
                    else f"{rng.choice(facts)} #{client_n}-{b}-{k}",
                    f"{client_n}-{b}-{k}",
                    now=now,
                    expires_at=now + 3600,
                )
                for k in range(batch)
            ]
        )
    return batches


def upsert_worker(args: tuple[int, int, list[str], float, float]) -> tuple[int, float]:
    """One client: build its batches, wait for the common start time, upsert until the end."""
    client_n, batch, facts, start_at, seconds = args
    from memories.stm.store import stm_store

    store = stm_store()
    batches = prepared_batches(client_n, batch, facts)
    time.sleep(max(0.0, start_at - time.time()))
    done = 0
    started = time.perf_counter()
    deadline = started + seconds
    for items in batches:
        if time.perf_counter() >= deadline:
            break
        store.upsert(items=items, now=time.time())
        done += len(items)
    return done, time.perf_counter() - started


def load_worker(args: tuple[int, int, list[str]]) -> int:
    """Write `count` distinct items that are already expired."""
    client_n, count, facts = args
    from memories.stm.store import stm_store

    store = stm_store()
    written = 0
    now = time.time()
    while written < count:
        size = min(500, count - written)
        items = [
            make_item(
                (written + k) % OWNERS + 1,
                f"{facts[(written + k) % len(facts)]} #{client_n}-{written + k}",
                written + k,
                now=now,
                expires_at=now - 1,
            )
            for k in range(size)
        ]
        store.upsert(items=items, now=now - 3600)
        written += size
    return written


def consistency(sample: int) -> int:
    from memories.stm.store import stm_store
    from memoryproject.redis_keys import Owner

    problems = 0
    for owner_n in random.sample(range(1, OWNERS + 1), sample):
        problems += len(stm_store().index_problems(Owner(TENANT_ID, owner_n)))
    return problems


def remaining_keys() -> int:
    from memoryproject.redis_client import redis_connection

    return sum(1 for _ in redis_connection().scan_iter(match=f"{PREFIX}:*", count=5000))


def cleanup() -> None:
    from memoryproject.redis_client import redis_connection

    client = redis_connection()
    batch = []
    for key in client.scan_iter(match=f"{PREFIX}:*", count=5000):
        batch.append(key)
        if len(batch) == 5000:
            client.delete(*batch)
            batch = []
    if batch:
        client.delete(*batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--batches", default="1,20")
    args = parser.parse_args()

    django_setup(REDIS_KEY_PREFIX=PREFIX)
    from memories.stm.services import stm_expire_sweep
    from memories.stm.store import stm_store

    stm_store().load_scripts()
    facts = [turn["content"] for turn in locomo_turns()]
    pool = multiprocessing.get_context("fork").Pool(CLIENTS)
    try:
        print(
            f"stm upsert: {CLIENTS} clients, {args.rounds} rounds of {args.seconds:.0f}s, "
            f"prefix {PREFIX}"
        )
        for batch in (int(b) for b in args.batches.split(",")):
            # Several rounds, median reported: this machine's speed varies from run to run.
            rates = []
            for round_n in range(args.rounds + 1):  # round 0 warms up and is not counted
                # Items are built before the common start time: this measures the store.
                start_at = time.time() + 15
                seconds = args.seconds if round_n else 2.0
                jobs = [(n, batch, facts, start_at, seconds) for n in range(CLIENTS)]
                results = pool.map(upsert_worker, jobs)
                total = sum(count for count, _ in results)
                if round_n:
                    rates.append(total / max(seconds for _, seconds in results))
                if round_n < args.rounds:
                    cleanup()  # every round starts from an empty store
            print(
                f"batch={batch:<3} upserts/s median={statistics.median(rates):>7.0f}  "
                f"rounds: {', '.join(f'{r:.0f}' for r in rates)}"
            )
        print(f"index consistency after upserts (50 users): {consistency(50)} problems")
        cleanup()

        started = time.perf_counter()
        per_client = args.items // CLIENTS
        loaded = sum(pool.map(load_worker, [(n, per_client, facts) for n in range(CLIENTS)]))
        print(f"loaded {loaded} expired items in {time.perf_counter() - started:.1f}s")
        started = time.perf_counter()
        result = stm_expire_sweep(budget_seconds=600)
        elapsed = time.perf_counter() - started
        print(
            f"sweep: removed {result.removed} items of {result.owners} users in {elapsed:.1f}s "
            f"({result.removed / elapsed:,.0f} items/s); work left: {result.more}"
        )
        print(f"keys left after the sweep: {remaining_keys()} (expected 0)")
        print("targets: >= 10,000 upserts/s; sweep of 1,000,000 items < 60 s")
    finally:
        pool.close()
        cleanup()


if __name__ == "__main__":
    main()
