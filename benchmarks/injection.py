"""What recall injects, and how much of it answers: end to end through the HTTP API, as routed,
with a real Celery worker, on the agent-question set (tests/data/agent_questions.json).

Every question is asked twice:

- **own**: of its persona, a user holding only that persona's statements;
- **everyone**: of one user (in a tenant of its own) holding every statement of the set, the
  size a real memory reaches: 24 personas' sessions, each at its own dates.

Questions: `cases` (about the user, `expects` the statements that answer), `topics` (one-word
queries an agent sends with only a keyword), `unrelated` (not about the user) and `near` (not
about the user, but sharing a word with one of their statements; `may_inject` names what would
change the answer). Printed per mode, split (tune, heldout) and language:

- cases and topics: **hit %** (an injected item or a standing rule of the constraints block
  names an expected statement's event, as `agent_questions.py` counts it), items
  per answer (median, p90), **relevant %** (the share of injected items naming an expected
  statement), mean injected tokens (`token_estimate`, profile blocks included);
- unrelated: **clean %** (no item injected);
- near: **no unrelated item %** (every injected item is one `may_inject` names, or none).

    .venv/bin/python benchmarks/injection.py                 # both modes
    .venv/bin/python benchmarks/injection.py --quick         # every fourth question, own mode
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
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
from _setup import django_setup
from agent_questions import (
    LANGS,
    SPLITS,
    event_ids,
    load,
    provenance_events,
    read_personas,
    statement_index,
)

RUN = os.environ.get("BENCH_INJECTION_RUN") or uuid.uuid4().hex[:8]
SERVICE = ServiceRun("bench-inj", RUN)
MODES = ("own", "everyone")
EVERYONE = "everyone"
K = 10
KINDS = ("cases", "topics", "unrelated", "near")


@dataclass
class Asked:
    mode: str
    kind: str
    question: dict[str, Any]
    expected: set[str]  # events whose injection answers (cases, topics) or is allowed (near)
    items: list[dict[str, Any]]
    tokens: int
    standing: set[str]  # events of the standing rules sent with the constraints block

    @property
    def hit(self) -> bool:
        """An injected item names an expected statement, or a standing rule does."""
        return any(provenance_events(item) & self.expected for item in self.items) or bool(
            self.standing & self.expected
        )

    @property
    def relevant(self) -> int:
        return sum(bool(provenance_events(item) & self.expected) for item in self.items)


def user_of(mode: str, persona: dict[str, Any]) -> str:
    return persona["id"] if mode == "own" else EVERYONE


def ask(
    api: Api,
    mode: str,
    kind: str,
    persona: dict[str, Any],
    question: dict[str, Any],
    *,
    cutoff: bool = True,
    k: int = K,
) -> Asked:
    """Ask where the set says: a new session, or the expected statement's session or task."""
    body: dict[str, Any] = {
        "user_id": user_of(mode, persona),
        "session_id": f"q-{uuid.uuid4().hex[:12]}",
        "query": question["question"],
        "k": k,
        "cutoff": cutoff,
    }
    expected: set[str] = set()
    for statement in [*question.get("expects", []), *question.get("may_inject", [])]:
        expected |= event_ids(persona["id"], statement)
    if question.get("expects"):
        session = statement_index(persona)[question["expects"][0]][0]
        if question.get("asked_in") in ("session", "task") and session["task_id"]:
            body["task_id"] = session["task_id"]
        if question.get("asked_in") == "session":
            body["session_id"] = f"{persona['id']}-{session['id']}"
    status, data, _ = api.call("POST", "/v1/recall", body)
    if status != 200:
        raise SystemExit(f"recall answered {status}: {str(data)[:300]}")
    standing = data.get("constraints_block", {}).get("standing", []) or []
    standing_events = {str(i) for rule in standing for i in rule.get("message_ids", [])}
    tokens = int(data["token_estimate"])
    return Asked(mode, kind, question, expected, data["items"], tokens, standing_events)


def pct(part: float, whole: int) -> str:
    return f"{100 * part / whole:5.1f}" if whole else "    -"


