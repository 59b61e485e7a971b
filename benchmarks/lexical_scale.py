"""History's lexical search as memory grows: each engine's search time at 10,000, 100,000 and
1,000,000 history entries spread over 1,000 users.

Entries are LoCoMo turns (development split) with their two previous turns as context, dealt
round-robin to users `u0000`..`u0999` (each user holds a thousandth of them, in sessions of 20
turns); every size adds to the one before. At each size, the LoCoMo questions (categories 1-4)
are searched as a history search would: one user's entries, `bm25_text` of the question, the
context at its weight, 30 results. Printed per engine and size: search p50 / p95 (the engine's
own call, in process), the write rate while filling, and the index's size on disk.

Engines: `postgres` (PostgreSQL's full-text index, `memories/history/pg_search.py`) and
`elasticsearch` (whatever ELASTICSEARCH_URL runs: the local stand-in reads every document on
every query, so it is measured up to `--es-max` entries only).

    .venv/bin/python benchmarks/lexical_scale.py                  # 10k, 100k, 1M
    .venv/bin/python benchmarks/lexical_scale.py --quick          # 10k and 100k, postgres only
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta

from _service import percentile
from _setup import LOCOMO, django_setup, session_names, turn_text

SIZES = (10_000, 100_000, 1_000_000)
USERS = 1000
SESSION_TURNS = 20
QUESTIONS = 200
CATEGORIES = (1, 2, 3, 4)


def turns_and_questions() -> tuple[list[tuple[str, str]], list[str]]:
    """(text, context) of every LoCoMo turn, and the questions."""
    conversations = json.loads(LOCOMO.read_text())
    turns: list[tuple[str, str]] = []
    questions: list[str] = []
    for conversation in conversations:
        sessions = conversation["conversation"]
        for name in session_names(conversation):
            texts = [turn_text(turn) for turn in sessions[name]]
            for n, text in enumerate(texts):
                turns.append((text, " ".join(texts[max(0, n - 2) : n])))
        questions += [
            qa["question"] for qa in conversation["qa"] if qa.get("category") in CATEGORIES
        ]
    return turns, questions


def documents(start: int, stop: int, turns: list[tuple[str, str]], terms: dict[str, str], run: str):
    from memories.history.documents import HistoryDocument

    base = datetime(2023, 1, 1, tzinfo=UTC)
    for n in range(start, stop):
        text, context = turns[n % len(turns)]
        user = n % USERS
        seq = n // USERS
        session_pk = user * 100_000 + seq // SESSION_TURNS
        yield HistoryDocument(
            entry_id=f"hist_{run}_{n}",
            tenant_id=f"scale-{run}",
            user_id=f"u{user:04d}",
            session_id=f"s-{session_pk}",
            session_pk=session_pk,
            seq=seq,
            event_id=f"e-{n}",
            role="user",
            occurred_at=base + timedelta(minutes=seq),
            text=text,
            context=context,
            bm25_text=terms[text],
            bm25_context=terms[context],
        )


def fill(index, start: int, stop: int, turns, terms, run: str) -> float:
    """Write entries [start, stop) in batches; returns entries per second."""
    began = time.perf_counter()
    batch = []
    for document in documents(start, stop, turns, terms, run):
        batch.append(document)
        if len(batch) == 2000:
            index.upsert(documents=batch)
            batch = []
    if batch:
        index.upsert(documents=batch)
    return (stop - start) / (time.perf_counter() - began)


def measure(index, questions: list[str], run: str) -> list[float]:
    from django.conf import settings

    from memories.history.documents import HistoryScope
    from memories.ltm.text import bm25_text

    timings = []
    for n, question in enumerate(questions):
        scope = HistoryScope(tenant_id=f"scale-{run}", user_id=f"u{(n * 7) % USERS:04d}")
        text = bm25_text(question)
        began = time.perf_counter()
        index.search(
            text=text, scope=scope, limit=30, context_weight=settings.HISTORY_CONTEXT_WEIGHT
        )
        timings.append((time.perf_counter() - began) * 1000)
    return timings


def size_on_disk(engine: str) -> str:
    if engine != "postgres":
        return "-"
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size('memories_historylexicalentry')")
        return f"{cursor.fetchone()[0] / 2**20:.0f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k, postgres only")
    parser.add_argument("--engines", default="postgres,elasticsearch")
    parser.add_argument("--es-max", type=int, default=10_000)
    args = parser.parse_args()
    django_setup(migrate=True)
    from django.db import connection

    from memories.history.pg_search import PostgresHistoryIndex
    from memories.history.search import ElasticsearchHistoryIndex
    from memories.ltm.text import bm25_text
    from memoryproject.elasticsearch import elasticsearch_client

    run = uuid.uuid4().hex[:8]
    sizes = SIZES[:2] if args.quick else SIZES
    engines = ["postgres"] if args.quick else args.engines.split(",")
    turns, questions = turns_and_questions()
    questions = questions[:QUESTIONS]
    terms = {text: bm25_text(text) for pair in turns for text in pair}
    print(f"{len(turns)} LoCoMo turns, {len(questions)} questions, {USERS} users")
    print(f"{'engine':14} {'entries':>9} | {'write/s':>8} | {'p50 ms':>7} {'p95 ms':>7} | size")
    for engine in engines:
        if engine == "postgres":
            index = PostgresHistoryIndex()
        else:
            index = ElasticsearchHistoryIndex(elasticsearch_client(), f"scale-{run}")
            index.ensure()
        filled = 0
        try:
            for size in sizes:
                if engine == "elasticsearch" and size > args.es_max:
                    break
                rate = fill(index, filled, size, turns, terms, run)
                filled = size
                if engine == "postgres":
                    with connection.cursor() as cursor:
                        cursor.execute("ANALYZE memories_historylexicalentry")
                timings = measure(index, questions, run)
                print(
                    f"{engine:14} {size:>9,} | {rate:8.0f} | {statistics.median(timings):7.2f}"
                    f" {percentile(timings, 0.95):7.2f} | {size_on_disk(engine)}",
                    flush=True,
                )
        finally:
            if engine == "postgres":
                from memories.history.models import HistoryLexicalEntry

                HistoryLexicalEntry.objects.filter(tenant_id=f"scale-{run}").delete()
                with connection.cursor() as cursor:  # the next run measures no dead rows
                    cursor.execute("VACUUM memories_historylexicalentry")
            else:
                index.drop()


if __name__ == "__main__":
    main()
