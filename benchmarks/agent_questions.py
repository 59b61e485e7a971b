"""The questions agents ask about what their user said before, end to end: through the HTTP API,
as routed, with a real Celery worker.

The data is tests/data/agent_questions.json (its `_comment` says what each field means): end
users ("personas") whose statements are spread over two or three sessions, questions whose
answer is one of those statements, and unrelated questions asked of the same users.

1. Every persona's statements are appended as transcript events, one turn (the user message and
   the assistant's reply, if any) per request, session by session, oldest first, each session
   under its task, at the session's date (`days_ago` before today, at `at`); event ids
   `<persona>:<statement id>` and `<persona>:<statement id>:reply`. Whatever the service makes
   of them (extraction, the history index) is what recall can find; nothing else is written.
2. Once the worker has caught up, every question is asked through `POST /v1/recall` as routed
   (no `layers`), `k` 10, `explain` on: in a fresh session (`asked_in` new), in the expected
   statement's session and task (session), or in a fresh session carrying on its task (task).
3. A case is a **hit** when an injected item (`items`) names one of the expected statements'
   events in its provenance (`message_ids`, `event_ids`, `source_refs`), or a standing rule of
   the constraints block (`constraints_block.standing[].message_ids`) does; item hits and
   standing hits are counted apart as well. Standing rules are the user's newest live
   constraints and preferences, sent whatever the query, so a standing hit says the rule was
   there, not that the question found it. An unrelated question is **clean** when `items` is
   empty (standing rules do not count against it).

Printed for each split (tune, heldout) and language: cases, hit % (items, standing, either),
how often the first item is an expected one, items per answer, unrelated clean %; hit % per
category, per length and wording (new-session questions) and per `asked_in`; client-side p50 /
p95. `--verbose` lists every miss and every unclean unrelated question with what was injected
and the routing reasons (`explain.routing.<layer>.reasons / not_asked_because`).

The service (gunicorn) and the worker run under key, index and collection prefixes of their own;
everything written is removed afterwards unless --keep is given.

    .venv/bin/python benchmarks/agent_questions.py                   # both splits, both languages
    .venv/bin/python benchmarks/agent_questions.py --split tune --lang zh --verbose
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from datetime import time as clock
from typing import Any

from _service import (
    Api,
    ServiceRun,
    free_port,
    percentile,
    remove_everything,
    start_service,
    stop,
    tenant_with_key,
    wait_for_worker,
)
from _setup import ROOT, django_setup

DATA = ROOT / "tests" / "data" / "agent_questions.json"
# A run's data lives under prefixes of its own; BENCH_AQ_RUN names an earlier run kept with
# --keep, to ask its questions again without loading (--reuse) or to remove it (--remove).
RUN = os.environ.get("BENCH_AQ_RUN") or uuid.uuid4().hex[:8]
SERVICE = ServiceRun("bench-aq", RUN)
SPLITS = ("tune", "heldout")
LANGS = ("en", "zh")
TURN_SECONDS = 90  # between one statement and the next of a session
K = 10


# --- the data ------------------------------------------------------------------------------------
def read_personas() -> list[dict[str, Any]]:
    return json.loads(DATA.read_text())["personas"]


def event_ids(persona: str, statement: str) -> set[str]:
    """The transcript events a statement was appended as: the user message and its reply."""
    return {f"{persona}:{statement}", f"{persona}:{statement}:reply"}


def session_key(persona: str, session: str) -> str:
    return f"{persona}-{session}"


def statement_index(persona: dict[str, Any]) -> dict[str, tuple[dict, dict]]:
    """statement id -> (its session, the statement)."""
    return {st["id"]: (s, st) for s in persona["sessions"] for st in s["statements"]}


def selected(
    personas: list[dict[str, Any]], splits: Iterable[str], langs: Iterable[str], limit: int
) -> tuple[list[tuple[dict, dict]], list[tuple[dict, dict]]]:
    """(persona, case) and (persona, unrelated question) pairs of the splits and languages, at
    most `limit` of each (0: all), in file order."""
    splits, langs = set(splits), set(langs)
    cases = [
        (p, c) for p in personas for c in p["cases"] if c["split"] in splits and c["lang"] in langs
    ]
    unrelated = [
        (p, u)
        for p in personas
        for u in p["unrelated"]
        if u["split"] in splits and u["lang"] in langs
    ]
    if limit:
        cases, unrelated = cases[:limit], unrelated[:limit]
    return cases, unrelated


# --- loading ---------------------------------------------------------------------------------
def load(
    api: Api,
    personas: list[dict[str, Any]],
    today: datetime,
    user_of: Callable[[dict[str, Any]], str] = lambda persona: persona["id"],
) -> int:
    """Append every persona's statements, a turn per request, as `user_of(persona)` (the
    persona's own user by default); the number of events."""
    events = 0
    for persona in personas:
        for session in persona["sessions"]:
            start = datetime.combine(
                (today - timedelta(days=session["days_ago"])).date(),
                clock.fromisoformat(session["at"]),
                tzinfo=UTC,
            )
            for n, statement in enumerate(session["statements"]):
                at = start + timedelta(seconds=TURN_SECONDS * n)
                turn = [
                    {
                        "id": f"{persona['id']}:{statement['id']}",
                        "role": "user",
                        "content": statement["text"],
                        "created_at": at.isoformat(),
                    }
                ]
                if statement.get("reply"):
                    turn.append(
                        {
                            "id": f"{persona['id']}:{statement['id']}:reply",
                            "role": "assistant",
                            "content": statement["reply"],
                            "created_at": (at + timedelta(seconds=20)).isoformat(),
                        }
                    )
                api.ok(
                    "POST",
                    f"/v1/sessions/{session_key(persona['id'], session['id'])}/events",
                    {"user_id": user_of(persona), "task_id": session["task_id"], "events": turn},
                )
                events += len(turn)
    return events


