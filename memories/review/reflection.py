"""Reflection: turn many related episodes of a user into one proposed semantic card.

A beat job weighs each user's new short-term episodes; once their importance adds up past the
tenant's threshold, it groups the user's live episodes by shared entities (or, for episodes
naming none in common, by close vectors) and proposes one card per large enough group. The
card summarises the group extractively and cites every item; it reaches long-term memory only
through the review queue.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memories.audit.services import Actor
from memories.ltm.embedder import embedder
from memories.ltm.models import LtmCard
from memories.policies.models import PromotionPolicy
from memories.review.models import PromotionRequest
from memories.review.promotion_scan import (
    ScanResult,
    new_request_id,
    owners_with_policy,
    promotion_fingerprint,
    proposal_blocked,
    proposal_record,
    similar_cards,
)
from memories.stm.items import MemoryType, StmItem
from memories.stm.store import now_seconds, stm_store
from profiles.models import EndUser, Tenant

EPISODE_TYPES = (MemoryType.FACT, MemoryType.DECISION, MemoryType.OBSERVATION)
MAX_EPISODES = 200  # newest live episodes of a user considered at once


def is_episode(item: StmItem, now: float) -> bool:
    """Whether the item is something that happened, worth reflecting on: a live fact, decision
    or observation, but not a tool's reading of figures (a snapshot the next reading replaces)
    nor the assistant's own conclusion (working memory of its task, never proposed)."""
    if not item.is_live(now) or item.memory_type not in EPISODE_TYPES:
        return False
    kind = item.source.get("kind")
    if kind == "tool" and "figures" in item.tags and not {"error", "timeout"} & set(item.tags):
        return False
    return not (kind == "assistant" and item.subtype == "conclusion")


def related_groups(
    items: Sequence[StmItem], *, similarity: float, vectors: np.ndarray | None = None
) -> list[list[StmItem]]:
    """Connected groups of items: linked when they share an entity, or when neither shares
    one with the other and their (normalised) vectors are at least `similarity` close."""
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        parent[find(i)] = find(j)

    first_with: dict[str, int] = {}
    for index, item in enumerate(items):
        for entity in {e.lower() for e in item.entities}:
            if entity in first_with:
                union(index, first_with[entity])
            else:
                first_with[entity] = index
    if vectors is not None and len(items) > 1:
        close = vectors @ vectors.T >= similarity
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                if close[i, j]:
                    union(i, j)
    groups: dict[int, list[StmItem]] = {}
    for index, item in enumerate(items):
        groups.setdefault(find(index), []).append(item)
    return sorted(groups.values(), key=len, reverse=True)


@dataclass(frozen=True)
class Pattern:
    """An extractive summary of a group of episodes."""

    title: str
    summary: str
    content: str
    entities: list[str]


