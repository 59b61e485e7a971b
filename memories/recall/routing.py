"""Which layers a recall asks, and why: the design's rules over the query profile."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from memories.recall.query_profile import Intent, QueryProfile

LAYERS = ("postgres", "redis", "ltm", "history")


@dataclass
class Route:
    """Each layer's decision with its reasons; `forced` when the caller chose the layers."""

    postgres: bool
    redis: bool
    ltm: bool
    ltm_mode: str
    reasons: dict[str, list[str]] = field(default_factory=dict)
    forced: bool = False
    history: bool = False  # raw history: the lowest-priority fallback source
    declined: dict[str, list[str]] = field(default_factory=dict)  # why a layer was not asked

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
        (
            f"{profile.user_items_matched - profile.user_items_close} live items of the user "
            "hold the query's terms",
            profile.user_items_matched > profile.user_items_close,
        ),
        (
            f"{profile.user_items_close} live items of the user are close to the query in meaning",
            profile.user_items_close > 0,
        ),
    )
    holds = (
        f"the user's memory holds {', '.join(profile.held_terms)} "
        f"({profile.holding_share:.0%} of the query's content terms)",
        profile.memory_holds,
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
        # A question about the user's past: its content terms are in the user's memory.
        holds,
        (
            f"the user's memory is close to the query in meaning "
            f"({profile.semantic_margin:+.3f} above its background)",
            profile.memory_close,
        ),
    )
    # History answers whatever long-term memory is asked for, as its fallback.
    history_reasons = list(ltm_reasons)
    decided = Route(
        postgres=bool(pg_reasons),
        redis=bool(redis_reasons),
        ltm=bool(ltm_reasons),
        ltm_mode=ltm_mode(profile),
        reasons={
            "postgres": pg_reasons,
            "redis": redis_reasons,
            "ltm": ltm_reasons,
            "history": history_reasons,
        },
        history=bool(history_reasons),
    )
    for layer in LAYERS:
        decided.declined[layer] = [] if decided.asks(layer) else ["no rule applies"]
    if not decided.ltm and profile.probe_skipped:
        current = (
            f"intent {profile.intent} asks about the current task or the profile: the user's "
            "earlier memory is not probed"
        )
        decided.declined["ltm"] = decided.declined["history"] = [current]
    elif not decided.ltm and profile.content_terms:
        floor = (
            f"below the relevance floor: the user's memory holds "
            f"{profile.holding_share:.0%} of {', '.join(profile.content_terms)}, and nothing in "
            f"it is close in meaning ({profile.semantic_margin:+.3f} above the background)"
        )
        decided.declined["ltm"] = decided.declined["history"] = [floor]
    elif not decided.ltm:
        nothing = "no content terms: small talk or a bare instruction"
        decided.declined["ltm"] = decided.declined["history"] = [nothing]
    if forced_layers:
        decided.forced = True
        for layer in LAYERS:
            asked = layer in forced_layers
            if asked != decided.asks(layer):
                if asked:
                    decided.reasons[layer] = ["asked by the caller"]
                else:
                    decided.declined[layer] = ["skipped by the caller"]
                    decided.reasons[layer] = ["skipped by the caller"]
            setattr(decided, layer, asked)
            decided.declined[layer] = [] if asked else ["skipped by the caller"]
    return decided


def ltm_mode(profile: QueryProfile) -> str:
    """Hybrid: both branches fused (weights measured on the development split, in the
    tenant's recall policy); it beat either branch alone for named and vague questions alike."""
    return "hybrid"


def _reasons(*rules: tuple[str, bool]) -> list[str]:
    return [reason for reason, holds in rules if holds]