def report(answers: list[Asked]) -> None:
    groups: dict[tuple[str, str, str, str], list[Asked]] = defaultdict(list)
    for a in answers:
        groups[(a.mode, a.kind, a.question["split"], a.question["lang"])].append(a)
    print(
        f"\n{'mode':9} {'split':8} {'lang':4} | {'cases':>5} {'hit%':>6} {'items p50/p90':>13}"
        f" {'relev%':>6} {'tokens':>6} | {'topics':>6} {'hit%':>6} | {'unrel':>5} {'clean%':>6}"
        f" | {'near':>4} {'no-unrel%':>9}"
    )
    for mode in MODES:
        for split in SPLITS:
            for lang in LANGS:
                cases = groups.get((mode, "cases", split, lang), [])
                topics = groups.get((mode, "topics", split, lang), [])
                unrelated = groups.get((mode, "unrelated", split, lang), [])
                near = groups.get((mode, "near", split, lang), [])
                if not (cases or topics or unrelated or near):
                    continue
                counts = [len(a.items) for a in cases]
                spread = (
                    f"{statistics.median(counts):.0f} / {percentile(counts, 0.9):.0f}"
                    if counts
                    else "-"
                )
                tokens = statistics.mean(a.tokens for a in cases) if cases else 0.0
                hit = pct(sum(a.hit for a in cases), len(cases))
                relevant = pct(sum(a.relevant for a in cases), sum(counts))
                topic_hit = pct(sum(a.hit for a in topics), len(topics))
                clean = pct(sum(not a.items for a in unrelated), len(unrelated))
                near_clean = pct(sum(a.relevant == len(a.items) for a in near), len(near))
                print(
                    f"{mode:9} {split:8} {lang:4} | {len(cases):5} {hit:>6} {spread:>13}"
                    f" {relevant:>6} {tokens:6.0f} | {len(topics):6} {topic_hit:>6}"
                    f" | {len(unrelated):5} {clean:>6} | {len(near):4} {near_clean:>9}"
                )


def dump(answers: list[Asked], path: str) -> None:
    rows = [
        {
            "mode": a.mode,
            "kind": a.kind,
            "split": a.question["split"],
            "lang": a.question["lang"],
            "question": a.question["question"],
            "standing_hit": bool(a.standing & a.expected),
            "tokens": a.tokens,
            "items": [
                {
                    "source": item["source"],
                    "text": item["text"][:160],
                    "answers": item.get("answers", 0.0),
                    "answer_parts": item.get("answer_parts", {}),
                    "relevant": bool(provenance_events(item) & a.expected),
                }
                for item in a.items
            ],
        }
        for a in answers
    ]
    with open(path, "w", encoding="utf-8") as out:
        json.dump(rows, out, ensure_ascii=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=[*MODES, "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="every fourth question, own mode")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument(
        "--cutoff", choices=("on", "off"), default="on", help="off: the top k, as `cutoff: false`"
    )
    parser.add_argument("--dump", default="", help="write every answer's items here (JSON)")
    parser.add_argument("--k", type=int, default=K, help="at most this many items")
    args = parser.parse_args()
    modes = ("own",) if args.quick else MODES if args.mode == "both" else (args.mode,)
    django_setup(migrate=True, **SERVICE.env())
    from memories.services import stores_ensure

    personas = read_personas()
    stores_ensure()
    port = free_port()
    processes = start_service(SERVICE, port, args.web_workers)
    print(f"run {RUN}: service on port {port}, one worker")
    began = time.perf_counter()
    try:
        apis = {}
        for mode in modes:
            _, secret = tenant_with_key(slug=f"{SERVICE.prefix}-{mode}", name=f"Injection {mode}")
            apis[mode] = Api(port, secret)
            events = load(apis[mode], personas, datetime.now(UTC), user_of=partial(user_of, mode))
            print(f"{mode}: {events} events appended")
        lag = wait_for_worker(SERVICE, limit_seconds=1200)
        print(f"worker caught up {lag:.0f}s after the last write")
        asking = time.perf_counter()
        answers = []
        for mode in modes:
            for persona in personas:
                for kind in KINDS:
                    questions = persona.get(kind, [])
                    for question in questions[::4] if args.quick else questions:
                        answers.append(
                            ask(
                                apis[mode],
                                mode,
                                kind,
                                persona,
                                question,
                                cutoff=args.cutoff == "on",
                                k=args.k,
                            )
                        )
        print(f"{len(answers)} questions asked in {time.perf_counter() - asking:.0f}s")
        print(f"cut-off: {args.cutoff}")
        report(answers)
        if args.dump:
            dump(answers, args.dump)
    finally:
        stop(processes)
        remove_everything(SERVICE)
        print(f"run took {time.perf_counter() - began:.0f}s")


if __name__ == "__main__":
    main()
