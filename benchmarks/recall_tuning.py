"""Tune recall's fusion (branch weights, RRF k) and time boost on the LoCoMo development split.

Reads the stores of a run of `locomo_e2e.py` kept with `--keep` (BENCH_E2E_RUN=<run>): for every
question of categories 1-4 it asks each branch of the source recall searches in that mode
(pipeline: history; cards: long-term memory) once, `depth` hits deep, plus the history branches
limited to the question's time window when it names one, exactly as recall does. Then it fuses
the cached branch lists under every setting of a grid and prints evidence any@k / all@k for the
single branches and the best settings, so the defaults in the recall policy are measured, not
guessed. Nothing is written.

With `--folds`, the grid is chosen by cross-validation as well: for each conversation, the best
setting on the other conversations is scored on it alone, and the figures of every left-out
conversation together are printed beside the in-sample best (the ones the defaults were chosen
by) and the current defaults, so a setting that only fits these conversations shows.

    BENCH_E2E_RUN=ea907974 .venv/bin/python benchmarks/recall_tuning.py --mode pipeline
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import statistics
from datetime import UTC, datetime
from typing import Any

from _setup import LOCOMO, django_setup

KS = (5, 10)
DIA = re.compile(r"D\d+:\d+")


def settings_env(run: str) -> dict[str, str]:
    return {
        "REDIS_KEY_PREFIX": f"bench-e2e-{run}",
        "ELASTICSEARCH_INDEX_PREFIX": f"bench-e2e-{run}",
        "MILVUS_COLLECTION_PREFIX": f"bench_e2e_{run}",
    }


def branch_lists(mode: str, depth: int, limit: int) -> list[dict[str, Any]]:
    """Per question: its evidence and each branch's ranked (key, dia_ids, time) lists."""
    import locomo_e2e as e2e

    from memories.history.selectors import history_search
    from memories.ltm.embedder import query_vector
    from memories.ltm.selectors import ltm_search
    from memories.recall.timefilter import parse_time_query, reanchor
    from profiles.models import Tenant

    run = os.environ["BENCH_E2E_RUN"]
    tenant = Tenant.objects.get(slug=f"bench-e2e-{run}-{mode}")
    conversations = json.loads(LOCOMO.read_text())
    rows: list[dict[str, Any]] = []
    for conversation in conversations:
        user = conversation["sample_id"]
        sessions = conversation["conversation"]
        known = {t["dia_id"] for n in e2e.session_names(conversation) for t in sessions[n]}
        for qa in conversation["qa"]:
            evidence = e2e.evidence_ids(qa.get("evidence", []), known)
            if qa.get("category") not in e2e.CATEGORIES or not evidence:
                continue
            if limit and len(rows) >= limit:
                return rows
            query = qa["question"]
            vector = [float(x) for x in query_vector(query)]
            branches: dict[str, list[tuple[str, list[str], float]]] = {}
            if mode == "pipeline":
                for name in ("lexical", "vector"):
                    found = history_search(
                        tenant=tenant, user_id=user, query=query, k=depth, mode=name,
                        query_vector=vector,
                    )  # fmt: skip
                    branches[name] = [
                        (h.entry_id, DIA.findall(h.event_id), h.occurred_at.timestamp())
                        for h in found.hits
                    ]
                parsed = parse_time_query(query, now=datetime.now(UTC))
                newest = max((t for _, _, t in branches["lexical"]), default=None)
                parsed = reanchor(
                    parsed, newest=datetime.fromtimestamp(newest, UTC) if newest else None
                )
                window = parsed.window
                if window is not None:
                    for name in ("lexical", "vector"):
                        found = history_search(
                            tenant=tenant, user_id=user, query=query, k=depth, mode=name,
                            query_vector=vector, since=window.start, until=window.end,
                        )  # fmt: skip
                        branches[f"window_{name}"] = [
                            (h.entry_id, DIA.findall(h.event_id), h.occurred_at.timestamp())
                            for h in found.hits
                        ]
                span = (window.start.timestamp(), window.end.timestamp()) if window else None
            else:
                for name in ("lexical", "vector"):
                    found_cards = ltm_search(
                        tenant=tenant, query=query, mode=name, k=depth, top_n=depth,
                        user_id=user, query_vector=vector,
                    )  # fmt: skip
                    branches[name] = [
                        (h.memory_id, DIA.findall(json.dumps(h.card.get("source_refs", []))), 0.0)
                        for h in found_cards.hits
                    ]
                span = None
            rows.append(
                {
                    "conversation": user,
                    "category": qa["category"],
                    "evidence": evidence,
                    "branches": branches,
                    "window": span,
                }
            )
    return rows