def summarise(group: Sequence[StmItem]) -> Pattern:
    """Shared entities name the pattern; the episode sharing most of them states it."""
    counts = Counter(e for item in group for e in dict.fromkeys(item.entities))
    shared = [e for e, n in counts.most_common() if n >= max(2, len(group) // 2)]
    central = max(
        group,
        key=lambda i: (len(set(i.entities) & set(shared)), i.importance, i.updated_at),
    )
    topic = ", ".join(shared[:3]) or central.summary[:60]
    return Pattern(
        title=f"Pattern: {topic}"[:300],
        summary=f"{central.summary} (seen in {len(group)} related episodes)",
        content="\n".join(f"- {item.summary}" for item in group),
        entities=shared or list(counts)[:5],
    )


def reflection_run(
    *, now: float | None = None, cursor: int = 0, owners: int = 200, tenant: Tenant | None = None
) -> ScanResult:
    """Reflect on the users of one page of short-term memory; returns what it proposed."""
    now = now if now is not None else now_seconds()
    store = stm_store()
    next_cursor, page = owners_with_policy(cursor=cursor, owners=owners, tenant=tenant)
    examined = proposed = 0
    for owner, owner_tenant, policy in page:
        episodes = [
            item
            for item in store.items_of(owner=owner, limit=MAX_EPISODES)
            if is_episode(item, now)
        ]
        mark = store.reflection_mark(owner=owner)
        new = [item for item in episodes if item.updated_at > mark]
        examined += len(new)
        if sum(item.importance for item in new) < policy.reflection_importance:
            continue
        vectors = embedder().embed_passages([item.summary for item in episodes])
        for group in related_groups(
            episodes, similarity=policy.reflection_similarity, vectors=vectors
        ):
            fresh = any(item.updated_at > mark for item in group)
            if len(group) >= policy.reflection_min_items and fresh:
                proposed += _propose(owner_tenant, group, policy) is not None
        store.set_reflection_mark(owner=owner, value=max(item.updated_at for item in new))
    return ScanResult(examined=examined, proposed=proposed, next_cursor=next_cursor)


def _said_times(group: Sequence[StmItem]) -> list[str]:
    """When each episode was said (ISO 8601, so the latest sorts last), where known."""
    return [str(item.detail["said_at"]) for item in group if item.detail.get("said_at")]


def _propose(
    tenant: Tenant, group: Sequence[StmItem], policy: PromotionPolicy
) -> PromotionRequest | None:
    end_user = EndUser.objects.filter(tenant=tenant, pk=group[0].end_user_id).first()
    if end_user is None:
        return None
    pattern = summarise(group)
    fingerprint = promotion_fingerprint(
        end_user_pk=end_user.pk,
        path=PromotionRequest.Path.LTM,
        # A pattern is its shared entities; one naming none is its episodes.
        what=["reflection", sorted(e.lower() for e in pattern.entities)]
        if pattern.entities
        else ["reflection", sorted(item.fingerprint for item in group)],
    )
    item_ids = [item.id for item in group]
    if proposal_blocked(
        tenant=tenant,
        fingerprint=fingerprint,
        # A rejected pattern comes back only with an episode it did not have.
        new_evidence=lambda rejected: bool(
            set(item_ids) - set(rejected.evidence.get("stm_item_ids", []))
        ),
    ):
        return None
    importance = sum(item.importance for item in group)
    confidence = round(sum(item.confidence for item in group) / len(group), 3)
    proposal = {
        "memory_type": LtmCard.Type.SEMANTIC_FACT,
        "title": pattern.title,
        "summary": pattern.summary,
        "content": pattern.content,
        "entities": pattern.entities,
        "tags": ["reflection"],
        "importance": round(max(item.importance for item in group), 3),
        "confidence": confidence,
    }
    request = PromotionRequest(
        request_id=new_request_id("prm"),
        tenant=tenant,
        end_user=end_user,
        path=PromotionRequest.Path.LTM,
        origin=PromotionRequest.Origin.REFLECTION,
        memory_type=LtmCard.Type.SEMANTIC_FACT,
        proposal=proposal,
        evidence={
            "stm_item_ids": item_ids,
            "message_ids": sorted({m for item in group for m in item.message_ids}),
            "sessions": sorted({s for item in group for s in item.sessions or [item.session_id]}),
            "triggers": {
                "reflection": (
                    f"{len(group)} related episodes ({', '.join(pattern.entities[:3])}), "
                    f"importance {importance:.1f} ≥ {policy.reflection_importance:g}"
                )
            },
            "items": [{"id": i.id, "summary": i.summary, "task_id": i.task_id} for i in group],
            **({"said_at": max(said)} if (said := _said_times(group)) else {}),
        },
        existing=similar_cards(
            tenant=tenant, end_user=end_user, text=pattern.summary, k=policy.similar_cards
        ),
        confidence=confidence,
        fingerprint=fingerprint,
    )
    return proposal_record(
        request,
        actor=Actor.job("reflection"),
        details={"path": "ltm", "origin": "reflection", "items": len(group)},
    )
