"""Asking long-term memory and history within one recall: start, decide, collect.

0. `start_early` (before the runtime state is read): a question the rules cannot answer from the
   profile or the task (by its words alone) starts its branches and the query's embedding at
   once, so that they run while Redis is read; the first routing then takes them over.
1. `start_asking` (right after the first routing): the query's content terms and time window go
   into the query profile; every branch starts for a query with content terms (or one a rule
   routes), the time-window branches too when the window is an explicit date.
2. `settle_route` (after Layer 2): the best coverage of the content terms among the lexical hits
   (the relevance floor), or a vector hit close enough in meaning (`semantic.py`), decides
   whether the user's memory holds the query; routing is decided again with that, and a
   relative time window is re-anchored at the newest memory found when the request time lies
   past everything the user said (see `timefilter.py`).
3. `memory_hits.memory_candidates`: the routed sources' branches, fused, as pool candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from memories.recall.branches import Fusion, MemorySearch, card_text
from memories.recall.own_world import MEMORIES as OWN_MEMORIES
from memories.recall.own_world import WORLD_BELOW, answers, own_world_score
from memories.recall.query_profile import Intent, QueryProfile, RuntimeState, build_query_profile
from memories.recall.relevance import (
    Alternates,
    best_holding,
    content_terms,
    holding_of,
    names_in,
    query_names,
)
from memories.recall.relevance import related_words as related_words_of
from memories.recall.routing import Route, route
from memories.recall.semantic import (
    CONFIRMING_MARGIN,
    MAX_SHARED_BY,
    SEMANTIC_MARGIN,
    background,
)
from memories.recall.timefilter import TimeQuery, TimeWindow, parse_time_query, reanchor
from memories.vocabulary import Vocabulary
from profiles.models import Tenant

# Defaults of the recall policy's fusion, floor and time fields (a cached tenant document
# written before they existed lacks them).
POLICY_DEFAULTS: dict[str, Any] = {
    "fusion_lexical_weight": 1.25,
    "fusion_vector_weight": 1.0,
    "fusion_rrf_k": 5,
    "relevance_floor": 0.34,
    "time_boost": 0.5,
    "history_depth": 30,
}


def policy_value(policy: dict[str, Any], name: str) -> Any:
    return policy.get(name, POLICY_DEFAULTS[name])


@dataclass
class Asking:
    search: MemorySearch | None
    time_query: TimeQuery
    floor: float
    depth: int
    alternates: Alternates | None = None
    language: str = "en"
    # Cards and history entries near a question about the user's own world (own_world.py).
    own_nearest: set[str] = field(default_factory=set)
    _meaning: tuple[list[float], float] | None = field(default=None, repr=False)
    _own_world: float | None = field(default=None, repr=False)
    # The vocabulary names the query a question about the world ("What does deploy mean?").
    world_named: bool = False
    # Index terms of what the query names (query_names).
    names: frozenset[str] = frozenset()

    @property
    def window(self) -> TimeWindow | None:
        return self.time_query.window

    def meaning(self) -> tuple[list[float], float] | None:
        """The query's embedding and its background (`semantic.py`), worked out once; None
        when nothing embeds the query or the embedding failed."""
        if self._meaning is None and self.search is not None:
            vector = self.search.query_vector()
            if vector is not None:
                self._meaning = (vector, background(vector))
        return self._meaning

    def own_world(self) -> float | None:
        """How much the query reads as one about the user's own world (`own_world.py`); None
        when the query has no embedding."""
        if not settings.RECALL_OWN_WORLD:
            return None
        meaning = self.meaning()
        if self._own_world is None and meaning is not None:
            self._own_world = round(own_world_score(meaning[0]), 4)
        return self._own_world

    def note_world(self, profile: QueryProfile) -> None:
        """A query closer to questions about the world than to questions about oneself is
        not about the user, whatever its pronouns ("How do I reverse a string?", "长江有多长？"),
        unless it is asked within a task ("现在怀疑是什么原因？" asks about the task): its own
        score goes into the profile with that. A query the vocabulary names a question about
        the world ("What does deploy mean?") is one, whatever its score."""
        score = self.own_world()
        if score is None:
            return
        profile.own_world_score = score
        if self.world_named:
            profile.about_world = True
        elif score < WORLD_BELOW and not profile.active_task_id:
            profile.about_world = True
            profile.about_user = False

    def answered_by(
        self, margins: Iterable[tuple[str, float]], texts: Mapping[str, str]
    ) -> list[str]:
        """Of (key, margin above the background) pairs, the keys of the memories nearest a
        question about the user's own world that answer it (at most `own_world.MEMORIES`);
        `texts` (key -> text of the memories searched): when one of them holds a name the
        query gives ("What books has Melanie read?"), the words answer it and this rule does
        not (a name none of them holds, "Q1", changes nothing)."""
        score = self.own_world()
        if score is None or self.world_named:
            return []
        if self.names and any(names_in(self.names, text) for text in texts.values()):
            return []
        ranked = sorted(margins, key=lambda pair: -pair[1])
        nearest = ranked[:OWN_MEMORIES]
        return [key for key, margin in nearest if answers(score, margin, self.language)]


def start_early(
    *,
    tenant: Tenant,
    user_id: str,
    session_id: str,
    query: str,
    project: str,
    task_id: str,
    policy: dict[str, Any],
    vocabulary: Vocabulary,
    forced_layers: Collection[str],
    has_history: bool,
    has_cards: bool,
) -> MemorySearch | None:
    """The searches of a question about the past, started before the runtime state is read;
    None for a query the rules may answer from the profile or the task (its words name one),
    or one without content terms: the first routing decides those, as it always did."""
    ltm_on, history_on = _sources(forced_layers, has_history=has_history, has_cards=has_cards)
    terms = content_terms(query)
    if not (ltm_on or history_on) or not terms:
        return None
    words_only = build_query_profile(
        query=query, vocabulary=vocabulary, runtime=RuntimeState(active_task_id=task_id)
    )
    if words_only.intent in Intent.TASK_INTENTS | Intent.PROFILE_INTENTS:
        return None
    search = _search(
        tenant=tenant,
        user_id=user_id,
        session_id=session_id,
        query=query,
        project=project,
        policy=policy,
        ltm=ltm_on,
        history=history_on,
        related=related_words_of(terms, vocabulary),
    )
    search.start_lexical()
    search.start_vector(ltm=True, history=True)
    return search


def start_asking(
    *,
    tenant: Tenant,
    user_id: str,
    session_id: str,
    query: str,
    project: str,
    profile: QueryProfile,
    decided: Route,
    policy: dict[str, Any],
    forced_layers: Collection[str],
    has_history: bool,
    has_cards: bool = True,
    now: datetime | None = None,
    alternates: Alternates | None = None,
    related_words: Collection[str] = (),
    early: MemorySearch | None = None,
) -> Asking:
    """`early`: the searches `start_early` began for this query, taken over when it is asked
    (they are left to finish unread when the rules answer it after all)."""
    profile.content_terms = content_terms(query)
    time_query = parse_time_query(query, now=now or datetime.now(UTC))
    profile.time = time_query.as_dict()
    floor = float(policy_value(policy, "relevance_floor"))
    depth = int(policy_value(policy, "history_depth"))
    ltm_on, history_on = _sources(forced_layers, has_history=has_history, has_cards=has_cards)
    if not (ltm_on or history_on) or not (profile.content_terms or decided.ltm or decided.history):
        return Asking(search=None, time_query=time_query, floor=floor, depth=depth)
    about_now = profile.intent in Intent.TASK_INTENTS | Intent.PROFILE_INTENTS
    rules_answer = (decided.redis or decided.postgres) and not (decided.ltm or decided.history)
    if about_now and rules_answer and not forced_layers:
        # The rules answer it from the profile and short-term memory; probing the user's
        # earlier memory would put a long-term search on the path of every task step.
        profile.probe_skipped = True
        return Asking(search=None, time_query=time_query, floor=floor, depth=depth)
    search = early or _search(
        tenant=tenant,
        user_id=user_id,
        session_id=session_id,
        query=query,
        project=project,
        policy=policy,
        ltm=ltm_on,
        history=history_on,
        related=list(related_words),
    )
    search.start_lexical()
    # The vector branches start at once too, before the lexical answer says whether they are
    # needed: waiting for it would put both on the critical path of every question about the
    # past (an unrelated query wastes one embedding and two nearest-neighbour searches).
    search.start_vector(ltm=True, history=True)
    window = time_query.window
    if window is not None and not window.relative:
        search.start_window(window)  # explicit dates never move
    return Asking(
        search=search,
        time_query=time_query,
        floor=floor,
        depth=depth,
        alternates=alternates,
        language=profile.language,
        names=frozenset(query_names(query, profile.entities)),
        world_named=bool(profile.matched.get("world_question")),
    )


def _sources(
    forced_layers: Collection[str], *, has_history: bool, has_cards: bool
) -> tuple[bool, bool]:
    """Whether long-term memory and history can be asked at all (cards, switch, forced layers)."""
    ltm_on = has_cards and (not forced_layers or "ltm" in forced_layers)
    history_on = has_history and (not forced_layers or "history" in forced_layers)
    return ltm_on, history_on


def _search(
    *,
    tenant: Tenant,
    user_id: str,
    session_id: str,
    query: str,
    project: str,
    policy: dict[str, Any],
    ltm: bool,
    history: bool,
    related: list[str],
) -> MemorySearch:
    return MemorySearch(
        tenant=tenant,
        user_id=user_id,
        session_id=session_id,
        query=query,
        project=project,
        depth=int(policy_value(policy, "history_depth")),
        fusion=Fusion(
            lexical_weight=float(policy_value(policy, "fusion_lexical_weight")),
            vector_weight=float(policy_value(policy, "fusion_vector_weight")),
            rrf_k=int(policy_value(policy, "fusion_rrf_k")),
        ),
        ltm=ltm,
        history=history,
        related_words=related,
    )


def settle_route(
    asking: Asking,
    profile: QueryProfile,
    *,
    query: str,
    forced_layers: Collection[str],
    fail: Callable[[str, str], None],
) -> Route:
    """Routing again, now knowing whether the user's memory holds the query."""
    search = asking.search
    newest: datetime | None = None
    if search is not None and profile.content_terms:
        ltm_result, history_result, failed = search.lexical_results()
        for layer in failed:
            fail(layer, "lexical branch failed or was too slow")
        texts = [(h.memory_id, card_text(h)) for h in ltm_result.hits] if ltm_result else []
        if history_result:
            texts.extend((h.entry_id, f"{h.text} {h.context}") for h in history_result.hits)
            newest = max((h.occurred_at for h in history_result.hits), default=None)
        holding = best_holding(profile.content_terms, texts, asking.alternates)
        names = query_names(query, profile.entities)
        profile.holding_share = holding.share
        profile.held_terms = list(holding.terms)
        profile.holds_firmly = holding.firmly(asking.floor, names)
        # Words enough decide alone; what the meaning adds is worked out only when they do not.
        meaning = None if profile.holds_firmly else asking.meaning()
        if meaning is not None:
            asking.note_world(profile)
        if profile.holds_firmly:
            profile.memory_holds = True
        elif not profile.about_user:  # a question about the world: words enough, or meaning
            meaning = asking.meaning()
            profile.memory_holds = False
            if meaning is not None:
                _close_in_meaning(asking, profile, search.nearest(), meaning[1])
        elif meaning is None:  # no embedding: the words alone decide
            profile.memory_holds = holding.holds(asking.floor, names)
        else:
            found = search.nearest()
            nearest = [(round(cosine - meaning[1], 4), text) for _, cosine, text in found]
            _close_in_meaning(asking, profile, found, meaning[1])
            profile.memory_holds = _confirmed(asking, profile.content_terms, texts, nearest)
    decided = route(profile, forced_layers=forced_layers)
    if search is not None and (decided.ltm or decided.history):
        search.start_lexical()
        search.start_vector(ltm=decided.ltm, history=decided.history)
        window = asking.time_query.window
        if window is not None and window.relative and decided.history:
            asking.time_query = reanchor(asking.time_query, newest=newest)
            profile.time = asking.time_query.as_dict()
            if asking.time_query.window is not None:
                search.start_window(asking.time_query.window)
    return decided