def ranked(
    row: dict[str, Any],
    weights: dict[str, float],
    rrf_k: int,
    boost: float,
    diversity: float = 1.0,
) -> list:
    scores: dict[str, float] = {}
    info: dict[str, tuple[list[str], float]] = {}
    for name, hits in row["branches"].items():
        weight = weights.get(name, 0.0)
        if not weight:
            continue
        for rank, (key, dias, when) in enumerate(hits, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
            info[key] = (dias, when)
    window = row["window"]
    if window and boost:
        for key in scores:
            when = info[key][1]
            scores[key] *= (1 + boost) if window[0] <= when < window[1] else 1 / (1 + boost)
    order = sorted(scores, key=lambda key: (-scores[key], key))
    if diversity < 1.0:
        order = diversified(order, scores, {key: info[key][0] for key in order}, diversity)
    return [info[key][0] for key in order]


def diversified(
    order: list[str], scores: dict[str, float], dias: dict[str, list[str]], factor: float
) -> list[str]:
    """Greedy re-ranking: each hit's score times `factor` for every hit of its session already
    chosen, so evidence spread over sessions is not crowded out by one session's turns."""
    chosen: list[str] = []
    taken: dict[str, int] = {}
    left = list(order[:DIVERSITY_DEPTH])
    while left:
        best = max(left, key=lambda key: scores[key] * factor ** taken.get(_session(dias[key]), 0))
        left.remove(best)
        chosen.append(best)
        session = _session(dias[best])
        taken[session] = taken.get(session, 0) + 1
    return chosen + order[DIVERSITY_DEPTH:]


def _session(dias: list[str]) -> str:
    return dias[0].split(":")[0] if dias else ""


DIVERSITY_DEPTH = 30


def measure(rows: list[dict[str, Any]], **setting: Any) -> dict[str, float]:
    cells: dict[str, list[float]] = {f"{m}@{k}": [] for m in ("any", "all") for k in KS}
    category = setting.pop("category", None)
    for row in rows:
        if category is not None and row["category"] != category:
            continue
        order = ranked(row, **setting)
        for k in KS:
            top = {dia for dias in order[:k] for dia in dias}
            share = sum(e in top for e in row["evidence"]) / len(row["evidence"])
            cells[f"any@{k}"].append(share > 0)
            cells[f"all@{k}"].append(share == 1)
    return {name: 100 * statistics.mean(values) for name, values in cells.items()}


GRID = list(
    itertools.product(
        (0.5, 0.75, 1.0, 1.25, 1.5, 2.0), (5, 10, 20, 30, 60, 100), (0.0, 0.5, 1.0, 2.0)
    )
)
DEFAULTS = (1.25, 5, 0.5)  # the recall policy's fusion_lexical_weight, fusion_rrf_k, time_boost


def setting_of(lexical: float, rrf_k: int, boost: float) -> dict[str, Any]:
    weights = {"lexical": lexical, "vector": 1.0, "window_lexical": lexical, "window_vector": 1.0}
    return {"weights": weights, "rrf_k": rrf_k, "boost": boost}


def cross_validate(rows: list[dict[str, Any]], show: Any) -> None:
    """Leave one conversation out: the grid's best on the others, scored on it alone."""
    conversations = sorted({row["conversation"] for row in rows})
    left_out: list[dict[str, Any]] = []
    print("cross-validated, one conversation left out at a time:")
    for held in conversations:
        tuning = [row for row in rows if row["conversation"] != held]
        testing = [row for row in rows if row["conversation"] == held]

        def score(setting: tuple[float, int, float], on: list[dict[str, Any]] = tuning) -> float:
            result = measure(on, **setting_of(*setting))
            return result["any@10"] + result["all@10"]

        best = max(GRID, key=score)
        show(f"  {held}: chosen on the others {best}", measure(testing, **setting_of(*best)))
        left_out.extend({**row, "_setting": best} for row in testing)
    show("left-out conversations together", measure_each(left_out))
    show(f"current defaults {DEFAULTS}, same questions", measure(rows, **setting_of(*DEFAULTS)))


DIVERSITY_GRID = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.3)


