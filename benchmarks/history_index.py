"""Episodic history on LoCoMo (development split): indexing throughput, search latency and
evidence recall of `history_search` alone.

Every conversation is appended as transcript events (one service session per LoCoMo session,
event ids `<conversation>:<dia_id>`, the session's date as each event's `created_at`, the
speaker in `metadata.speaker`), exactly as an agent would. The history outbox is then drained
by the service's own drain (batched embedding) and timed: events/s, and the share spent
embedding. Every question of categories 1-4 is asked through `history_search` of that
conversation's user in each mode, and the script prints any@5/10, all@5/10 and frac@10 (hits
map back to dia_ids through their event ids) and per-mode latency p50/p95 (the query vector is
computed once per question and timed on its own, as recall does). Lexical search is also
measured with other weights of the context field, hybrid with other fusion weights.

    .venv/bin/python benchmarks/history_index.py                    # entries embedded alone
    .venv/bin/python benchmarks/history_index.py --embed-context    # context embedded too

Baselines on raw turns (../shared/data/locomo/README.md): BM25 any@10 62.6, e5 60.7, RRF 68.3.
Runs against the local stores in a PostgreSQL database, transcript folder, index, collection
and key prefix of its own, and removes all of it afterwards.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from datetime import timedelta

from _setup import (
    LOCOMO,
    clear_prefix_keys,
    django_setup,
    evidence_ids,
    session_names,
    session_start,
    turn_text,
)

RUN = uuid.uuid4().hex[:8]
KS = (5, 10)
DIA = re.compile(r"D\d+:\d+")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(int(len(ordered) * share) - 1, 0)]


class TimedEmbedder:
    """The configured embedder, timing its passage calls and recording their sizes."""

    def __init__(self, real) -> None:  # type: ignore[no-untyped-def]
        self.real, self.seconds, self.calls = real, 0.0, []
        self.dim, self.model_name = real.dim, real.model_name

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return self.real.embed_passages(texts)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls.append(len(texts))

    def embed_query(self, text):  # type: ignore[no-untyped-def]
        return self.real.embed_query(text)


def fusion_grid(questions, vectors, tenant, history_search) -> None:  # type: ignore[no-untyped-def]
    """any@10 / all@10 of weighted RRF over a grid, from each branch's top 50 (the same fusion
    as `history_search`, computed here so one pass per branch serves every combination)."""
    from django.conf import settings

    def ranked(mode: str, **overrides: float) -> list[list[str]]:
        saved = {name: getattr(settings, name) for name in overrides}
        for name, value in overrides.items():
            setattr(settings, name, value)
        try:
            return [
                [
                    hit.event_id.split(":", 1)[1]
                    for hit in history_search(
                        tenant=tenant,
                        user_id=user,
                        query=question,
                        k=50,
                        mode=mode,
                        query_vector=vector,
                        timeout=10.0,
                    ).hits
                ]
                for (user, question, _), vector in zip(questions, vectors, strict=True)
            ]
        finally:
            for name, value in saved.items():
                setattr(settings, name, value)

    vector_lists = ranked("vector")
    print("offline fusion grid (any@10 / all@10):")
    for context_weight in (0.3, 0.6):
        lexical_lists = ranked("lexical", HISTORY_CONTEXT_WEIGHT=context_weight)
        for rrf_k in (60, 20, 10):
            cells = []
            for vector_weight in (1.0, 0.7, 0.5, 0.3):
                any10 = all10 = 0
                for (_, _, evidence), lex, vec in zip(
                    questions, lexical_lists, vector_lists, strict=True
                ):
                    scores: dict[str, float] = {}
                    for weight, ids in ((1.0, lex), (vector_weight, vec)):
                        for rank, dia in enumerate(ids, start=1):
                            scores[dia] = scores.get(dia, 0.0) + weight / (rrf_k + rank)
                    top = set(sorted(scores, key=lambda d: (-scores[d], d))[:10])
                    found = sum(e in top for e in evidence)
                    any10 += found > 0
                    all10 += found == len(evidence)
                n = len(questions)
                cells.append(f"v{vector_weight}: {100 * any10 / n:.1f}/{100 * all10 / n:.1f}")
            print(f"  context {context_weight}, k {rrf_k}: " + "  ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embed-context", action="store_true", help="embed context + text")
    parser.add_argument("--limit", type=int, default=0, help="ask only this many questions")
    parser.add_argument(
        "--grid", action="store_true", help="also fuse the branches offline over a weight grid"
    )
    parser.add_argument("--grid-only", action="store_true", help="the grid, not the table")
    args = parser.parse_args()
    import psycopg

    # Stopped from outside, still remove everything it made (the `finally` blocks run).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    database = f"bench_history_{RUN}"
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as pg:
        pg.execute(f'CREATE DATABASE "{database}"')
    folder = tempfile.mkdtemp(prefix="bench-history-")
    try:
        run(args, database, folder)
    finally:
        from django.db import connections

        connections.close_all()
        shutil.rmtree(folder, ignore_errors=True)
        with psycopg.connect(
            "postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True
        ) as pg:
            pg.execute(f'DROP DATABASE IF EXISTS "{database}"')


def run(args: argparse.Namespace, database: str, folder: str) -> None:
    django_setup(
        migrate=True,
        DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{database}",
        TRANSCRIPT_STORAGE=folder,
        ELASTICSEARCH_INDEX_PREFIX=f"bench-history-{RUN}",
        MILVUS_COLLECTION_PREFIX=f"bench_history_{RUN}",
        REDIS_KEY_PREFIX=f"bench-history-{RUN}",
        HISTORY_EMBED_CONTEXT="1" if args.embed_context else "0",
    )
    from django.conf import settings

    from memories.history import services as history_services
    from memories.history.models import HistoryOutbox
    from memories.history.search import history_search_index
    from memories.history.selectors import history_search
    from memories.history.vectors import history_vector_index
    from memories.ltm.embedder import embedder, query_vector
    from memoryproject import redis_keys as keys
    from memoryproject.redis_client import redis_connection
    from profiles.services.tenants import tenant_create, tenant_delete
    from transcripts.reactions import register_append_reactions
    from transcripts.services import EventIn, events_append

    # Only history is measured: extraction is not run, and no drain task is queued (the flag
    # says one is pending), so the drain below does all the indexing.
    register_append_reactions(within=[history_services.history_on_append])
    redis_connection().set(keys.history_drain_scheduled(), "1", ex=24 * 3600)
    conversations = json.loads(LOCOMO.read_text())
    tenant = tenant_create(slug=f"bench-history-{RUN}", name="History benchmark")
    history_search_index().ensure()
    history_vector_index().ensure()
    try:
        started = time.perf_counter()
        appended = 0
        for conversation in conversations:
            user = conversation["sample_id"]
            sessions = conversation["conversation"]
            for name in session_names(conversation):
                start = session_start(sessions[f"{name}_date_time"])
                events = [
                    EventIn(
                        role="user" if turn["speaker"] == sessions["speaker_a"] else "assistant",
                        content=turn_text(turn),
                        message_id=f"{user}:{turn['dia_id']}",
                        metadata={"speaker": turn["speaker"]},
                        occurred_at=start + timedelta(seconds=30 * i),
                    )
                    for i, turn in enumerate(sessions[name])
                ]
                events_append(
                    tenant=tenant, session_id=f"{user}-{name}", user_id=user, events=events
                )
                appended += len(events)
        append_seconds = time.perf_counter() - started
        pending = history_services.history_lag()["pending_events"]
        print(
            f"appended {appended} turns of {len(conversations)} conversations in "
            f"{append_seconds:.1f}s; {pending} events waiting in "
            f"{HistoryOutbox.objects.count()} outbox rows"
        )

        timed = TimedEmbedder(embedder())
        history_services.embedder = lambda: timed  # type: ignore[assignment]
        started = time.perf_counter()
        indexed = drains = 0
        while True:
            result = history_services.history_outbox_drain()
            indexed += result.indexed
            drains += 1
            if not result.more:
                break
        drain_seconds = time.perf_counter() - started
        print(
            f"indexed {indexed} entries in {drain_seconds:.1f}s: "
            f"{appended / drain_seconds:.1f} events/s over {drains} drains "
            f"(HISTORY_DRAIN_EVENTS={settings.HISTORY_DRAIN_EVENTS}, "
            f"{len(timed.calls)} embedding calls of <= {settings.HISTORY_EMBED_BATCH}; "
            f"embedding {100 * timed.seconds / drain_seconds:.0f}% of the time, "
            f"stores and transcript reads the rest); embedded: "
            f"{'context + text' if args.embed_context else 'text alone'}"
        )

        questions = []
        for conversation in conversations:
            sessions = conversation["conversation"]
            known = {t["dia_id"] for n in session_names(conversation) for t in sessions[n]}
            for qa in conversation["qa"]:
                evidence = evidence_ids(qa.get("evidence", []), known)
                if qa["category"] in (1, 2, 3, 4) and evidence:
                    questions.append((conversation["sample_id"], qa["question"], evidence))
        if args.limit:
            questions = questions[: args.limit]
        vectors, embed_ms = [], []
        for _, question, _ in questions:
            began = time.perf_counter()
            vectors.append(query_vector(question).tolist())
            embed_ms.append((time.perf_counter() - began) * 1000)

        def measure(mode: str, **overrides: float) -> tuple[dict[str, float], list[float]]:
            saved = {name: getattr(settings, name) for name in overrides}
            for name, value in overrides.items():
                setattr(settings, name, value)
            scores: dict[str, list[float]] = {
                **{f"any@{k}": [] for k in KS},
                **{f"all@{k}": [] for k in KS},
                "frac@10": [],
            }
            latency = []
            try:
                for (user, question, evidence), vector in zip(questions, vectors, strict=True):
                    began = time.perf_counter()
                    found = history_search(
                        tenant=tenant,
                        user_id=user,
                        query=question,
                        k=max(KS),
                        mode=mode,
                        query_vector=vector,
                        timeout=10.0,
                    )
                    latency.append((time.perf_counter() - began) * 1000)
                    ranked = [hit.event_id.split(":", 1)[1] for hit in found.hits]
                    for k in KS:
                        top = set(ranked[:k])
                        share = sum(e in top for e in evidence) / len(evidence)
                        scores[f"any@{k}"].append(share > 0)
                        scores[f"all@{k}"].append(share == 1)
                        if k == 10:
                            scores["frac@10"].append(share)
            finally:
                for name, value in saved.items():
                    setattr(settings, name, value)
            return {name: 100 * statistics.mean(v) for name, v in scores.items()}, latency

        print(f"{len(questions)} questions of categories 1-4 with evidence")
        columns = [*(f"any@{k}" for k in KS), *(f"all@{k}" for k in KS), "frac@10"]
        print(f"{'search':<42}" + "".join(f"{c:>9}" for c in columns) + "   p50 ms   p95 ms")
        runs: list[tuple[str, str, dict[str, float]]] = [
            ("lexical, context weight 0", "lexical", {"HISTORY_CONTEXT_WEIGHT": 0.0}),
            ("lexical, context weight 0.3", "lexical", {"HISTORY_CONTEXT_WEIGHT": 0.3}),
            ("lexical, context weight 0.6", "lexical", {"HISTORY_CONTEXT_WEIGHT": 0.6}),
            ("lexical, context weight 1.0", "lexical", {"HISTORY_CONTEXT_WEIGHT": 1.0}),
            ("vector", "vector", {}),
            ("hybrid (default settings)", "hybrid", {}),
            ("hybrid, lexical 1.0 / vector 0.7", "hybrid", {"HISTORY_VECTOR_WEIGHT": 0.7}),
            ("hybrid, RRF k 20", "hybrid", {"HISTORY_RRF_K": 20}),
            ("hybrid, context weight 0.6", "hybrid", {"HISTORY_CONTEXT_WEIGHT": 0.6}),
        ]
        if args.grid_only:
            runs = []
        for label, mode, overrides in runs:
            figures, latency = measure(mode, **overrides)
            cells = "".join(f"{figures[c]:9.1f}" for c in columns)
            p50, p95 = statistics.median(latency), percentile(latency, 0.95)
            print(f"{label:<42}{cells}  {p50:7.1f}  {p95:7.1f}")
        if args.grid or args.grid_only:
            fusion_grid(questions, vectors, tenant, history_search)
        print(
            f"query embedding (once per question, Redis-cached after): p50 "
            f"{statistics.median(embed_ms):.1f} ms, p95 {percentile(embed_ms, 0.95):.1f} ms"
        )
        print(
            f"settings: context turns {settings.HISTORY_CONTEXT_TURNS}, context weight "
            f"{settings.HISTORY_CONTEXT_WEIGHT}, RRF k {settings.HISTORY_RRF_K}, weights "
            f"lexical {settings.HISTORY_LEXICAL_WEIGHT} / vector {settings.HISTORY_VECTOR_WEIGHT}"
        )
        print("raw-turn baselines (README): BM25 any@10 62.6, e5-small 60.7, RRF 68.3")
    finally:
        history_search_index().drop()
        history_vector_index().drop()
        tenant_delete(tenant=tenant)
        clear_prefix_keys()


if __name__ == "__main__":
    main()
