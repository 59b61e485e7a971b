"""Evidence recall on LoCoMo as promotion to long-term memory proceeds, a reviewer approving
every proposal, in four stages; end to end through the HTTP API with a real Celery worker.

The service and its worker run as in `locomo_e2e.py` (gunicorn and one worker under prefixes
of their own; everything removed afterwards unless --keep). The conversations are appended as
transcripts (`locomo_e2e.load_pipeline`), then each stage changes long-term memory and, once
the worker has caught up (new cards indexed), every question of categories 1-4 is asked
through `POST /v1/recall` as routed (`locomo_e2e.ask`: k = 10, explain on, a fresh session per
question, so asking records nothing and counts no recall toward the promotion triggers):

1. `stm_only`: nothing promoted.
2. `shipped`: the promotion scan as shipped for the tenant (`memories.jobs.job_run`, what
   `manage.py run_job promotion_scan --tenant SLUG` runs), then the hourly scans of the next
   day, simulated with the service's own `now` argument (`promotion_scan(now=...)`): the items
   are minutes old and the shipped policy's minimum age is 24 h, so a scan now proposes only
   what the user asked to remember. One scan a day later would miss items that the beat's
   hourly scan sees: an item proposable without hits lives the minimum age plus one scan
   interval (`promotable_ttl_minutes`) and would have expired by then if written earlier in
   the load. So the scans run hourly from 24 h after the oldest item until the newest is 24 h
   old, each item seen by a scan within the hour after it is old enough, as the beat would.
   Short-term memory is left as it is (recall runs at the real time, nothing is swept): the
   stages differ only in what promotion added.
3. `opened`: the tenant's `PromotionPolicy` set to the loosest values its model allows
   (`min_hits` 0, `min_sessions` 0, `min_age_hours` 0, `min_confidence` 0; checked with
   `full_clean`, saved with `tenant_policy_save`), then the scan run now (`job_run`). With
   `min_hits` 0 every trigger check passes, so only the gates refuse (not live, task-local).
4. `everything`: every live short-term item proposed through the scan's own
   `promotion_propose` with a `TriggerCheck` that says propose, bypassing triggers and gates
   (the counts of what the gates would have refused are printed); what the service still
   refuses (pending or approved already, held, nothing left after redaction) stays out. Then
   a reflection run (`job_run(name="reflection")`) under the shipped reflection thresholds:
   their loosest values (similarity 0, no minimum group) would fold all of a user's episodes
   into one group.

After each scan a reviewer (a staff user with the reviewer and tenant-admin roles of the
tenant) approves every pending proposal, oldest first, with `promotion_approve`; a proposal
whose approval raises a domain error (a repeat of a live card, `repeats_card`) is rejected
with `promotion_reject` and counted by its code.

Per stage, over all questions, per category and per part of the conversations (`--tune`,
default conv-26 and conv-30, and the held-out rest): any@5, any@10, all@10, MRR (1 / rank of
the first item citing an evidence dia_id, 0 when none of the 10 does), the share of injected
items citing evidence (pooled over the questions), mean and median `token_estimate`, and the
share of questions whose first item is a card; then one table of stage x part. `--json PATH`
writes every answer of every stage (question, evidence, the dia_ids, source and text of each
item, `token_estimate`).

    .venv/bin/python benchmarks/lifecycle_locomo.py --quick            # conv-30, 60 questions
    .venv/bin/python benchmarks/lifecycle_locomo.py --json var/lifecycle.json
    .venv/bin/python benchmarks/lifecycle_locomo.py --keep      # prints BENCH_LIFECYCLE_RUN=<id>
    BENCH_LIFECYCLE_RUN=<id> .venv/bin/python benchmarks/lifecycle_locomo.py --remove
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
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
    worker_idle,
)
from _setup import LOCOMO, django_setup, evidence_ids, session_names
from locomo_e2e import CATEGORIES, ask, load_pipeline, recalled_dia_ids

RUN = os.environ.get("BENCH_LIFECYCLE_RUN") or uuid.uuid4().hex[:8]
SERVICE = ServiceRun("bench-lifecycle", RUN)
STAGES = ("stm_only", "shipped", "opened", "everything")
PARTS = ("all", "tune", "held_out")
TUNE = "conv-26,conv-30"
QUICK_CONVERSATIONS = "conv-30"
QUICK_LIMIT = 60
HOUR = 3600.0
WORKER_LIMIT_SECONDS = 1800
# The loosest values PromotionPolicy's fields allow (PositiveIntegerField, MinValueValidator).
OPENED_POLICY = {"min_hits": 0, "min_sessions": 0, "min_age_hours": 0.0, "min_confidence": 0.0}
COLUMNS = (
    ("any@5", "any@5", 100),
    ("any@10", "any@10", 100),
    ("all@10", "all@10", 100),
    ("mrr", "MRR", 1),
    ("cite", "cite%", 100),
    ("tokens_mean", "tok-mean", 1),
    ("tokens_median", "tok-med", 1),
    ("card_first", "card1st%", 100),
)


# --- questions and answers -------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    user: str  # the conversation's sample_id, the service's user id
    part: str  # "tune" or "held_out"
    category: str
    text: str
    evidence: frozenset[str]


@dataclass(frozen=True)
class Answer:
    question: Question
    stage: str
    by_item: list[list[str]]  # the dia_ids each injected item cites, in order
    sources: list[str]
    texts: list[str]
    tokens: int

    @property
    def cites(self) -> list[bool]:
        return [bool(self.question.evidence.intersection(ids)) for ids in self.by_item]

    def any_at(self, k: int) -> bool:
        return any(self.cites[:k])

    def all_at(self, k: int) -> bool:
        return self.question.evidence <= {dia for ids in self.by_item[:k] for dia in ids}

    @property
    def reciprocal_rank(self) -> float:
        return next((1 / rank for rank, cited in enumerate(self.cites[:10], 1) if cited), 0.0)


def questions_of(conversations: list[dict], tune: set[str], limit: int) -> list[Question]:
    """The questions of categories 1-4 with known evidence, in order, at most `limit` (0: all)."""
    found = []
    for conversation in conversations:
        user = conversation["sample_id"]
        sessions = conversation["conversation"]
        known = {t["dia_id"] for n in session_names(conversation) for t in sessions[n]}
        for qa in conversation["qa"]:
            evidence = evidence_ids(qa.get("evidence", []), known)
            if qa.get("category") in CATEGORIES and evidence:
                found.append(
                    Question(
                        user=user,
                        part="tune" if user in tune else "held_out",
                        category=CATEGORIES[qa["category"]],
                        text=qa["question"],
                        evidence=frozenset(evidence),
                    )
                )
    return found[:limit] if limit else found


def ask_all(api: Api, questions: Sequence[Question], stage: str) -> list[Answer]:
    answers = []
    for question in questions:
        data, _, _ = ask(api, question.user, question.text)
        answers.append(
            Answer(
                question=question,
                stage=stage,
                by_item=[recalled_dia_ids(item) for item in data["items"]],
                sources=[item["source"] for item in data["items"]],
                texts=[item["text"][:300] for item in data["items"]],
                tokens=int(data["token_estimate"]),
            )
        )
    return answers


def figures(answers: Sequence[Answer]) -> dict[str, float]:
    cited = [c for a in answers for c in a.cites]
    tokens = [a.tokens for a in answers]
    return {
        "n": len(answers),
        "any@5": statistics.mean(a.any_at(5) for a in answers),
        "any@10": statistics.mean(a.any_at(10) for a in answers),
        "all@10": statistics.mean(a.all_at(10) for a in answers),
        "mrr": statistics.mean(a.reciprocal_rank for a in answers),
        "cite": sum(cited) / len(cited) if cited else 0.0,
        "tokens_mean": statistics.mean(tokens),
        "tokens_median": statistics.median(tokens),
        "card_first": statistics.mean(a.sources[:1] == ["ltm"] for a in answers),
    }


def in_part(answers: Sequence[Answer], part: str) -> list[Answer]:
    return [a for a in answers if part == "all" or a.question.part == part]


def row(label: str, values: dict[str, float]) -> str:
    cells = " ".join(
        f"{scale * values[key]:>8.{1 if scale == 100 else 3}f}" for key, _, scale in COLUMNS
    )
    return f"{label} {int(values['n']):>4} {cells}"


def header(label: str) -> str:
    return f"{label} {'n':>4} " + " ".join(f"{title:>8}" for _, title, _ in COLUMNS)


# --- the reviewer's side ---------------------------------------------------------------------
@dataclass
class Ledger:
    """What the reviewer did with the proposals, cumulative."""

    refused: Counter[str] = field(default_factory=Counter)  # by error code

    def approved(self, tenant: Any) -> Counter[str]:
        """Approved proposals by what they made: `card` (scan), `reflection` (card), `fact`."""
        from memories.review.models import PromotionRequest, ReviewStatus

        made: Counter[str] = Counter()
        for path, origin in PromotionRequest.objects.filter(
            tenant=tenant, status=ReviewStatus.APPROVED
        ).values_list("path", "origin"):
            if path == PromotionRequest.Path.POSTGRES:
                made["fact"] += 1
            else:
                made["reflection" if origin == PromotionRequest.Origin.REFLECTION else "card"] += 1
        return made

    def line(self, tenant: Any) -> str:
        made = self.approved(tenant)
        refused = counted(self.refused)
        return (
            f"cards approved so far {made['card'] + made['reflection']} "
            f"(scan {made['card']}, reflection {made['reflection']}), profile facts {made['fact']}"
            f"; proposals refused on approval {sum(self.refused.values())} ({refused})"
        )


def reviewer_for(tenant: Any) -> Any:
    """A staff user who reviews the tenant's proposals and administers its policies."""
    from django.contrib.auth import get_user_model

    from profiles.models import TenantMembership

    user, _ = get_user_model().objects.get_or_create(
        username=f"{SERVICE.prefix}-reviewer", defaults={"is_staff": True}
    )
    for role in (TenantMembership.Role.REVIEWER, TenantMembership.Role.TENANT_ADMIN):
        TenantMembership.objects.get_or_create(user=user, tenant=tenant, role=role)
    return user