# --- asking ----------------------------------------------------------------------------------
@dataclass
class Answer:
    persona: dict[str, Any]
    question: dict[str, Any]
    data: dict[str, Any]
    latency_ms: float
    expected: set[str] = field(default_factory=set)

    @property
    def items(self) -> list[dict[str, Any]]:
        return self.data["items"]

    @property
    def standing(self) -> list[dict[str, Any]]:
        return self.data.get("constraints_block", {}).get("standing", []) or []

    def item_rank(self) -> int:
        """1-based position of the first item naming an expected event; 0 when none does."""
        for rank, item in enumerate(self.items, 1):
            if provenance_events(item) & self.expected:
                return rank
        return 0

    def standing_hit(self) -> bool:
        return any(
            {str(i) for i in rule.get("message_ids", [])} & self.expected for rule in self.standing
        )

    def asked_layers(self) -> list[str]:
        return sorted(
            layer
            for layer, decision in self.data["explain"]["routing"].items()
            if isinstance(decision, dict) and decision.get("asked")
        )


def provenance_events(item: dict[str, Any]) -> set[str]:
    """The transcript event ids an item's provenance names."""
    provenance = item.get("provenance") or {}
    found = {str(i) for i in provenance.get("message_ids", []) or []}
    found |= {str(i) for i in provenance.get("event_ids", []) or []}
    for ref in provenance.get("source_refs", []) or []:
        kind, _, value = str(ref).partition(":")
        if kind in ("message_ids", "event_ids") and value:
            found.add(value)
    return found


def ask(api: Api, persona: dict[str, Any], question: dict[str, Any]) -> Answer:
    """Ask `question` of the persona where it is asked: a new session, or the expected
    statement's session or task."""
    body: dict[str, Any] = {
        "user_id": persona["id"],
        "session_id": f"q-{uuid.uuid4().hex[:12]}",
        "query": question["question"],
        "k": K,
        "explain": True,
    }
    expected: set[str] = set()
    if "expects" in question:
        index = statement_index(persona)
        for statement in question["expects"]:
            expected |= event_ids(persona["id"], statement)
        session = index[question["expects"][0]][0]
        if question["asked_in"] in ("session", "task") and session["task_id"]:
            body["task_id"] = session["task_id"]
        if question["asked_in"] == "session":
            body["session_id"] = session_key(persona["id"], session["id"])
    began = time.perf_counter()
    status, data, _ = api.call("POST", "/v1/recall", body)
    elapsed = (time.perf_counter() - began) * 1000
    if status != 200:
        raise SystemExit(f"recall answered {status}: {str(data)[:300]}")
    return Answer(persona, question, data, elapsed, expected)


# --- figures ---------------------------------------------------------------------------------
def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}" if whole else "    -"