def diversity_folds(rows: list[dict[str, Any]], show: Any) -> None:
    """The diversity factor chosen leaving one conversation out, at the current defaults."""
    conversations = sorted({row["conversation"] for row in rows})
    cells: dict[str, list[float]] = {}
    print("session diversity cross-validated, one conversation left out at a time:")
    for held in conversations:
        tuning = [row for row in rows if row["conversation"] != held]
        testing = [row for row in rows if row["conversation"] == held]

        def score(factor: float, on: list[dict[str, Any]] = tuning) -> float:
            result = measure(on, **setting_of(*DEFAULTS), diversity=factor)
            return result["any@10"] + result["all@10"]

        best = max(DIVERSITY_GRID, key=score)
        result = measure(testing, **setting_of(*DEFAULTS), diversity=best)
        show(f"  {held}: factor chosen on the others {best}", result)
        for row in testing:
            one = measure([row], **setting_of(*DEFAULTS), diversity=best)
            cells.setdefault("all", []).append(one["all@10"])
            cells.setdefault("any", []).append(one["any@10"])
            cells.setdefault(f"all c{row['category']}", []).append(one["all@10"])
            cells.setdefault(f"any c{row['category']}", []).append(one["any@10"])
    print(
        "  left-out together @10: "
        + " ".join(f"{name} {statistics.mean(v):5.1f}" for name, v in sorted(cells.items()))
    )


def measure_each(rows: list[dict[str, Any]]) -> dict[str, float]:
    """`measure` with each row under the setting chosen for it (`_setting`)."""
    cells: dict[str, list[float]] = {f"{m}@{k}": [] for m in ("any", "all") for k in KS}
    for row in rows:
        part = measure([row], **setting_of(*row["_setting"]))
        for name in cells:
            cells[name].append(part[name])
    return {name: statistics.mean(values) for name, values in cells.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=("pipeline", "cards"), default="pipeline")
    parser.add_argument("--depth", type=int, default=30)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--cache", default="", help="keep the branch lists in this file")
    parser.add_argument(
        "--folds", action="store_true", help="leave one conversation out: cross-validated figures"
    )
    parser.add_argument(
        "--diversity", action="store_true", help="session diversity factors, cross-validated"
    )
    args = parser.parse_args()
    django_setup(database="locomo_e2e", **settings_env(os.environ["BENCH_E2E_RUN"]))
    if args.cache and os.path.exists(args.cache):
        with open(args.cache) as cached:
            rows = json.load(cached)
    else:
        rows = branch_lists(args.mode, args.depth, args.limit)
        if args.cache:
            with open(args.cache, "w") as out:
                json.dump(rows, out)
    dated = sum(1 for r in rows if r["window"])
    print(f"{len(rows)} questions ({dated} naming a time window), {args.depth} hits per branch")

    def show(label: str, result: dict[str, float]) -> None:
        print(f"{label:<58} " + " ".join(f"{n} {v:5.1f}" for n, v in result.items()))

    both = {"lexical": 1.0, "vector": 1.0, "window_lexical": 1.0, "window_vector": 1.0}
    show("lexical only", measure(rows, weights={"lexical": 1.0}, rrf_k=60, boost=0.0))
    show("vector only", measure(rows, weights={"vector": 1.0}, rrf_k=60, boost=0.0))
    show("RRF, equal weights, k 60, no time", measure(rows, weights=both, rrf_k=60, boost=0.0))
    results = []
    for lexical, rrf_k, boost in GRID:
        result = measure(rows, **setting_of(lexical, rrf_k, boost))
        results.append((result["any@10"] + result["all@10"], lexical, rrf_k, boost, result))
    results.sort(key=lambda r: -r[0])
    for _, lexical, rrf_k, boost, result in results[:8]:
        show(f"lexical weight {lexical}, vector 1, k {rrf_k}, time boost {boost}", result)
    if args.folds:
        cross_validate(rows, show)
    if args.diversity:
        print("session diversity at the current defaults (factor 1 = off), per category:")
        for factor in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.3):
            setting = {**setting_of(*DEFAULTS), "diversity": factor}
            show(f"diversity {factor}, all questions", measure(rows, **setting))
            for category in sorted({r["category"] for r in rows}):
                show(f"  category {category}", measure(rows, **setting, category=category))
        diversity_folds(rows, show)
    print("time boost at the best weights:")
    _, lexical, rrf_k, _, _ = results[0]
    for _, lw, k, boost, result in results:
        if (lw, k) == (lexical, rrf_k):
            show(f"lexical weight {lw}, vector 1, k {k}, time boost {boost}", result)


if __name__ == "__main__":
    main()