def approve_pending(*, tenant: Any, reviewer: Any, ledger: Ledger) -> int:
    """Approve every pending proposal of the tenant, oldest first; reject those whose approval
    is refused. Returns how many were approved."""
    from memories.review.models import PromotionRequest, ReviewStatus
    from memories.review.promotion import promotion_approve, promotion_reject
    from memoryproject.errors import DomainError

    approved = 0
    pending = PromotionRequest.objects.filter(tenant=tenant, status=ReviewStatus.PENDING)
    for request in list(pending.order_by("created_at")):
        try:
            promotion_approve(request=request, reviewer=reviewer)
        except DomainError as error:
            ledger.refused[str(error.code)] += 1
            promotion_reject(
                request=request, reviewer=reviewer, reason=f"refused on approval: {error.code}"
            )
        else:
            approved += 1
    return approved


# --- the stages ----------------------------------------------------------------------------
def owners_of(tenant: Any) -> Iterator[tuple[Any, Any, Any]]:
    """(owner, tenant, promotion policy) of each user of the tenant holding short-term items."""
    from memories.jobs import PROMOTION_SCAN
    from memories.review.promotion_scan import owners_with_policy

    cursor = 0
    while True:
        cursor, page = owners_with_policy(cursor=cursor, owners=PROMOTION_SCAN.batch, tenant=tenant)
        yield from page
        if not cursor:
            return


