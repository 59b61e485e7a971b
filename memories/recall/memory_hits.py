"""Long-term and history hits as pool candidates, once routing settled which layers to ask.

A vector-only match is left out when the memory holds none of the query, and, unless the
memory holds the query firmly, so is a hit that holds too little of it in words and in meaning;
a time window the query names lifts the memories inside it.
"""

from __future__ import annotations

from collections.abc import Callable

from memories.recall.asking import Asking
from memories.recall.branches import FusedHit, card_text
from memories.recall.history_candidates import history_candidate
from memories.recall.pool import MemoryCandidate, ltm_candidate
from memories.recall.query_profile import QueryProfile
from memories.recall.relevance import holding_of
from memories.recall.routing import Route
from memories.recall.semantic import CONFIRMING_MARGIN, SEMANTIC_MARGIN
from memories.recall.timefilter import TimeWindow

# A hit only the vector branch found must be at least this close to the branch's best (the
# vector branch always answers, even for a query nothing in memory is about). Its score is a
# cosine for cards; history scales its branch's best to 1.
VECTOR_ONLY_RATIO = 0.9


def memory_candidates(
    asking: Asking,
    decided: Route,
    profile: QueryProfile,
    *,
    fail: Callable[[str, str], None],
    timings: dict[str, float],
) -> tuple[list[MemoryCandidate], list[MemoryCandidate], list[tuple[str, str, str]]]:
    """Long-term and history candidates of the routed sources, and the ones left out
    (memory_id, source, reason): a vector-only match when the memory holds none of the query;
    and, unless the memory holds the query firmly, a hit that holds too little of it in words
    and in meaning (so one shared word does not pad the injection with what else was said)."""
    search = asking.search
    if search is None or not (decided.ltm or decided.history):
        return [], [], []
    found = search.collect(ltm=decided.ltm, history=decided.history)
    for layer in found.failed:
        fail(layer, "branch failed or was too slow")
    timings.update(found.timings_ms)
    left_out: list[tuple[str, str, str]] = []
    strict = bool(profile.content_terms) and not (profile.memory_holds or profile.memory_close)
    best = {
        "ltm": max((f.similarity for f in found.ltm), default=0.0),
        "history": max((f.similarity for f in found.history), default=0.0),
    }
    meaning = asking.meaning() if profile.content_terms and not profile.holds_firmly else None
    base = meaning[1] if meaning is not None else None

    def weak(source: str, fused: FusedHit) -> bool:
        if base is None or f"{source}.vector" in found.failed:
            return False  # its meaning is unknown: the words decide, as before
        text = card_text(fused.hit) if source == "ltm" else f"{fused.hit.text} {fused.hit.context}"
        held = holding_of(profile.content_terms, text, asking.alternates).partly(asking.floor)
        # A question about the world shares a word with a memory by chance: its meaning decides,
        # and closely when the meaning says so too.
        needed = SEMANTIC_MARGIN if profile.about_world else CONFIRMING_MARGIN
        return not (held and profile.about_user) and fused.cosine - base < needed

    def keep(source: str, fused: FusedHit) -> bool:
        if fused.key in asking.own_nearest:
            return True
        if weak(source, fused):
            left_out.append(
                (fused.key, source, "holds too little of the query, in words or meaning")
            )
            return False
        if any(branch.endswith("lexical") for branch in fused.ranks):
            return True
        if strict:
            why = "vector-only match; the memory holds none of the query"
        elif fused.similarity < VECTOR_ONLY_RATIO * best[source]:
            why = f"vector-only match far from the best ({fused.similarity:.2f})"
        else:
            return True
        left_out.append((fused.key, source, why))
        return False

    # A card the vector branch did not return is no closer to the query than the farthest one
    # it did: that bounds the closeness of a card found by its words alone.
    by_meaning = [f.cosine for f in found.ltm if f.cosine > 0]
    farthest = min(by_meaning) if by_meaning and "ltm.vector" not in found.failed else 0.0
    ltm = [
        ltm_candidate(f.hit, cosine=f.cosine or farthest)
        for f in found.ltm[: asking.depth]
        if keep("ltm", f)
    ]
    history = [history_candidate(f) for f in found.history[: asking.depth] if keep("history", f)]
    return ltm, history, left_out


def apply_time(candidates: list[MemoryCandidate], window: TimeWindow | None, boost: float) -> None:
    """A named time window lifts the memories inside it and lowers those outside (known times
    only), before relevance is scaled."""
    if window is None or boost <= 0:
        return
    start, end = window.start.timestamp(), window.end.timestamp()
    for candidate in candidates:
        if not candidate.occurred_at:
            continue
        inside = start <= candidate.occurred_at < end
        candidate.raw_relevance *= (1 + boost) if inside else 1 / (1 + boost)
        candidate.provenance["in_time_window"] = inside
