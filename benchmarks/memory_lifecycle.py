"""Memory that ages and changes, end to end: through the HTTP API, as routed, with a real Celery
worker. Three parts, each printed per labelled part (`tune`, `held_out`) and language:

- `changes` (tests/data/memory_changes.jsonl): a user states a value in one session
  (`before`, thirty days ago) and changes it in a later one (`after`, ten days ago); then the
  question is asked in a new session. **Current** when the injection holds the new value and
  no line presents the old value as current (a line naming the old value counts only when it
  marks it as earlier or replaced). Also printed: the new value injected at all, the old value
  injected as current, per topic and per wording (`direct`, `cue`, `indirect`).
- `statements` (tests/data/everyday_statements.jsonl): each text is one user message of a user
  of its own; once the worker has read it, the user's live short-term items are read back.
  A statement **gives its item** when an item of the expected type holds the `keep` words
  whole; a stated rule (`rule`) counts when it became a constraint or a preference; a text that
  should give nothing (`none`) is **clean** when no item was made of it.
- `locomo` (benchmarks/lifecycle_locomo.py): the LoCoMo development conversations through the
  write path, promotion in stages with a reviewer approving, recall scored after each stage.

Each part runs under prefixes of its own; everything written is removed afterwards.

    .venv/bin/python benchmarks/memory_lifecycle.py                  # every part
    .venv/bin/python benchmarks/memory_lifecycle.py --parts changes,statements --quick
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from _service import (
    Api,
    ServiceRun,
    free_port,
    remove_everything,
    start_service,
    stop,
    tenant_with_key,
    wait_for_worker,
)
from _setup import ROOT, django_setup

CHANGES = ROOT / "tests" / "data" / "memory_changes.jsonl"
STATEMENTS = ROOT / "tests" / "data" / "everyday_statements.jsonl"
RUN = os.environ.get("BENCH_LIFECYCLE_RUN") or uuid.uuid4().hex[:8]
SERVICE = ServiceRun("bench-life", RUN)
PARTS = ("tune", "held_out")
LANGS = ("en", "zh")
K = 10
# A line naming an old value is no claim that it is current when it says it was replaced.
EARLIER = re.compile(
    r"earlier|replaced|superseded|no longer|previously|此前|以前|已被|已替换|已更新"
)


def read_rows(path: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def thin(rows: list[dict[str, Any]], quick: bool) -> list[dict[str, Any]]:
    """Every fourth row in quick mode (each part and language keeps its share)."""
    return rows[::4] if quick else rows


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}" if whole else "    -"


def user_event(event_id: str, text: str, at: datetime) -> dict[str, Any]:
    return {"id": event_id, "role": "user", "content": text, "created_at": at.isoformat()}


def recall(api: Api, user: str, query: str) -> dict[str, Any]:
    body = {
        "user_id": user,
        "session_id": f"q-{uuid.uuid4().hex[:12]}",
        "query": query,
        "k": K,
        "explain": True,
    }
    status, data, _ = api.call("POST", "/v1/recall", body)
    if status != 200:
        raise SystemExit(f"recall answered {status}: {str(data)[:300]}")
    return data


# --- changes ---------------------------------------------------------------------------------
@dataclass
class ChangeAnswer:
    row: dict[str, Any]
    text: str
    items: list[dict[str, Any]]

    def lines(self) -> list[str]:
        return [line for line in self.text.splitlines() if line.strip()]

    @property
    def has_new(self) -> bool:
        return self.row["new"].lower() in self.text.lower()

    @property
    def old_as_current(self) -> bool:
        old = self.row["old"].lower()
        return any(old in line.lower() and not EARLIER.search(line) for line in self.lines())

    @property
    def current(self) -> bool:
        return self.has_new and not self.old_as_current


def load_changes(api: Api, rows: list[dict[str, Any]], now: datetime) -> None:
    for row in rows:
        user = f"chg-{row['id']}"
        for name, days, text in (("a", 30, row["before"]), ("b", 10, row["after"])):
            at = now - timedelta(days=days)
            api.ok(
                "POST",
                f"/v1/sessions/{user}-{name}/events",
                {"user_id": user, "events": [user_event(f"{user}:{name}", text, at)]},
            )


def ask_changes(api: Api, rows: list[dict[str, Any]]) -> list[ChangeAnswer]:
    answers = []
    for row in rows:
        data = recall(api, f"chg-{row['id']}", row["question"])
        answers.append(ChangeAnswer(row, data.get("injection_text", ""), data["items"]))
    return answers


def report_changes(answers: list[ChangeAnswer], verbose: bool) -> None:
    print("\n== changes: the current value, and no superseded value as current ==")
    print(f"{'part':9} {'lang':4} {'cases':>5} {'current%':>8} {'new%':>6} {'old-as-cur%':>11}")
    for part, lang in [(p, lang) for p in PARTS for lang in LANGS]:
        group = [a for a in answers if a.row["part"] == part and a.row["lang"] == lang]
        print(
            f"{part:9} {lang:4} {len(group):5} {pct(sum(a.current for a in group), len(group)):>8}"
            f" {pct(sum(a.has_new for a in group), len(group)):>6}"
            f" {pct(sum(a.old_as_current for a in group), len(group)):>11}"
        )
    for field_name in ("style", "topic"):
        by: dict[str, list[ChangeAnswer]] = defaultdict(list)
        for answer in answers:
            by[answer.row[field_name]].append(answer)
        shown = ", ".join(
            f"{name} {pct(sum(a.current for a in group), len(group)).strip()}% ({len(group)})"
            for name, group in sorted(by.items())
        )
        print(f"current by {field_name}: {shown}")
    if verbose:
        for answer in answers:
            if answer.current:
                continue
            row = answer.row
            print(f"\n[{row['id']} {row['part']} {row['lang']} {row['style']}] {row['question']}")
            print(f"  before: {row['before']}\n  after:  {row['after']}")
            print(f"  new={row['new']!r} injected={answer.has_new} old-as-current="
                  f"{answer.old_as_current}")  # fmt: skip
            for line in answer.lines()[:12]:
                print(f"    | {line[:160]}")


# --- statements ------------------------------------------------------------------------------
RULE_TYPES = frozenset({"constraint", "preference"})


@dataclass
class StatementAnswer:
    row: dict[str, Any]
    items: list[dict[str, Any]] = field(default_factory=list)

    def _holds_keep(self, item: dict[str, Any]) -> bool:
        keep = self.row["keep"]
        return not keep or keep in item["summary"] or keep in (item.get("fact_value") or "")

    @property
    def expected_types(self) -> frozenset[str]:
        return RULE_TYPES if self.row["rule"] else frozenset({self.row["expect"]})

    @property
    def gives_item(self) -> bool:
        return any(
            i["memory_type"] in self.expected_types and self._holds_keep(i) for i in self.items
        )

    @property
    def any_item(self) -> bool:
        return bool(self.items)

    @property
    def keeps_whole(self) -> bool:
        return any(self._holds_keep(i) for i in self.items)


def load_statements(api: Api, rows: list[dict[str, Any]], now: datetime) -> None:
    for row in rows:
        user = f"st-{row['id']}"
        api.ok(
            "POST",
            f"/v1/sessions/{user}-a/events",
            {"user_id": user, "events": [user_event(f"{user}:a", row["text"], now)]},
        )


def read_statements(api: Api, rows: list[dict[str, Any]]) -> list[StatementAnswer]:
    answers = []
    for row in rows:
        data = api.ok("GET", f"/v1/users/st-{row['id']}/memories?limit=50")
        items = data["items"] if isinstance(data["items"], list) else data["items"]["results"]
        answers.append(StatementAnswer(row, items))
    return answers


def report_statements(answers: list[StatementAnswer], verbose: bool) -> None:
    print("\n== statements: the item each gives ==")
    print(
        f"{'part':9} {'lang':4} {'said':>5} {'item%':>6} {'any%':>6} {'whole%':>6}"
        f" {'rules':>5} {'rule%':>6} {'none':>4} {'clean%':>6}"
    )
    for part, lang in [(p, lang) for p in PARTS for lang in LANGS]:
        group = [a for a in answers if a.row["part"] == part and a.row["lang"] == lang]
        said = [a for a in group if a.row["expect"] != "none"]
        rules = [a for a in said if a.row["rule"]]
        everyday = [a for a in said if not a.row["rule"]]
        nothing = [a for a in group if a.row["expect"] == "none"]
        kept = [a for a in said if a.items]
        print(
            f"{part:9} {lang:4} {len(said):5}"
            f" {pct(sum(a.gives_item for a in everyday), len(everyday)):>6}"
            f" {pct(sum(a.any_item for a in said), len(said)):>6}"
            f" {pct(sum(a.keeps_whole for a in kept), len(kept)):>6}"
            f" {len(rules):5} {pct(sum(a.gives_item for a in rules), len(rules)):>6}"
            f" {len(nothing):4} {pct(sum(not a.any_item for a in nothing), len(nothing)):>6}"
        )  # fmt: skip
    by_kind: dict[str, list[StatementAnswer]] = defaultdict(list)
    for answer in answers:
        by_kind[answer.row["expect"]].append(answer)
    shown = ", ".join(
        f"{kind} {pct(sum(a.gives_item for a in group), len(group)).strip()}% ({len(group)})"
        for kind, group in sorted(by_kind.items())
        if kind != "none"
    )
    print(f"item of the expected type, by type: {shown}")
    made = Counter(
        (a.row["expect"], "+".join(sorted({i["memory_type"] for i in a.items})) or "nothing")
        for a in answers
    )
    print("expected → made: " + ", ".join(f"{e}→{m} {n}" for (e, m), n in sorted(made.items())))
    if verbose:
        for answer in answers:
            wrong = answer.any_item if answer.row["expect"] == "none" else not answer.gives_item
            if not wrong:
                continue
            row = answer.row
            made_items = [f"{i['memory_type']}: {i['summary'][:90]}" for i in answer.items]
            print(f"[{row['id']} {row['part']} {row['lang']} {row['expect']}] {row['text']}")
            print(f"    keep={row['keep']!r} made={made_items or 'nothing'}")


# --- the service -----------------------------------------------------------------------------
def with_service(
    run: ServiceRun, slug: str, work: Callable[[Api], None], *, keep: bool, workers: int
) -> None:
    from memories.services import stores_ensure

    stores_ensure()
    port = free_port()
    processes = start_service(run, port, workers)
    try:
        _, secret = tenant_with_key(slug=f"{run.prefix}-{slug}", name=f"Lifecycle {slug}")
        work(Api(port, secret))
    finally:
        stop(processes)
        if keep:
            print(f"kept everything written: prefix {run.prefix}")
        else:
            remove_everything(run)


def run_sets(args: argparse.Namespace, parts: Iterable[str]) -> None:
    changes = thin(read_rows(CHANGES), args.quick)
    statements = thin(read_rows(STATEMENTS), args.quick)

    def work(api: Api) -> None:
        now = datetime.now(UTC)
        began = time.perf_counter()
        if "changes" in parts:
            load_changes(api, changes, now)
        if "statements" in parts:
            load_statements(api, statements, now)
        lag = wait_for_worker(SERVICE, limit_seconds=1200)
        print(f"loaded in {time.perf_counter() - began:.0f}s (worker caught up after {lag:.0f}s)")
        if "changes" in parts:
            report_changes(ask_changes(api, changes), args.verbose)
        if "statements" in parts:
            report_statements(read_statements(api, statements), args.verbose)

    with_service(SERVICE, "sets", work, keep=args.keep, workers=args.web_workers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="changes,statements,locomo")
    parser.add_argument("--quick", action="store_true", help="a quarter of each set")
    parser.add_argument("--verbose", action="store_true", help="list every miss")
    parser.add_argument("--keep", action="store_true", help="keep what was written")
    parser.add_argument("--web-workers", type=int, default=2)
    args = parser.parse_args()
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    django_setup(migrate=True, **SERVICE.env())
    began = time.perf_counter()
    if parts & {"changes", "statements"}:
        run_sets(args, parts)
    if "locomo" in parts:
        import lifecycle_locomo

        lifecycle_locomo.main(["--quick"] if args.quick else [])
    print(f"\nrun took {time.perf_counter() - began:.0f}s")


if __name__ == "__main__":
    main()