def normalised(reason: str) -> str:
    """A gate's reason with its figures left out, to count reasons alike."""
    return re.sub(r"\d+(\.\d+)?", "N", reason)


def counted(counts: Counter[str]) -> str:
    return ", ".join(f"{what} {n}" for what, n in counts.most_common()) or "none"


def scan_at(*, tenant: Any, now: float) -> None:
    """Every page of the promotion scan (as `run_job` runs it) at the time `now`."""
    from memories.jobs import PROMOTION_SCAN
    from memories.review.promotion_scan import promotion_scan

    cursor = 0
    while True:
        page = promotion_scan(now=now, cursor=cursor, owners=PROMOTION_SCAN.batch, tenant=tenant)
        cursor = page.next_cursor
        if not cursor:
            return


def proposals(tenant: Any) -> int:
    """How many proposals the tenant has had."""
    from memories.review.models import PromotionRequest

    return PromotionRequest.objects.filter(tenant=tenant).count()


def shipped(tenant: Any) -> str:
    """The shipped scan now, then hourly over the day that makes the items old enough; says
    why the items were refused by the scan that first found each old enough."""
    from memories.jobs import PROMOTION_SCAN, job_run
    from memories.review.promotion_scan import promotion_triggers
    from memories.stm.store import stm_store

    before = proposals(tenant)
    said = job_run(name="promotion_scan", tenant=tenant)
    store, every = stm_store(), PROMOTION_SCAN.every
    items = [
        (item, policy)
        for owner, _, policy in owners_of(tenant)
        for item in store.items_of(owner=owner)
    ]
    if not items:
        return f"scan now: {said}; no short-term items"
    # One tenant, one policy: the scan after the oldest item came of age, then one per interval
    # until the newest did, so each item is scanned within an interval of coming of age.
    age = items[0][1].min_age_hours * HOUR
    first = min(item.created_at for item, _ in items)
    last = max(item.created_at for item, _ in items)
    ticks = [first + age + n * every for n in range(math.ceil((last - first) / every) + 1)]
    for tick in ticks:
        scan_at(tenant=tenant, now=tick)
    verdicts: Counter[str] = Counter()
    for item, policy in items:
        tick = next(t for t in ticks if t >= item.created_at + age)
        check = promotion_triggers(item, policy=policy, now=tick)
        verdicts[normalised(check.blocked) or "proposable"] += 1
    return (
        f"scan now: {said}; then {len(ticks)} scan(s) from {age / HOUR:g} h after the oldest "
        f"item, {every / HOUR:g} h apart; {proposals(tenant) - before} proposed in all; the "
        f"{len(items)} items when first old enough: {counted(verdicts)}"
    )


