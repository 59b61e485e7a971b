"""Before long-term memory and history are asked: the runtime state, the query profile and the
first route; then, once the query is embedded, the user's live items matched again by meaning
and Layer 2 routed again with them.

The user's newest live items (any session) are matched against the query by their words first;
a partial word match waits for its meaning to count (`route_by_meaning`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memories.recall.asking import Asking, policy_value
from memories.recall.layer1 import Layer1
from memories.recall.probe import MAX_ENTITIES, Probe, stm_probe
from memories.recall.query_profile import QueryProfile, RuntimeState, build_query_profile
from memories.recall.relevance import Alternates, content_terms, query_names, related_terms
from memories.recall.routing import Route, route
from memories.recall.semantic import CONFIRMING_MARGIN, MAX_SHARED_BY, SEMANTIC_MARGIN, cosines
from memories.recall.standing import user_matches
from memories.recall.trace import Trace, why
from memories.stm.items import StmItem
from memories.stm.store import now_seconds, recall_stm_store
from memoryproject.errors import StoreUnavailable
from memoryproject.redis_keys import Owner


@dataclass
class Routed:
    """What recall knows before asking long-term memory and history, and the route it decided."""

    probe: Probe
    profile: QueryProfile
    matched: list[StmItem]  # the user's newest live items that match the query
    decided: Route
    alternates: Alternates = field(default_factory=dict)
    firm: list[StmItem] = field(default_factory=list)  # hold the query by its words
    partial: list[StmItem] = field(default_factory=list)  # one content term only
    # Each live item's cosine above the query's background, once the query is embedded.
    margins: dict[str, float] = field(default_factory=dict)
    names: frozenset[str] = frozenset()  # index terms of what the query names (query_names)


def route_first(
    *,
    layer1: Layer1,
    query: str,
    session_id: str,
    task_id: str,
    forced_layers: Sequence[str],
    trace: Trace,
) -> Routed:
    """The runtime state, the query profile and the first routing decision."""
    policy = layer1.policy
    tenant_cached, user_cached = layer1.tenant_cached, layer1.user_cached
    query_entities = layer1.vocabulary.find_entities(query)
    probe = stm_probe(
        owner=layer1.owner,
        session_id=session_id,
        task_id=task_id,
        entities=query_entities[:MAX_ENTITIES],
        policy=policy,
        trace=trace,
    )
    profile = build_query_profile(
        query=query,
        vocabulary=layer1.vocabulary,
        entities=query_entities,
        runtime=RuntimeState(
            active_task_id=task_id or probe.task_id,
            session_recent=probe.session_recent,
            session_entities=probe.session_entities,
            known_entities=probe.known_entities,
            profile_cache_missing=tenant_cached.document is None or user_cached.document is None,
            profile_cache_stale=not (tenant_cached.fresh and user_cached.fresh)
            and tenant_cached.document is not None
            and user_cached.document is not None,
        ),
    )
    # The user's newest live items, from any session, this one's too, matched against the
    # query (bounded): what the user said an hour ago in this session may be long out of the
    # agent's own context.
    profile.content_terms = content_terms(query)
    alternates = related_terms(profile.content_terms, layer1.vocabulary)
    profile.related_terms = list(alternates)
    floor = float(policy_value(policy, "relevance_floor"))
    names = query_names(query, profile.entities)
    firm, partial = user_matches(
        [*probe.user_items.values(), *probe.items.values()],
        terms=profile.content_terms,
        floor=floor,
        names=names,
        now=now_seconds(),
        alternates=alternates,
    )
    # Until their meaning is known, a partial hold counts only as the query's only term, and
    # only in a question about the user.
    single = len(profile.content_terms) == 1 and profile.about_user
    matched = [*firm, *(partial if single else [])]
    profile.user_items_matched = len(matched)
    decided = route(profile, forced_layers=forced_layers)
    return Routed(
        probe, profile, matched, decided, alternates, firm, partial, names=frozenset(names)
    )


def route_by_meaning(
    *,
    routed: Routed,
    owner: Owner | None,
    asking: Asking,
    forced_layers: Sequence[str],
    trace: Trace,
) -> dict[str, float]:
    """The user's newest live items matched again, now by meaning as well: a partial word match
    counts when its meaning agrees, an item close in meaning counts whatever its words; Layer 2
    is routed again with them. Returns the items (of the session too) at least
    `CONFIRMING_MARGIN` above the query's background, id -> margin: they score as relevant.

    Only when long-term memory is being asked anyway: its query embedding is shared, and a task
    step the rules answer embeds nothing."""
    items = {**routed.probe.user_items, **routed.probe.items}
    if asking.search is None or owner is None or not items or "redis" in trace.degraded:
        return {}
    started = time.perf_counter()
    try:
        stored = recall_stm_store().vectors_of(owner=owner, item_ids=list(items))
    except StoreUnavailable as exc:
        trace.fail("redis", why(exc))
        return {}
    finally:
        trace.timed("redis", started)
    meaning = asking.meaning() if stored else None
    if meaning is None:
        return {}
    vector, base = meaning
    asking.note_world(routed.profile)
    ids = list(stored)
    rows = np.frombuffer(b"".join(stored[i] for i in ids), dtype=np.float16).reshape(len(ids), -1)
    scored = cosines(vector, rows.astype(np.float32))
    margin = {i: c - base for i, c in zip(ids, scored, strict=True)}
    routed.margins = margin
    single = len(routed.profile.content_terms) == 1
    few = len(routed.firm) + len(routed.partial) <= MAX_SHARED_BY
    confirmed = [
        item
        for item in routed.partial
        if routed.profile.about_user
        and (
            (few and margin.get(item.id, 0.0) >= CONFIRMING_MARGIN)
            or (item.id not in margin and single)
        )
    ]
    worded = {item.id for item in [*routed.firm, *routed.partial]}
    user_items = routed.probe.user_items
    unworded = [(i, m) for i, m in margin.items() if i not in worded and i in user_items]
    # Near a question about the user's own world, though not by SEMANTIC_MARGIN (own_world.py);
    # only when no item holds the query firmly in words: meaning finds what the words did not.
    texts = {i: user_items[i].summary for i in margin if i in user_items}
    answering = [] if routed.firm else asking.answered_by(unworded, texts)
    own = [i for i in answering if margin[i] < SEMANTIC_MARGIN]
    close = [user_items[i] for i, m in unworded if m >= SEMANTIC_MARGIN or i in own]
    routed.matched = [*routed.firm, *confirmed, *close]
    routed.profile.user_items_matched = len(routed.matched)
    routed.profile.user_items_close = len(close)
    routed.profile.own_world_memories = len(own)
    routed.decided = route(routed.profile, forced_layers=forced_layers)
    return {i: m for i, m in margin.items() if m >= CONFIRMING_MARGIN or i in own}