def report(cases: list[Answer], unrelated: list[Answer]) -> None:
    groups = [(s, lang) for s in SPLITS for lang in LANGS]
    by_group: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for answer in cases:
        by_group[(answer.question["split"], answer.question["lang"])].append(answer)
    clean_by_group: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for answer in unrelated:
        clean_by_group[(answer.question["split"], answer.question["lang"])].append(answer)

    print(
        f"\n{'split':<8} {'lang':<4} {'cases':>5} {'hit%':>6} {'items%':>6} {'stand%':>6} "
        f"{'top1%':>6} {'items/q':>7} | {'unrel':>5} {'clean%':>6} {'items/q':>7}"
    )
    for group in [*groups, ("all", "")]:
        answers = cases if group[0] == "all" else by_group.get(group, [])
        others = unrelated if group[0] == "all" else clean_by_group.get(group, [])
        if not answers and not others:
            continue
        n = len(answers)
        item = sum(a.item_rank() > 0 for a in answers)
        standing = sum(a.standing_hit() for a in answers)
        either = sum(a.item_rank() > 0 or a.standing_hit() for a in answers)
        top1 = sum(a.item_rank() == 1 for a in answers)
        per_q = statistics.mean(len(a.items) for a in answers) if answers else 0.0
        clean = sum(not a.items for a in others)
        other_q = statistics.mean(len(a.items) for a in others) if others else 0.0
        print(
            f"{group[0]:<8} {group[1]:<4} {n:>5} {pct(either, n):>6} {pct(item, n):>6} "
            f"{pct(standing, n):>6} {pct(top1, n):>6} {per_q:7.1f} | {len(others):>5} "
            f"{pct(clean, len(others)):>6} {other_q:7.1f}"
        )

    def table(title: str, key: Any, answers: list[Answer]) -> None:
        """Hit % (items or standing; items alone in brackets) per value of `key`, per group."""
        rows: dict[str, dict[tuple[str, str], list[Answer]]] = defaultdict(
            lambda: defaultdict(list)
        )
        for answer in answers:
            q = answer.question
            rows[key(q)][(q["split"], q["lang"])].append(answer)
        shown = [g for g in groups if g in by_group]
        header = "".join(f"{f'{s}/{lang}':>20}" for s, lang in shown)
        print(f"\n{title:<28}{header}{'all':>20}")
        for name in sorted(rows):
            cells = []
            for group in [*shown, None]:
                part = (
                    [a for g in shown for a in rows[name].get(g, [])]
                    if group is None
                    else rows[name].get(group, [])
                )
                if not part:
                    cells.append(f"{'-':>20}")
                    continue
                hits = sum(a.item_rank() > 0 or a.standing_hit() for a in part)
                items = sum(a.item_rank() > 0 for a in part)
                cells.append(f"{len(part):>5} {pct(hits, len(part))} ({pct(items, len(part))})")
            print(f"{name:<28}" + "".join(f"{c:>20}" for c in cells))

    print("\nhit % per group: n  hit% (items alone)")
    table("category", lambda q: q["category"], cases)
    new = [a for a in cases if a.question["asked_in"] == "new"]
    table("new session: length/wording", lambda q: f"{q['length']}/{q['wording']}", new)
    table("asked in", lambda q: q["asked_in"], cases)

    routed = Counter("+".join(a.asked_layers()) or "none" for a in cases)
    print("\ncases routed to: " + ", ".join(f"{k} {v}" for k, v in routed.most_common()))
    sources = Counter(item["source"] for a in cases for item in a.items)
    print("items of cases by source: " + ", ".join(f"{k} {v}" for k, v in sources.most_common()))
    hit_sources = Counter(a.items[a.item_rank() - 1]["source"] for a in cases if a.item_rank() > 0)
    firsts = ", ".join(f"{k} {v}" for k, v in hit_sources.most_common())
    print(f"first hitting item by source: {firsts}")
    leaked = Counter(item["source"] for a in unrelated for item in a.items)
    leaks = ", ".join(f"{k} {v}" for k, v in leaked.most_common()) or "-"
    print(f"items of unrelated questions by source: {leaks}")
    latency = [a.latency_ms for a in [*cases, *unrelated]]
    if latency:
        print(
            f"recall (client side): p50 {statistics.median(latency):.1f} ms, "
            f"p95 {percentile(latency, 0.95):.1f} ms over {len(latency)} requests"
        )


def routing_lines(answer: Answer) -> list[str]:
    lines = []
    for layer, decision in answer.data["explain"]["routing"].items():
        if not isinstance(decision, dict):
            continue
        if decision.get("asked"):
            lines.append(f"{layer}: asked: " + "; ".join(decision.get("reasons", [])))
        else:
            lines.append(f"{layer}: not asked: " + "; ".join(decision.get("not_asked_because", [])))
    profile = answer.data["explain"].get("query_profile", {})
    lines.append(
        f"query: intent {profile.get('intent')}, terms {profile.get('content_terms')}, "
        f"holding share {profile.get('holding_share')}, own world "
        f"{profile.get('own_world_score')} ({profile.get('own_world_memories')} near), "
        f"closest {profile.get('semantic_margin')}"
    )
    return lines


def injected_lines(answer: Answer) -> list[str]:
    lines = []
    for item in answer.items:
        mark = "*" if provenance_events(item) & answer.expected else " "
        lines.append(f"{mark} [{item['source']} {item['relevance']:.2f}] {item['text'][:110]}")
    for rule in answer.standing:
        hit = {str(i) for i in rule.get("message_ids", [])} & answer.expected
        lines.append(f"{'*' if hit else ' '} [standing] {rule['text'][:110]}")
    return lines