def opened(tenant: Any, reviewer: Any) -> str:
    """The tenant's promotion policy opened up as far as its model allows, then the scan now."""
    from memories.jobs import job_run
    from memories.policies.models import PromotionPolicy
    from memories.policies.services import tenant_policy_save

    policy = PromotionPolicy.objects.filter(tenant=tenant).first() or PromotionPolicy(tenant=tenant)
    for name, value in OPENED_POLICY.items():
        setattr(policy, name, value)
    policy.full_clean()
    tenant_policy_save(policy=policy, staff=reviewer)
    said = job_run(name="promotion_scan", tenant=tenant)
    return f"policy {json.dumps(OPENED_POLICY)}; scan now: {said}"


def everything(tenant: Any) -> str:
    """Every live item proposed past triggers and gates, then a reflection run."""
    from memories.jobs import job_run
    from memories.review.promotion_scan import TriggerCheck, promotion_propose, promotion_triggers
    from memories.stm.store import now_seconds, stm_store

    store, now = stm_store(), now_seconds()
    live = proposed = 0
    gated: Counter[str] = Counter()
    for owner, owner_tenant, policy in owners_of(tenant):
        for item in store.items_of(owner=owner):
            if not item.is_live(now):
                continue
            live += 1
            check = promotion_triggers(item, policy=policy, now=now)
            if check.blocked:
                gated[normalised(check.blocked)] += 1
            forced = TriggerCheck(
                propose=True,
                path=check.path,
                triggers=check.triggers or {"benchmark": "every live item is proposed"},
            )
            made = promotion_propose(
                tenant=owner_tenant, item=item, check=forced, policy=policy, now=now
            )
            proposed += made is not None
    said = job_run(name="reflection", tenant=tenant)
    return (
        f"{live} live items, {proposed} newly proposed (the scan's gates would refuse: "
        f"{counted(gated)}); reflection: {said}"
    )


# --- the run ---------------------------------------------------------------------------------
def report(answers: Sequence[Answer]) -> dict[str, dict[str, float]]:
    """Print the stage's figures per part and category; returns the figures of each part."""
    overall = {}
    for part in PARTS:
        chosen = in_part(answers, part)
        if not chosen:
            print(f"{part}: no questions")
            continue
        print(header(f"{part + ' / category':<24}"))
        overall[part] = figures(chosen)
        print(row(f"{part + ' / all':<24}", overall[part]))
        for category in CATEGORIES.values():
            group = [a for a in chosen if a.question.category == category]
            if group:
                print(row(f"{part + ' / ' + category:<24}", figures(group)))
    return overall


