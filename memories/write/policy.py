"""The policy engine decides: build each candidate's write profile, score it, pick its TTL.

write_score = 3·verified + 3·user_constraint + 2·decision + 2·stable_for_task + 2·novelty_high
              + 1·confidence_high − 3·duplicate − 2·transient − 2·raw_blob
Written when the score reaches the threshold (3) and no hard rule refuses it. Weights and
thresholds are the tenant's current `WritePolicy`.

A repeat of a live item that would pass without its duplicate penalty is a hit: it merges into
the item, and each hit doubles the lifetime it is given, so what keeps coming back lives until
the promotion scan may propose it. An item that promotion may propose without hits (asked to
remember, a preference, a structured key) lives at least past the promotion policy's minimum age.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from memories.policies.models import (
    DEFAULT_TTL_MINUTES,
    DEFAULT_WEIGHTS,
    POLICY_FIELDS,
    PromotionPolicy,
    WritePolicy,
)
from memories.stm.items import MemoryType
from memories.vocabulary import Vocabulary
from memories.write.candidates import Candidate, SourceKind
from profiles.domains import FACT_DOMAINS, key_problem
from profiles.models import Tenant

REASONING_SUBTYPES = frozenset(
    {"reasoning", "thought", "thinking", "chain_of_thought", "plan_draft"}
)
# The promotion scan runs hourly: an item must outlive the minimum age by one run.
PROMOTION_SCAN_MINUTES = 60
MAX_HIT_DOUBLINGS = 10


@dataclass(frozen=True)
class PolicySettings:
    """A tenant's write policy as plain values (the defaults when it has none)."""

    version: int = 0
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    write_threshold: float = 3
    novelty_high_threshold: float = 0.5
    confidence_high_threshold: float = 0.8
    transient_ttl_minutes: int = 10
    raw_blob_chars: int = 400
    max_summary_chars: int = 2000
    ttl_minutes_by_type: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_TTL_MINUTES))
    min_ttl_minutes: int = 5
    max_ttl_minutes: int = 30 * 24 * 60
    # From the promotion policy: how long an item must live to be proposed at all.
    promotable_ttl_minutes: int = 24 * 60 + PROMOTION_SCAN_MINUTES

    @classmethod
    def from_model(cls, policy: WritePolicy) -> PolicySettings:
        values = {name: getattr(policy, name) for name in POLICY_FIELDS}
        values["weights"] = {**DEFAULT_WEIGHTS, **policy.weights}
        values["ttl_minutes_by_type"] = {**DEFAULT_TTL_MINUTES, **policy.ttl_minutes_by_type}
        return cls(version=policy.version, **values)


def policy_for(*, tenant: Tenant) -> PolicySettings:
    """The tenant's current write policy, with the promotion policy's minimum age."""
    current = WritePolicy.objects.filter(tenant=tenant, is_current=True).first()
    settings = PolicySettings.from_model(current) if current else PolicySettings()
    promotion = PromotionPolicy.objects.filter(tenant=tenant).first()
    if promotion is None:
        return settings
    minutes = round(promotion.min_age_hours * 60) + PROMOTION_SCAN_MINUTES
    return replace(settings, promotable_ttl_minutes=minutes)


@dataclass(frozen=True)
class ExistingState:
    """What Layer 2 already holds that bears on a candidate."""

    same_fact: bool = False  # same fingerprint, or same canonical key with the same value
    updates_fact: bool = False  # same canonical key with another value (it will supersede)
    nearby_summaries: Sequence[str] = ()  # recent items of the same task or session
    hits: int = 0  # how often the same live item was written already


@dataclass(frozen=True)
class WriteProfile:
    """The design's write_profile of one candidate."""

    is_verified: bool
    is_stable_for_current_task: bool
    is_user_constraint: bool
    is_decision: bool
    is_preference: bool
    novelty: float
    confidence: float
    estimated_ttl_minutes: int
    duplicate: bool
    transient: bool
    raw_unstructured_blob: bool


@dataclass(frozen=True)
class Decision:
    """The policy's verdict on one candidate, with the reasons to show a caller."""

    accepted: bool
    score: float
    breakdown: dict[str, float]
    profile: WriteProfile
    ttl_minutes: int
    refusal: str = ""  # machine-readable reason when refused
    policy_version: int = 0
    repeat: bool = False  # the same live item again: merged into it as a hit

    def as_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "score": self.score,
            "threshold_breakdown": self.breakdown,
            "write_profile": asdict(self.profile),
            "ttl_minutes": self.ttl_minutes,
            "refusal": self.refusal,
            "policy_version": self.policy_version,
            "repeat": self.repeat,
        }


_TOKEN = re.compile(r"[a-z0-9_]+|[\u3400-\u9fff]")


def tokens(text: str) -> set[str]:
    """Words of Latin text and single characters of Chinese text, lower-cased."""
    return set(_TOKEN.findall(text.lower()))