def verbose(cases: list[Answer], unrelated: list[Answer]) -> None:
    misses = [a for a in cases if not a.item_rank() and not a.standing_hit()]
    print(f"\n-- misses ({len(misses)}) --")
    for answer in misses:
        q = answer.question
        index = statement_index(answer.persona)
        print(
            f"\n{q['id']} [{q['split']}/{q['lang']} {q['category']} {q['length']} "
            f"{q['wording']} {q['asked_in']}] {q['question']}"
        )
        for statement in q["expects"]:
            print(f"  expects {statement}: {index[statement][1]['text']}")
        for line in injected_lines(answer) or ["(nothing injected)"]:
            print(f"  {line}")
        for line in routing_lines(answer):
            print(f"    {line}")
    unclean = [a for a in unrelated if a.items]
    print(f"\n-- unrelated questions that injected something ({len(unclean)}) --")
    for answer in unclean:
        q = answer.question
        shared = f" (shares {q['shares_word']!r})" if q.get("shares_word") else ""
        print(f"\n{q['id']} [{q['split']}/{q['lang']}] {q['question']}{shared}")
        for line in injected_lines(answer):
            print(f"  {line}")
        for line in routing_lines(answer):
            print(f"    {line}")


def dump(path: str, cases: list[Answer], unrelated: list[Answer]) -> None:
    rows = []
    for answer in [*cases, *unrelated]:
        rows.append(
            {
                **answer.question,
                "persona": answer.persona["id"],
                "item_rank": answer.item_rank() if answer.expected else None,
                "standing_hit": answer.standing_hit() if answer.expected else None,
                "items": [
                    {k: item[k] for k in ("source", "relevance", "score", "text", "provenance")}
                    for item in answer.items
                ],
                "standing": answer.standing,
                "routing": answer.data["explain"]["routing"],
                "query_profile": answer.data["explain"].get("query_profile"),
                "latency_ms": answer.latency_ms,
            }
        )
    with open(path, "w") as out:
        json.dump(rows, out, ensure_ascii=False, indent=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=[*SPLITS, "both"], default="both")
    parser.add_argument("--lang", choices=[*LANGS, "both"], default="both")
    parser.add_argument(
        "--limit", type=int, default=0, help="ask at most this many cases and unrelated questions"
    )
    parser.add_argument("--verbose", action="store_true", help="list misses and unclean answers")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--dump", default="", help="write every answer here (JSON)")
    parser.add_argument("--keep", action="store_true", help="keep what was written")
    parser.add_argument(
        "--reuse", action="store_true", help="ask again what BENCH_AQ_RUN's kept run loaded"
    )
    parser.add_argument(
        "--remove", action="store_true", help="remove what BENCH_AQ_RUN's kept run wrote"
    )
    args = parser.parse_args()
    splits = SPLITS if args.split == "both" else (args.split,)
    langs = LANGS if args.lang == "both" else (args.lang,)
    django_setup(migrate=True, **SERVICE.env())
    if args.remove:
        remove_everything(SERVICE)
        return
    from memories.services import stores_ensure

    cases, unrelated = selected(read_personas(), splits, langs, args.limit)
    personas = list({p["id"]: p for p, _ in [*cases, *unrelated]}.values())
    stores_ensure()
    port = free_port()
    processes = start_service(SERVICE, port, args.web_workers)
    print(f"run {RUN}: service on port {port}, one worker")
    began = time.perf_counter()
    try:
        _, secret = tenant_with_key(
            slug=f"{SERVICE.prefix}-t", name="Agent questions", reuse=args.reuse
        )
        api = Api(port, secret)
        if args.reuse:
            print("asking what an earlier run loaded")
        else:
            loading = time.perf_counter()
            events = load(api, personas, datetime.now(UTC))
            loaded = time.perf_counter() - loading
            lag = wait_for_worker(SERVICE, limit_seconds=900)
            print(
                f"{len(personas)} users, {events} events appended in {loaded:.0f}s; "
                f"worker caught up {lag:.0f}s after the last write"
            )
        asking = time.perf_counter()
        case_answers = [ask(api, p, c) for p, c in cases]
        unrelated_answers = [ask(api, p, u) for p, u in unrelated]
        print(
            f"{len(case_answers)} cases and {len(unrelated_answers)} unrelated questions asked "
            f"in {time.perf_counter() - asking:.0f}s"
        )
        report(case_answers, unrelated_answers)
        if args.verbose:
            verbose(case_answers, unrelated_answers)
        if args.dump:
            dump(args.dump, case_answers, unrelated_answers)
    finally:
        stop(processes)
        if args.keep:
            print(f"kept everything written: BENCH_AQ_RUN={RUN} ... --reuse asks again")
        else:
            remove_everything(SERVICE)
        print(f"run took {time.perf_counter() - began:.0f}s")


if __name__ == "__main__":
    main()