def _close_in_meaning(
    asking: Asking, profile: QueryProfile, found: list[tuple[str, float, str]], base: float
) -> None:
    """The closest card or history entry in meaning, and those near a question about the
    user's own world: either makes the memory close to the query."""
    margins = [(key, round(cosine - base, 4)) for key, cosine, _ in found]
    profile.semantic_margin = max((margin for _, margin in margins), default=0.0)
    asking.own_nearest = set(asking.answered_by(margins, {key: text for key, _, text in found}))
    profile.own_world_memories += len(asking.own_nearest)
    profile.memory_close = profile.semantic_margin >= SEMANTIC_MARGIN or bool(asking.own_nearest)


def _confirmed(
    asking: Asking,
    terms: list[str],
    texts: list[tuple[str, str]],
    nearest: list[tuple[float, str]],
) -> bool:
    """One shared word is weak evidence: it counts when a memory holding it (of those the vector
    branches found, with their margins) is close enough in meaning itself, and few memories (of
    the lexical hits) hold it."""
    close = [text for margin, text in nearest if margin >= CONFIRMING_MARGIN]
    if not any(holding_of(terms, t, asking.alternates).partly(asking.floor) for t in close):
        return False
    shared_by = sum(
        holding_of(terms, text, asking.alternates).partly(asking.floor) for _, text in texts
    )
    return shared_by <= MAX_SHARED_BY
