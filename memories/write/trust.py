"""Whose word a candidate is: its trust, the confidence its source allows, and whether it must
wait for a reviewer before it may become a rule.

The design ranks confidence by source: a user's statement > a tool's result > a model's guess.
A constraint, a preference or a profile fact is the user's only when the user said it (extracted
from a user event), a reviewer approved it, or a key its tenant marked as a trusted writer wrote
it; from anyone else it is held for verification.
"""

from __future__ import annotations

from memories.stm.items import MemoryType, Trust
from memories.write.candidates import Candidate, SourceKind
from profiles.domains import FACT_DOMAINS, key_problem
from profiles.services.profile_trust import ProfileHoldReason

TRUSTED_KINDS = frozenset({SourceKind.USER, SourceKind.REVIEWER})
# Writers a trusted key may speak for: an agent's proposal, an import.
KEY_TRUSTED_KINDS = frozenset({SourceKind.PROPOSAL, SourceKind.IMPORT})

# The highest confidence an untrusted source may claim.
CONFIDENCE_CEILING = {
    SourceKind.TOOL: 0.9,  # what a tool measured
    SourceKind.IMPORT: 0.8,
    SourceKind.PROPOSAL: 0.7,  # an agent's reading of the conversation
    SourceKind.LLM: 0.7,
    SourceKind.ASSISTANT: 0.6,  # the model's own statement
}
UNKNOWN_CEILING = 0.6


class HoldReason:
    """Why a candidate waits in the verification queue (machine-readable)."""

    CONSTRAINT = "untrusted_constraint"
    # The same codes Layer 1 gives a held profile value.
    PREFERENCE = ProfileHoldReason.PREFERENCE
    PROFILE_FACT = ProfileHoldReason.PROFILE_FACT


def trust_of(*, source_kind: str, trusted_writer: bool) -> str:
    """Trusted for the user's own words and a reviewer's, and for what a trusted key writes."""
    if source_kind in TRUSTED_KINDS:
        return Trust.TRUSTED
    if trusted_writer and source_kind in KEY_TRUSTED_KINDS:
        return Trust.TRUSTED
    return Trust.UNTRUSTED


def confidence_ceiling(*, source_kind: str, trust: str) -> float:
    if trust == Trust.TRUSTED:
        return 1.0
    return CONFIDENCE_CEILING.get(source_kind, UNKNOWN_CEILING)


def is_profile_fact(candidate: Candidate) -> bool:
    """A fact filling a domain key (`profile.timezone`, `project_metadata.default_env`, ...),
    which promotion would write to PostgreSQL."""
    key = candidate.canonical_fact_key
    return (
        candidate.memory_type == MemoryType.FACT
        and bool(key and candidate.fact_value)
        and key_problem(key, domains=FACT_DOMAINS) is None
    )


def hold_reason(candidate: Candidate, *, trust: str) -> str:
    """Why an untrusted rule must wait for a reviewer; '' when it need not."""
    if trust == Trust.TRUSTED:
        return ""
    if candidate.memory_type == MemoryType.CONSTRAINT:
        return HoldReason.CONSTRAINT
    if candidate.memory_type == MemoryType.PREFERENCE:
        return HoldReason.PREFERENCE
    if is_profile_fact(candidate):
        return HoldReason.PROFILE_FACT
    return ""
