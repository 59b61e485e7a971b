"""Evidence recall on LoCoMo (development split) end to end: through the HTTP API, as routed,
with a real Celery worker.

Two ways of making memory, each in a tenant of its own:

- `pipeline`: every conversation is appended as transcript events only (one service session per
  LoCoMo session, the session's date as each event's `created_at`, event ids
  `<conversation>:<dia_id>`); whatever the service makes of them (extraction, indexes) is what
  recall can find. Nothing is imported.
- `cards`: every turn is imported as a long-term card (`POST /v1/ltm/cards:import`, source message
  id = dia_id), with the session's date as its `occurred_at` and the two turns before it as its
  `content`, as an importer of conversations would give it.

Once the worker has caught up (the time it took is printed as the index lag), every question of
categories 1-4 is asked through `POST /v1/recall` as routed, twice: with the cut-off (only what
answers, `k` = 10 at most) and with `cutoff: false` (the top 10); a fresh session each time,
`explain` on. A recalled item counts for the dia_ids its provenance names. The script prints, for
each way, any@5/10, all@10, MRR (1 / rank of the first item citing an evidence turn), items and
injected tokens (`token_estimate`) overall, per category, per split (tuning conversations
conv-26 and conv-30, the held-out rest) and per conversation; how many questions were routed to
each layer, recall p50/p95 (client side) and each layer's share of the server's time
(`Server-Timing`). Then at least 100 unrelated queries (small talk and off-topic, zh and en) are
asked of the same users, and the share that injected nothing is printed.

The service (gunicorn) and the worker run under key, index and collection prefixes of their own;
everything written is removed afterwards.

    .venv/bin/python benchmarks/locomo_e2e.py                 # both modes
    .venv/bin/python benchmarks/locomo_e2e.py --mode cards --limit 100
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
import uuid
from collections import Counter, defaultdict
from datetime import timedelta
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
from _setup import LOCOMO, django_setup, evidence_ids, session_names, session_start, turn_text

# A run's data lives under prefixes of its own; BENCH_E2E_RUN names an earlier run kept with
# --keep, to ask its questions again without loading (--reuse).
RUN = os.environ.get("BENCH_E2E_RUN") or uuid.uuid4().hex[:8]
SERVICE = ServiceRun("bench-e2e", RUN)
MODES = ("pipeline", "cards")
KS = (5, 10)
# Thresholds are chosen on these conversations and reported on the others.
TUNING_CONVERSATIONS = ("conv-26", "conv-30")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DIA = re.compile(r"D\d+:\d+")

# Small talk and off-topic questions none of the conversations is about. Written for this
# script, in both languages; nothing in them comes from LoCoMo.
UNRELATED = [
    "今天天气怎么样？",
    "你好",
    "早上好！",
    "谢谢你",
    "讲个笑话吧",
    "现在几点了？",
    "一加一等于几？",
    "帮我翻译一下 hello",
    "你叫什么名字？",
    "晚安",
    "周末快乐",
    "北京明天会下雨吗？",
    "推荐一部电影",
    "怎么煮米饭？",
    "光速是多少？",
    "地球到月球多远？",
    "Python 的列表怎么排序？",
    "如何写一个快速排序？",
    "什么是区块链？",
    "珠穆朗玛峰有多高？",
    "法国的首都是哪里？",
    "给我写一首关于秋天的诗",
    "如何提高睡眠质量？",
    "今天星期几？",
    "解释一下相对论",
    "怎么做番茄炒蛋？",
    "汇率是多少？",
    "打开灯",
    "随便聊聊吧",
    "嗯嗯",
    "好的",
    "收到",
    "哈哈哈",
    "你是机器人吗？",
    "什么是机器学习？",
    "水的沸点是多少？",
    "如何学习英语？",
    "推荐一本书",
    "长城有多长？",
    "怎么设置闹钟？",
    "Kubernetes 是什么？",
    "帮我算一下 37 乘以 42",
    "宇宙有多大？",
    "熊猫吃什么？",
    "奥运会多久举办一次？",
    "如何备份手机？",
    "咖啡因有什么作用？",
    "什么是量子计算？",
    "世界上最长的河流是哪条？",
    "怎么写简历？",
    "What's the weather like today?",
    "Hello!",
    "Good morning",
    "Thanks a lot",
    "Tell me a joke",
    "What time is it?",
    "What is 2 plus 2?",
    "How are you doing?",
    "What's your name?",
    "Good night",
    "Have a nice weekend",
    "Will it rain in London tomorrow?",
    "Recommend a movie for tonight",
    "How do I boil an egg?",
    "What is the speed of light?",
    "How far is the moon?",
    "How do I sort a list in Python?",
    "Write a quicksort in Rust",
    "What is a blockchain?",
    "How tall is Mount Everest?",
    "What is the capital of Australia?",
    "Write a haiku about the sea",
    "How can I sleep better?",
    "What day is it today?",
    "Explain general relativity",
    "How do I make pancakes?",
    "What's the euro to dollar rate?",
    "Turn on the lights",
    "Let's just chat",
    "ok",
    "sure",
    "lol",
    "Are you a bot?",
    "What is machine learning?",
    "At what temperature does water boil?",
    "How do I learn French quickly?",
    "Recommend a science fiction novel",
    "How long is the Great Wall?",
    "How do I set an alarm?",
    "What is Kubernetes?",
    "What is 37 times 42?",
    "How big is the universe?",
    "What do pandas eat?",
    "How often are the Olympics held?",
    "How do I back up my phone?",
    "What does caffeine do?",
    "What is quantum computing?",
    "Which is the longest river in the world?",
    "How do I write a cover letter?",
    "What is the population of Tokyo?",
    "How do airplanes stay in the air?",
    "What's a good stretching routine for the office?",
    "How do I reset my router?",
    "Who invented the telephone?",
    "What is inflation?",
]


# --- the data ------------------------------------------------------------------------------------


# --- loading ---------------------------------------------------------------------------------
def load_pipeline(api: Api, conversations: list[dict]) -> int:
    events = 0
    for conversation in conversations:
        user = conversation["sample_id"]
        sessions = conversation["conversation"]
        for name in session_names(conversation):
            start = session_start(sessions[f"{name}_date_time"])
            batch = [
                {
                    "id": f"{user}:{turn['dia_id']}",
                    "role": "user" if turn["speaker"] == sessions["speaker_a"] else "assistant",
                    "content": turn_text(turn),
                    "metadata": {"dia_id": turn["dia_id"], "speaker": turn["speaker"]},
                    "created_at": (start + timedelta(seconds=30 * i)).isoformat(),
                }
                for i, turn in enumerate(sessions[name])
            ]
            for offset in range(0, len(batch), 200):
                api.ok(
                    "POST",
                    f"/v1/sessions/{user}-{name}/events",
                    {"user_id": user, "events": batch[offset : offset + 200]},
                )
            events += len(batch)
    return events


CONTEXT_TURNS = 2


def load_cards(api: Api, conversations: list[dict]) -> int:
    count = 0
    for conversation in conversations:
        user = conversation["sample_id"]
        sessions = conversation["conversation"]
        cards = []
        for name in session_names(conversation):
            start = session_start(sessions[f"{name}_date_time"])
            turns = sessions[name]
            for i, turn in enumerate(turns):
                # As an importer of conversations gives a turn: its time, and the two turns
                # before it as context (the same context a history entry carries).
                context = " ".join(turn_text(t) for t in turns[max(0, i - CONTEXT_TURNS) : i])
                cards.append(
                    {
                        "id": f"{user}:{turn['dia_id']}",
                        "user_id": user,
                        "memory_type": "episodic_case",
                        "summary": turn_text(turn),
                        "content": context,
                        "occurred_at": (start + timedelta(seconds=30 * i)).isoformat(),
                        "source_refs": {"message_ids": [turn["dia_id"]]},
                    }
                )
        for offset in range(0, len(cards), 250):
            api.ok("POST", "/v1/ltm/cards:import", {"cards": cards[offset : offset + 250]})
        count += len(cards)
    return count


# --- asking ----------------------------------------------------------------------------------
def recalled_dia_ids(item: dict) -> list[str]:
    """The dia_ids an item stands for, from its provenance (event ids, source refs)."""
    found = DIA.findall(json.dumps(item.get("provenance", {})))
    return list(dict.fromkeys(found))


def ask(
    api: Api, user: str, query: str, *, cutoff: bool = True
) -> tuple[dict, float, dict[str, float]]:
    body = {
        "user_id": user,
        "session_id": f"q-{uuid.uuid4().hex[:12]}",
        "query": query,
        "k": 10,
        "explain": True,
        "cutoff": cutoff,
    }
    began = time.perf_counter()
    status, data, headers = api.call("POST", "/v1/recall", body)
    elapsed = (time.perf_counter() - began) * 1000
    if status != 200:
        raise SystemExit(f"recall answered {status}: {str(data)[:300]}")
    return data, elapsed, server_timing(headers)


def evaluate(api: Api, conversations: list[dict], limit: int) -> dict[str, Any]:
    scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    routed: Counter[str] = Counter()
    latency: list[float] = []
    timing_totals: dict[str, float] = defaultdict(float)
    timings: list[dict[str, float]] = []
    sources: Counter[str] = Counter()
    answers: list[dict[str, Any]] = []
    asked = 0
    for conversation in conversations:
        user = conversation["sample_id"]
        sessions = conversation["conversation"]
        known = {t["dia_id"] for n in session_names(conversation) for t in sessions[n]}
        for qa in conversation["qa"]:
            evidence = evidence_ids(qa.get("evidence", []), known)
            if qa.get("category") not in CATEGORIES or not evidence:
                continue
            if limit and asked >= limit:
                break
            asked += 1
            full, _, _ = ask(api, user, qa["question"], cutoff=False)
            data, elapsed, timing = ask(api, user, qa["question"])
            latency.append(elapsed)
            timings.append({**timing, "client": elapsed})
            for name, value in timing.items():
                timing_totals[name] += value
            asked_layers = [
                layer
                for layer, decision in data["explain"]["routing"].items()
                if isinstance(decision, dict) and decision.get("asked")
            ]
            routed["+".join(sorted(asked_layers)) or "none"] += 1
            for item in data["items"]:
                sources[item["source"]] += 1
            # Positions count items, not dia_ids: an item citing three turns uses one slot.
            by_item = [recalled_dia_ids(item) for item in data["items"]]
            by_full = [recalled_dia_ids(item) for item in full["items"]]
            answers.append(
                {
                    "user": user,
                    "question": qa["question"],
                    "category": qa["category"],
                    "evidence": evidence,
                    "recalled": by_item,
                    "recalled_full": by_full,
                    "items": [
                        {k: item[k] for k in ("source", "relevance", "score", "text")}
                        for item in data["items"]
                    ],
                    "full_items": [
                        {
                            "answers": item.get("answers", 0.0),
                            "answer_parts": item.get("answer_parts", {}),
                            "dia_ids": ids,
                            "source": item["source"],
                        }
                        for item, ids in zip(full["items"], by_full, strict=True)
                    ],
                    "tokens": data["token_estimate"],
                    "tokens_full": full["token_estimate"],
                    "routing": data["explain"]["routing"],
                    "profile": {
                        k: data["explain"]["query_profile"].get(k)
                        for k in ("content_terms", "holding_share", "held_terms", "time")
                    },
                    "latency_ms": elapsed,
                    "server_timing": timing,
                }
            )
            groups = ("all", CATEGORIES[qa["category"]], user, split_of(user))
            for run, found, injected in (
                ("", by_item, data["token_estimate"]),
                ("full ", by_full, full["token_estimate"]),
            ):
                for group in groups:
                    cells = scores[group]
                    for k in KS:
                        top = {dia for ids in found[:k] for dia in ids}
                        share = sum(e in top for e in evidence) / len(evidence)
                        cells[f"{run}any@{k}"].append(share > 0)
                        cells[f"{run}all@{k}"].append(share == 1)
                    cells[f"{run}mrr"].append(reciprocal_rank(found, evidence))
                    cells[f"{run}tokens"].append(injected)
                    cells[f"{run}items"].append(len(found))
    return {
        "asked": asked,
        "scores": scores,
        "routed": routed,
        "latency": latency,
        "timing": timing_totals,
        "timings": timings,
        "sources": sources,
        "answers": answers,
    }


def split_of(user: str) -> str:
    return "tune" if user in TUNING_CONVERSATIONS else "heldout"


def reciprocal_rank(found: list[list[str]], evidence: list[str]) -> float:
    """1 / the position of the first item citing an evidence turn (0: none does)."""
    wanted = set(evidence)
    return next((1 / rank for rank, ids in enumerate(found, 1) if wanted & set(ids)), 0.0)


def unrelated(
    api: Api, conversations: list[dict]
) -> tuple[int, int, Counter[str], list[dict[str, Any]]]:
    """How many unrelated queries injected nothing, of how many; the first item's source of the
    others, and each of them with what it injected and why (for --dump)."""
    empty = total = 0
    leaked: Counter[str] = Counter()
    injected: list[dict[str, Any]] = []
    for conversation in conversations:
        for query in UNRELATED:
            data, _, _ = ask(api, conversation["sample_id"], query)
            total += 1
            if not data["items"]:
                empty += 1
                continue
            leaked[data["items"][0]["source"]] += 1
            explain = data.get("explain", {})
            injected.append(
                {
                    "user": conversation["sample_id"],
                    "query": query,
                    "items": [(i["source"], i["text"][:120]) for i in data["items"]],
                    "query_profile": explain.get("query_profile", {}),
                    "routing": explain.get("routing", {}),
                }
            )
    return empty, total, leaked, injected


def report(mode: str, result: dict[str, Any], lag: float, made: str) -> None:
    print(f"\n== {mode}: {made}; worker caught up {lag:.0f}s after the last write")
    print("with the cut-off (as routed) | with cutoff: false (the top 10)")
    names = ["any@5", "any@10", "all@10", "mrr", "items", "tokens"]
    full = ["full any@5", "full any@10", "full all@10", "full mrr", "full items", "full tokens"]
    print(
        f"{'group':<12} {'n':>4} "
        + " ".join(f"{n:>7}" for n in names)
        + " | "
        + " ".join(f"{n.removeprefix('full '):>7}" for n in full)
    )
    users = sorted({a["user"] for a in result["answers"]})
    for group in ("all", *CATEGORIES.values(), "tune", "heldout", *users):
        cells = result["scores"].get(group)
        if not cells:
            continue
        n = len(cells["any@10"])
        print(f"{group:<12} {n:>4} {_cells(cells, names)} | {_cells(cells, full)}")
    print("routed: " + ", ".join(f"{k} {v}" for k, v in result["routed"].most_common()))
    print("items by source: " + ", ".join(f"{k} {v}" for k, v in result["sources"].most_common()))
    latency = result["latency"]
    print(
        f"recall (client side): p50 {statistics.median(latency):.1f} ms, "
        f"p95 {percentile(latency, 0.95):.1f} ms over {len(latency)} requests"
    )
    totals = {k: v for k, v in result["timing"].items() if not k.startswith("store.")}
    server = totals.pop("total", 0.0) or 1.0
    shares = ", ".join(
        f"{name} {100 * value / server:.1f}%" for name, value in sorted(totals.items())
    )
    print(f"share of the server's recall time (branches overlap): {shares}")
    print_store_times(result["timings"])


def _cells(cells: dict[str, list[float]], names: list[str]) -> str:
    values = []
    for name in names:
        mean = statistics.mean(cells[name])
        plain = name.endswith(("tokens", "items"))
        values.append(f"{mean:7.1f}" if plain else f"{100 * mean:7.1f}")
    return " ".join(values)


STORES = ("redis", "postgresql", "elasticsearch", "milvus", "embedding")


def print_store_times(timings: list[dict[str, float]]) -> None:
    """p50 / p95 of the time inside each store per recall (Server-Timing `store.*`, 0 where a
    recall did not call it), each store's share of the server's time, and recall without the
    time only the Elasticsearch stand-in was waited on."""
    if not timings:
        return

    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.1f} / {percentile(values, 0.95):.1f}"

    server = sum(t.get("total", 0.0) for t in timings) or 1.0
    parts = [f"server {cell([t.get('total', 0.0) for t in timings])}"]
    for store in STORES:
        values = [t.get(f"store.{store}", 0.0) for t in timings]
        parts.append(f"{store} {cell(values)} ({100 * sum(values) / server:.1f}%)")
    without = [t["client"] - t.get("store.elasticsearch_exclusive", 0.0) for t in timings]
    parts.append(f"client without the ES stand-in {cell(without)}")
    print("p50 / p95 ms (share of server time): " + "; ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=[*MODES, "both"], default="both")
    parser.add_argument("--limit", type=int, default=0, help="ask at most this many questions")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--no-unrelated", action="store_true")
    parser.add_argument(
        "--policies",
        default="",
        help="JSON list of recall-policy field values; the questions are asked once under each "
        "(the tenant's recall policy is set before each pass), the unrelated queries under the "
        "last; for tuning fusion, floor and time boost on this split",
    )
    parser.add_argument("--dump", default="", help="write every answer of the last pass here")
    parser.add_argument("--keep", action="store_true", help="keep what was written")
    parser.add_argument(
        "--reuse", action="store_true", help="ask again what BENCH_E2E_RUN's kept run loaded"
    )
    parser.add_argument(
        "--remove", action="store_true", help="remove what BENCH_E2E_RUN's kept run wrote"
    )
    args = parser.parse_args()
    django_setup(migrate=True, **SERVICE.env())
    if args.remove:
        remove_everything(SERVICE)
        return
    from memories.policies.models import RecallPolicy
    from memories.services import stores_ensure

    conversations = json.loads(LOCOMO.read_text())
    stores_ensure()
    port = free_port()
    processes = start_service(SERVICE, port, args.web_workers)
    print(f"run {RUN}: service on port {port}, one worker")
    try:
        for mode in MODES if args.mode == "both" else (args.mode,):
            tenant, secret = tenant_with_key(
                slug=f"{SERVICE.prefix}-{mode}", name=f"LoCoMo e2e {mode}", reuse=args.reuse
            )
            api = Api(port, secret)
            began = time.perf_counter()
            if args.reuse:
                made = "loaded by an earlier run"
            elif mode == "pipeline":
                made = f"{load_pipeline(api, conversations)} events appended"
            else:
                made = f"{load_cards(api, conversations)} cards imported"
            made += f" in {time.perf_counter() - began:.0f}s"
            lag = wait_for_worker(SERVICE, limit_seconds=1800)
            for policy in json.loads(args.policies) if args.policies else [{}]:
                if policy:
                    RecallPolicy.objects.update_or_create(tenant=tenant, defaults=policy)
                    print(f"\nrecall policy: {json.dumps(policy)}")
                result = evaluate(api, conversations, args.limit)
                report(mode, result, lag, made)
            if args.dump:
                with open(f"{args.dump}.{mode}.json", "w") as out:
                    json.dump(result["answers"], out)
            if not args.no_unrelated:
                empty, total, leaked, injected = unrelated(api, conversations)
                if args.dump:
                    with open(f"{args.dump}.{mode}.unrelated.json", "w") as out:
                        json.dump(injected, out, ensure_ascii=False)
                print(
                    f"unrelated queries injecting nothing: {empty}/{total} "
                    f"({100 * empty / total:.1f}%); first item of the others by source: "
                    + (", ".join(f"{k} {v}" for k, v in leaked.most_common()) or "-")
                )
    finally:
        stop(processes)
        if args.keep:
            print(f"kept everything written: BENCH_E2E_RUN={RUN} ... --reuse asks again")
        else:
            remove_everything(SERVICE)


if __name__ == "__main__":
    main()
