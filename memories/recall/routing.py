"""Which layers a recall asks, and why: the design's rules over the query profile."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from memories.recall.query_profile import Intent, QueryProfile

LAYERS = ("postgres", "redis", "ltm")


@dataclass
class Route:
    """Each layer's decision with its reasons; `forced` when the caller chose the layers."""

    postgres: bool
    redis: bool
    ltm: bool
    ltm_mode: str
    reasons: dict[str, list[str]] = field(default_factory=dict)
    forced: bool = False

    def asks(self, layer: str) -> bool:
        return bool(getattr(self, layer))


def route(profile: QueryProfile, *, forced_layers: Collection[str] = ()) -> Route:
    """need_pg / need_redis / need_ltm as the design states them, then refined."""
    pg_reasons = _reasons(
        ("profile cache missing", profile.profile_cache_missing),
        ("profile cache stale", profile.profile_cache_stale),
        (f"intent {profile.intent}", profile.intent in Intent.PROFILE_INTENTS),
        ("needs exact metadata", profile.needs_exact_metadata),
    )
    redis_reasons = _reasons(
        ("refers to the current context", profile.has_reference),
        (
            f"active task {profile.active_task_id} and intent {profile.intent}",
            bool(profile.active_task_id) and profile.intent in Intent.TASK_INTENTS,
        ),
        (
            f"{profile.recent_entity_overlap} entities seen recently",
            profile.recent_entity_overlap > 0,
        ),
    )
    ltm_reasons = _reasons(
        ("asks for similar or past cases", profile.has_similarity_request),
        ("fuzzy reference to history", profile.fuzzy_history_reference),
        ("short-term results insufficient", profile.redis_result_insufficient),
        # Refinement: a symptom being debugged is worth checking against earlier cases.
        (
            "debugging a symptom: earlier cases may hold its cause",
            profile.intent == Intent.DEBUG_CONTINUE
            and profile.has_debug_terms
            and bool(profile.entities),
        ),
        # Refinements: a new topic, or a new session, has no short-term memory yet to lean on.
        ("topic shift away from the session", profile.topic_shift),
        (
            "new session naming known things: earlier experience may apply",
            not profile.session_recent
            and profile.intent == Intent.GENERAL
            and bool(profile.entities),
        ),
    )
    decided = Route(
        postgres=bool(pg_reasons),
        redis=bool(redis_reasons),
        ltm=bool(ltm_reasons),
        ltm_mode=ltm_mode(profile),
        reasons={"postgres": pg_reasons, "redis": redis_reasons, "ltm": ltm_reasons},
    )
    if forced_layers:
        decided.forced = True
        for layer in LAYERS:
            asked = layer in forced_layers
            if asked != decided.asks(layer):
                decided.reasons[layer] = [f"{'asked' if asked else 'skipped'} by the caller"]
            setattr(decided, layer, asked)
    return decided


def ltm_mode(profile: QueryProfile) -> str:
    """Explicit entities, error codes or API names → lexical; vague → vector; both → hybrid."""
    vague = profile.has_similarity_request or profile.fuzzy_history_reference
    if profile.entities and vague:
        return "hybrid"
    if profile.entities:
        return "lexical"
    return "vector"


def _reasons(*rules: tuple[str, bool]) -> list[str]:
    return [reason for reason, holds in rules if holds]
