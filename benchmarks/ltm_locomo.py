"""Long-term memory evidence recall on LoCoMo (development split), through `ltm_search`.

Every dialogue turn of each conversation becomes a card of that conversation's user (summary
"Speaker: utterance" plus "[shares image: caption]", source message id = dia_id; by default the
turn before it is the card's content, as an importer of conversations would give it its
context — `--context 0` leaves it out); every question
of categories 1-4 is asked through ltm_search with that user's scope, and the script prints
any@k / all@k / frac@k (k = 5, 10, 20) for lexical, vector and hybrid search, plus search
latency. Baselines on the same data are in ../shared/data/locomo/README.md.

Runs against the local stores under index, collection and key prefixes of its own, in a tenant
of its own, and removes all of it afterwards.

    .venv/bin/python benchmarks/ltm_locomo.py          # --context 0: the turn alone
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
import uuid

from _setup import LOCOMO, clear_prefix_keys, django_setup, evidence_ids

RUN = uuid.uuid4().hex[:8]
KS = (5, 10, 20)
MODES = ("lexical", "vector", "hybrid")


def turns_of(conversation: dict) -> list[dict]:
    sessions = conversation["conversation"]
    turns = []
    for name in sorted(
        (n for n in sessions if re.fullmatch(r"session_\d+", n)), key=lambda n: int(n[8:])
    ):
        for turn in sessions[name]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares image: {turn['blip_caption']}]"
            turns.append({"dia_id": turn["dia_id"], "text": text})
    return turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--context", type=int, default=1, help="previous turns added to a card as its content"
    )
    args = parser.parse_args()
    django_setup(
        migrate=True,
        ELASTICSEARCH_INDEX_PREFIX=f"bench-locomo-{RUN}",
        MILVUS_COLLECTION_PREFIX=f"bench_locomo_{RUN}",
        REDIS_KEY_PREFIX=f"bench-locomo-{RUN}",
    )
    from memories.ltm.models import LtmCard
    from memories.ltm.search import card_search_index
    from memories.ltm.selectors import ltm_search
    from memories.ltm.services import CardInput, cards_import, outbox_drain
    from memories.ltm.vectors import vector_index
    from profiles.services.tenants import tenant_create, tenant_delete

    conversations = json.loads(LOCOMO.read_text())
    tenant = tenant_create(slug=f"bench-locomo-{RUN}", name="LoCoMo benchmark")
    card_search_index().ensure()
    vector_index().ensure()
    try:
        started = time.perf_counter()
        for conversation in conversations:
            turns = turns_of(conversation)
            cards = [
                CardInput(
                    external_id=f"{conversation['sample_id']}:{turn['dia_id']}",
                    user_id=conversation["sample_id"],
                    memory_type="episodic_case",
                    summary=turn["text"],
                    content="\n".join(t["text"] for t in turns[max(0, i - args.context) : i]),
                    source_refs={"message_ids": [turn["dia_id"]]},
                )
                for i, turn in enumerate(turns)
            ]
            for start in range(0, len(cards), 500):
                cards_import(tenant=tenant, cards=cards[start : start + 500])
            while outbox_drain(limit=500).more:
                pass
        imported = LtmCard.objects.filter(tenant=tenant).count()
        print(
            f"LoCoMo: {imported} turns of {len(conversations)} conversations imported and "
            f"indexed in {time.perf_counter() - started:.0f}s (context turns: {args.context})"
        )
        dia_of = {
            memory_id: external_id.split(":", 1)[1]
            for memory_id, external_id in LtmCard.objects.filter(tenant=tenant).values_list(
                "memory_id", "external_id"
            )
        }

        scores = {
            mode: {f"{m}@{k}": [] for m in ("any", "all", "frac") for k in KS} for mode in MODES
        }
        latency: dict[str, list[float]] = {mode: [] for mode in MODES}
        asked = 0
        for conversation in conversations:
            known = {t["dia_id"] for t in turns_of(conversation)}
            for qa in conversation["qa"]:
                evidence = evidence_ids(qa.get("evidence", []), known)
                if qa["category"] not in (1, 2, 3, 4) or not evidence:
                    continue
                asked += 1
                for mode in MODES:
                    began = time.perf_counter()
                    result = ltm_search(
                        tenant=tenant,
                        query=qa["question"],
                        mode=mode,
                        k=max(KS),
                        user_id=conversation["sample_id"],
                    )
                    latency[mode].append((time.perf_counter() - began) * 1000)
                    ranked = [dia_of[h.memory_id] for h in result.hits]
                    for k in KS:
                        top = set(ranked[:k])
                        share = sum(e in top for e in evidence) / len(evidence)
                        scores[mode][f"any@{k}"].append(share > 0)
                        scores[mode][f"all@{k}"].append(share == 1)
                        scores[mode][f"frac@{k}"].append(share)

        print(f"{asked} questions of categories 1-4 with evidence")
        header = "  ".join(
            f"{n:>8}" for n in [*(f"any@{k}" for k in KS), *(f"all@{k}" for k in KS), "frac@10"]
        )
        print(f"{'mode':<8} {header}   p50 ms   p95 ms")
        for mode in MODES:
            values = [
                100 * statistics.mean(scores[mode][name])
                for name in [*(f"any@{k}" for k in KS), *(f"all@{k}" for k in KS), "frac@10"]
            ]
            ordered = sorted(latency[mode])
            p50, p95 = statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]
            cells = "  ".join(f"{v:8.1f}" for v in values)
            print(f"{mode:<8} {cells}  {p50:7.1f}  {p95:7.1f}")
        print(
            "baselines (README): BM25 any@10 62.6, e5-small 60.7, RRF 68.3; target hybrid >= 73.3"
        )
    finally:
        card_search_index().drop()
        vector_index().drop()
        tenant_delete(tenant=tenant)
        clear_prefix_keys()


if __name__ == "__main__":
    main()