def dump(path: str, answers: Sequence[Answer]) -> None:
    with open(path, "w") as out:
        json.dump(
            [
                {
                    "stage": a.stage,
                    "user": a.question.user,
                    "part": a.question.part,
                    "category": a.question.category,
                    "question": a.question.text,
                    "evidence": sorted(a.question.evidence),
                    "recalled": a.by_item,
                    "sources": a.sources,
                    "texts": a.texts,
                    "token_estimate": a.tokens,
                }
                for a in answers
            ],
            out,
            ensure_ascii=False,
        )


def remove_reviewer() -> None:
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username=f"{SERVICE.prefix}-reviewer").delete()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="conv-30 only, at most 60 questions")
    parser.add_argument("--conversations", default="", help="sample ids, comma-separated (all)")
    parser.add_argument("--tune", default=TUNE, help="the tuning part's conversations")
    parser.add_argument("--limit", type=int, default=0, help="ask at most this many questions")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--json", default="", help="write every answer of every stage here")
    parser.add_argument("--keep", action="store_true", help="keep what was written")
    parser.add_argument(
        "--remove", action="store_true", help="remove what BENCH_LIFECYCLE_RUN's kept run wrote"
    )
    args = parser.parse_args(argv)
    django_setup(migrate=True, **SERVICE.env())
    if args.remove:
        remove_everything(SERVICE)
        remove_reviewer()
        return
    from memories.services import stores_ensure

    chosen = args.conversations or (QUICK_CONVERSATIONS if args.quick else "")
    limit = args.limit or (QUICK_LIMIT if args.quick else 0)
    conversations = json.loads(LOCOMO.read_text())
    if chosen:
        wanted = chosen.split(",")
        conversations = [c for c in conversations if c["sample_id"] in wanted]
        if len(conversations) != len(wanted):
            raise SystemExit(f"unknown conversations among {chosen}")
    questions = questions_of(conversations, set(args.tune.split(",")), limit)
    began = time.perf_counter()
    stores_ensure()
    port = free_port()
    processes = start_service(SERVICE, port, args.web_workers)
    print(f"run {RUN}: service on port {port}, one worker; {len(questions)} questions per stage")
    answers: list[Answer] = []
    table: list[tuple[str, str, str, dict[str, float]]] = []
    try:
        tenant, secret = tenant_with_key(slug=f"{SERVICE.prefix}-t", name="LoCoMo lifecycle")
        api = Api(port, secret)
        reviewer = reviewer_for(tenant)
        ledger = Ledger()
        loading = time.perf_counter()
        events = load_pipeline(api, conversations)
        made = (
            f"{events} events of {len(conversations)} conversations appended in "
            f"{time.perf_counter() - loading:.0f}s"
        )
        for stage in STAGES:
            started = time.perf_counter()
            if stage == "shipped":
                made = shipped(tenant)
            elif stage == "opened":
                made = opened(tenant, reviewer)
            elif stage == "everything":
                made = everything(tenant)
            approved = approve_pending(tenant=tenant, reviewer=reviewer, ledger=ledger)
            lag = wait_for_worker(SERVICE, limit_seconds=WORKER_LIMIT_SECONDS)
            if not worker_idle(SERVICE):
                print(f"warning: the worker had not caught up after {lag:.0f}s")
            print(f"\n== {stage}: {made}")
            print(f"approved {approved} now; {ledger.line(tenant)}")
            print(f"worker caught up {lag:.0f}s after the stage's writes")
            stage_answers = ask_all(api, questions, stage)
            answers += stage_answers
            cards = ledger.approved(tenant)
            count = str(cards["card"] + cards["reflection"])
            for part, values in report(stage_answers).items():
                table.append((stage, part, count, values))
            print(f"stage took {time.perf_counter() - started:.0f}s")
        print("\n== stage x part")
        print(f"{'stage':<11} {'part':<9} {'cards':>5} " + header("")[1:])
        for stage, part, count, values in table:
            print(f"{stage:<11} {part:<9} {count:>5}" + row("", values))
        if args.json:
            dump(args.json, answers)
            print(f"wrote {len(answers)} answers to {args.json}")
    finally:
        stop(processes)
        if args.keep:
            print(
                f"kept everything written: BENCH_LIFECYCLE_RUN={RUN} .venv/bin/python "
                "benchmarks/lifecycle_locomo.py --remove removes it"
            )
        else:
            remove_everything(SERVICE)
            remove_reviewer()
    print(f"wall time {time.perf_counter() - began:.0f}s")


if __name__ == "__main__":
    main()
