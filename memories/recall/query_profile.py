"""The query profile: what a recall query asks for, from rules, word lists and runtime state.

No model is involved, so every field can be explained by the words or the state that set it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from memories.recall.relevance import about_the_user
from memories.vocabulary import Vocabulary

_CJK = re.compile(r"[\u3400-\u9fff]")


class Intent:
    DEBUG_CONTINUE = "debug_continue"
    CONTINUE_TASK = "continue_task"
    VERIFY_CURRENT_STATE = "verify_current_state"
    PROFILE_QUERY = "profile_query"
    PERMISSION_QUERY = "permission_query"
    CONFIG_QUERY = "config_query"
    SIMILAR_CASE = "similar_case"
    GENERAL = "general"
    TASK_INTENTS = frozenset({DEBUG_CONTINUE, CONTINUE_TASK, VERIFY_CURRENT_STATE})
    PROFILE_INTENTS = frozenset({PROFILE_QUERY, PERMISSION_QUERY, CONFIG_QUERY})


@dataclass(frozen=True)
class RuntimeState:
    """What the service knows about the moment of the query, before asking any layer for memories.

    `session_entities` are the entities of the session's recent short-term items and
    `known_entities` those of every recent item of the user (the entity indexes the query hit).
    """

    active_task_id: str = ""
    session_recent: bool = False
    session_entities: Sequence[str] = ()
    known_entities: Sequence[str] = ()
    profile_cache_missing: bool = False
    profile_cache_stale: bool = False


@dataclass
class QueryProfile:
    """The design's query profile, plus the words that set each flag (for `explain`)."""

    intent: str
    language: str
    has_reference: bool
    has_profile_request: bool
    has_similarity_request: bool
    fuzzy_history_reference: bool
    has_debug_terms: bool
    entities: list[str]
    active_task_id: str
    session_recent: bool
    topic_shift: bool
    needs_exact_metadata: bool
    recent_entity_overlap: int
    profile_cache_missing: bool
    profile_cache_stale: bool
    redis_result_insufficient: bool = False
    matched: dict[str, list[str]] = field(default_factory=dict)
    # Set by recall once the cheap lexical branches answered (see relevance.py).
    content_terms: list[str] = field(default_factory=list)
    memory_holds: bool = False
    holds_firmly: bool = False  # two content terms or a name, whatever their meaning
    probe_skipped: bool = False  # the query is about the current task or the profile
    holding_share: float = 0.0
    held_terms: list[str] = field(default_factory=list)
    user_items_matched: int = 0  # the user's live items (any session) holding the query
    user_items_close: int = 0  # of those, how many only by meaning (semantic.py)
    related_terms: list[str] = field(default_factory=list)  # content terms with related words
    memory_close: bool = False  # a card or history entry is close in meaning (semantic.py)
    about_user: bool = True  # names the user or the assistant (see relevance.about_the_user)
    semantic_margin: float = 0.0  # its cosine above the query's background
    # How much the query reads as one about the user's own world (own_world.py), and how many
    # memories it brought by that alone.
    own_world_score: float = 0.0
    own_world_memories: int = 0
    about_world: bool = False  # reads as a question about the world at large, by its meaning
    time: dict[str, Any] = field(default_factory=dict)  # the time window the query names

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# Word-list kinds the profile reads; each can be extended per tenant.
PROFILE_KINDS = (
    "reference",
    "profile_request",
    "permission_request",
    "config_request",
    "similarity_request",
    "fuzzy_history",
    "debug",
    "verify",
    "continue",
    "exact_metadata",
    "world_question",
)


def query_language(text: str) -> str:
    """`zh` when the query is mostly Chinese, else `en`."""
    cjk = len(_CJK.findall(text))
    latin = len(re.findall(r"[A-Za-z]", text))
    return "zh" if cjk and cjk * 3 >= latin else "en"


def build_query_profile(
    *,
    query: str,
    vocabulary: Vocabulary,
    runtime: RuntimeState,
    entities: Sequence[str] | None = None,
) -> QueryProfile:
    """Turn the query text and the runtime state into a query profile; `entities` are the
    query's own (from the vocabulary) when the caller found them already."""
    matched = {kind: vocabulary.findall(kind, query) for kind in PROFILE_KINDS}
    hit = {kind: bool(words) for kind, words in matched.items()}

    entities = list(entities) if entities is not None else vocabulary.find_entities(query)
    lowered = query.lower()
    seen = {e.lower() for e in entities}
    for entity in runtime.session_entities:
        # Entities the session already talks about count even when no list or pattern knows them.
        if entity.lower() not in seen and entity.lower() in lowered:
            entities.append(entity)
            seen.add(entity.lower())
    known = {e.lower() for e in (*runtime.known_entities, *runtime.session_entities)}
    overlap = sum(1 for e in entities if e.lower() in known)
    session_known = {e.lower() for e in runtime.session_entities}
    # A recent session whose entities the query names none of, while naming others, moved on.
    topic_shift = bool(
        runtime.session_recent
        and session_known
        and entities
        and not any(e.lower() in session_known for e in entities)
        and not hit["reference"]
        and not hit["continue"]
    )

    intent = _intent(hit, has_task=bool(runtime.active_task_id))
    return QueryProfile(
        intent=intent,
        language=query_language(query),
        has_reference=hit["reference"],
        has_profile_request=hit["profile_request"],
        has_similarity_request=hit["similarity_request"],
        fuzzy_history_reference=hit["fuzzy_history"],
        has_debug_terms=hit["debug"],
        entities=entities,
        active_task_id=runtime.active_task_id,
        session_recent=runtime.session_recent,
        topic_shift=topic_shift,
        needs_exact_metadata=hit["exact_metadata"],
        recent_entity_overlap=overlap,
        profile_cache_missing=runtime.profile_cache_missing,
        profile_cache_stale=runtime.profile_cache_stale,
        matched={kind: words for kind, words in matched.items() if words},
        about_user=about_the_user(query) and not hit["world_question"],
    )


def _intent(hit: dict[str, bool], *, has_task: bool) -> str:
    """Ordered rules: carrying on a task beats the profile words it may mention in passing."""
    carrying_on = hit["continue"] or hit["reference"] or has_task
    if hit["debug"] and carrying_on and not hit["verify"]:
        return Intent.DEBUG_CONTINUE
    if hit["permission_request"]:
        return Intent.PERMISSION_QUERY
    if hit["config_request"]:
        return Intent.CONFIG_QUERY
    if hit["profile_request"]:
        return Intent.PROFILE_QUERY
    if hit["verify"]:
        return Intent.VERIFY_CURRENT_STATE
    if hit["continue"] or (hit["reference"] and has_task):
        return Intent.CONTINUE_TASK
    if hit["similarity_request"] or hit["fuzzy_history"]:
        return Intent.SIMILAR_CASE
    if hit["debug"]:
        return Intent.DEBUG_CONTINUE
    return Intent.GENERAL