def novelty_of(summary: str, nearby: Sequence[str]) -> float:
    """1 − the highest Jaccard overlap with what is already held nearby."""
    mine = tokens(summary)
    if not mine:
        return 0.0
    overlap = max(
        (len(mine & theirs) / len(mine | theirs) for theirs in map(tokens, nearby) if theirs),
        default=0.0,
    )
    return round(1.0 - overlap, 3)


def write_profile(
    candidate: Candidate, *, existing: ExistingState, settings: PolicySettings
) -> WriteProfile:
    kind = candidate.memory_type
    estimated_ttl = candidate.ttl_minutes or settings.ttl_minutes_by_type.get(kind, 60)
    transient = estimated_ttl < settings.transient_ttl_minutes
    if existing.same_fact:
        novelty = 0.0
    elif existing.updates_fact:
        novelty = 1.0
    else:
        novelty = novelty_of(candidate.summary, existing.nearby_summaries)
    summary = candidate.summary
    return WriteProfile(
        is_verified=candidate.verified,
        is_stable_for_current_task=bool(candidate.task_id)
        and kind != MemoryType.HYPOTHESIS
        and not transient
        and candidate.confidence >= 0.6,
        is_user_constraint=kind == MemoryType.CONSTRAINT
        and candidate.source_kind not in (SourceKind.ASSISTANT, SourceKind.TOOL),
        is_decision=kind == MemoryType.DECISION,
        is_preference=kind == MemoryType.PREFERENCE,
        novelty=novelty,
        confidence=candidate.confidence,
        estimated_ttl_minutes=estimated_ttl,
        duplicate=existing.same_fact,
        transient=transient,
        raw_unstructured_blob=len(summary) > settings.raw_blob_chars or summary.count("\n") >= 4,
    )


def score(profile: WriteProfile, settings: PolicySettings) -> tuple[float, dict[str, float]]:
    """The write score and each term's contribution."""
    terms = {
        "verified": profile.is_verified,
        "user_constraint": profile.is_user_constraint,
        "decision": profile.is_decision,
        "stable_for_task": profile.is_stable_for_current_task,
        "novelty_high": profile.novelty >= settings.novelty_high_threshold,
        "confidence_high": profile.confidence >= settings.confidence_high_threshold,
        "duplicate": profile.duplicate,
        "transient": profile.transient,
        "raw_blob": profile.raw_unstructured_blob,
    }
    breakdown = {name: float(settings.weights[name]) if on else 0.0 for name, on in terms.items()}
    return sum(breakdown.values()), breakdown


def hard_refusal(candidate: Candidate, *, settings: PolicySettings, vocabulary: Vocabulary) -> str:
    """What the design never stores, whatever the score: '' when none applies."""
    summary = candidate.summary.strip()
    if not summary:
        return "empty"
    if len(summary) > settings.max_summary_chars:
        return "raw_log"
    if candidate.subtype in REASONING_SUBTYPES:
        return "model_reasoning"
    if vocabulary.matches("chitchat", summary):
        return "chit_chat"
    if not candidate.session_id and not candidate.task_id:
        return "unrelated_to_session_or_task"
    return ""


def decide(
    candidate: Candidate,
    *,
    existing: ExistingState,
    settings: PolicySettings,
    vocabulary: Vocabulary,
) -> Decision:
    """Judge one (already redacted) candidate."""
    profile = write_profile(candidate, existing=existing, settings=settings)
    total, breakdown = score(profile, settings)
    refusal = hard_refusal(candidate, settings=settings, vocabulary=vocabulary)
    if not refusal and total < settings.write_threshold:
        # The same statement again is no new item, but a hit on the live one.
        repeat = profile.duplicate and total - breakdown["duplicate"] >= settings.write_threshold
        refusal = "" if repeat else "score_below_threshold"
    return Decision(
        accepted=not refusal,
        score=total,
        breakdown=breakdown,
        profile=profile,
        ttl_minutes=lifetime_minutes(candidate, profile, existing=existing, settings=settings),
        refusal=refusal,
        policy_version=settings.version,
        repeat=profile.duplicate and not refusal,
    )


def is_promotable_without_hits(candidate: Candidate) -> bool:
    """Whether promotion may propose the item for what it is, however rarely it recurs."""
    if candidate.remember or candidate.memory_type == MemoryType.PREFERENCE:
        return True
    key = candidate.canonical_fact_key
    return bool(key and candidate.fact_value) and key_problem(key, domains=FACT_DOMAINS) is None


def lifetime_minutes(
    candidate: Candidate,
    profile: WriteProfile,
    *,
    existing: ExistingState,
    settings: PolicySettings,
) -> int:
    """The item's TTL: its type's, doubled by each earlier hit of the same live item, at least
    the promotion gate's age for what promotion may propose without hits; then clamped."""
    ttl = profile.estimated_ttl_minutes
    if existing.same_fact and existing.hits:
        ttl *= 2 ** min(existing.hits, MAX_HIT_DOUBLINGS)
    if is_promotable_without_hits(candidate):
        ttl = max(ttl, settings.promotable_ttl_minutes)
    return min(max(ttl, settings.min_ttl_minutes), settings.max_ttl_minutes)
