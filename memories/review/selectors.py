"""Reads for reviewers: the transcript around a proposal's evidence (redacted: the transcript
keeps what was said, a reviewer sees it without card numbers, secrets and the like)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memoryproject.redaction import redactor_for
from profiles.models import Tenant
from transcripts.models import EventRef, Session
from transcripts.selectors import events_after


@dataclass(frozen=True)
class ExcerptEvent:
    session_id: str
    seq: int
    message_id: str
    role: str
    content: str
    created_at: str
    evidence: bool


@dataclass(frozen=True)
class Excerpt:
    events: list[ExcerptEvent]
    missing: list[str]  # evidence message ids no longer (or never) in the transcript


def _windows(seqs: Sequence[int], around: int) -> list[tuple[int, int]]:
    """Merged [first, last] seq ranges covering `around` events on each side of each seq."""
    windows: list[tuple[int, int]] = []
    for seq in sorted(seqs):
        first, last = max(1, seq - around), seq + around
        if windows and first <= windows[-1][1] + 1:
            windows[-1] = (windows[-1][0], max(windows[-1][1], last))
        else:
            windows.append((first, last))
    return windows


def evidence_excerpt(
    *,
    tenant: Tenant,
    session_ids: Sequence[str],
    message_ids: Sequence[str],
    around: int = 2,
    limit: int = 60,
) -> Excerpt:
    """The tenant's transcript events with these ids plus `around` neighbours on each side.

    Erased or unreadable sessions contribute nothing; their ids are listed as missing. The
    content is redacted with the tenant's redactor.
    """
    redactor = redactor_for(tenant)
    refs = EventRef.objects.filter(
        session__tenant=tenant,
        session__external_id__in=list(session_ids),
        message_id__in=list(message_ids),
    ).values_list("session_id", "seq")
    wanted: dict[int, set[int]] = {}
    for session_pk, seq in refs:
        wanted.setdefault(session_pk, set()).add(seq)
    sessions = Session.objects.in_bulk(list(wanted))
    events: list[ExcerptEvent] = []
    for session_pk in sorted(wanted, key=lambda pk: sessions[pk].external_id):
        session, seqs = sessions[session_pk], wanted[session_pk]
        for first, last in _windows(sorted(seqs), around):
            try:
                page = events_after(session=session, after=first - 1, limit=last - first + 1)
            except (OSError, ValueError):  # the segment object is gone or unreadable
                continue
            for event in page.events:
                events.append(
                    ExcerptEvent(
                        session_id=session.external_id,
                        seq=event["seq"],
                        message_id=str(event.get("id", "")),
                        role=str(event.get("role", "")),
                        content=redactor.text(str(event.get("content", ""))).text,
                        created_at=str(event.get("created_at", "")),
                        evidence=event["seq"] in seqs,
                    )
                )
    events = events[:limit]
    shown = {event.message_id for event in events if event.evidence}
    missing = [m for m in dict.fromkeys(message_ids) if m not in shown]
    return Excerpt(events=events, missing=missing)


def domain_keys_for(*, tenant: Tenant, also: Sequence[str] = ()) -> list[str]:
    """The Layer 1 keys a reviewer may promote to: those the extractor's patterns fill
    (`preference.<topic>`, `profile.display_name`, ...), those the tenant's preferences and facts
    use already, and `also` (say, the proposal's own key); sorted, each valid."""
    from memories.policies.selectors import vocabulary_for
    from profiles.domains import FACT_DOMAINS, key_problem
    from profiles.models import StableFact, UserPreference

    vocabulary = vocabulary_for(tenant=tenant)
    found: set[str] = set(also)
    for pattern in vocabulary.patterns.get("keyed_statement", ()):
        found.update(name.replace("__", ".") for name in pattern.groupindex)
    for pattern in vocabulary.patterns.get("preference_topic", ()):
        found.update(f"preference.{name}" for name in pattern.groupindex)
    for model in (UserPreference, StableFact):
        found.update(
            model.objects.filter(tenant=tenant, is_current=True)
            .values_list("key", flat=True)
            .distinct()[:500]
        )
    return sorted(key for key in found if key and key_problem(key, domains=FACT_DOMAINS) is None)


@dataclass(frozen=True)
class EndUserMemory:
    """What every layer holds about one end user, for the admin's end-user page."""

    preferences: list[Any]
    facts: list[Any]
    stm_items: list[Any]
    stm_unavailable: str
    cards: list[Any]
    proposals: list[Any]
    deletions: list[Any]
    verifications: list[Any] = field(default_factory=list)  # untrusted rules held, pending


def end_user_memory(*, end_user: Any, stm_limit: int = 50, cards_limit: int = 50) -> EndUserMemory:
    """One end user's preference and fact history (every version), live short-term items
    (from Redis, through `stm_items_for`), long-term cards, pending proposals, pending
    verification requests and deletion requests; texts redacted for display."""
    from memories.ltm.models import LtmCard
    from memories.review.models import DeletionRequest, PromotionRequest, ReviewStatus
    from memories.stm.selectors import stm_items_for
    from memories.stm.store import now_seconds
    from memories.write.models import VerificationRequest
    from memoryproject.errors import StoreUnavailable
    from memoryproject.redaction import Report
    from profiles.models import StableFact, UserPreference

    tenant = end_user.tenant
    redactor = redactor_for(tenant)

    def shown(value: Any, key: str = "") -> Any:
        return redactor.value(value, path="", report=Report(), context=key)

    preferences = list(UserPreference.objects.filter(end_user=end_user).order_by("key", "-version"))
    facts = list(
        StableFact.objects.filter(end_user=end_user)
        .select_related("project")
        .order_by("key", "project_id", "-version")
    )
    for row in [*preferences, *facts]:
        row.value = shown(row.value, row.key)
    unavailable, now = "", now_seconds()
    try:
        items = stm_items_for(tenant=tenant, user_id=end_user.external_id, limit=stm_limit).items
    except StoreUnavailable as exc:
        items, unavailable = [], str(exc)[:200]
    stm_items = [
        {
            "id": item.id,
            "memory_type": item.memory_type,
            "summary": shown(item.summary),
            "key": item.canonical_fact_key,
            "session_id": item.session_id,
            "task_id": item.task_id,
            "source_kind": item.source_kind,
            "trust": item.trust,
            "hits": item.hit_count,
            "recalls": item.recall_count,
            "expires_in_hours": round(max(item.expires_at - now, 0) / 3600, 1),
        }
        for item in items
    ]
    cards = list(
        LtmCard.objects.filter(tenant=tenant, end_user=end_user)
        .exclude(status=LtmCard.Status.DELETED)
        .order_by("-updated_at")[:cards_limit]
    )
    for card in cards:
        card.title, card.summary = shown(card.title), shown(card.summary)
    proposals = list(
        PromotionRequest.objects.filter(
            tenant=tenant, end_user=end_user, status=ReviewStatus.PENDING
        ).order_by("-created_at")
    )
    verifications = list(
        VerificationRequest.objects.filter(
            tenant=tenant, end_user=end_user, status=ReviewStatus.PENDING
        ).order_by("-created_at")[:50]
    )
    for held in verifications:
        held.summary = shown(held.summary)
    deletions = list(
        DeletionRequest.objects.filter(tenant=tenant, subject_user=end_user.external_id).order_by(
            "-created_at"
        )[:20]
    )
    return EndUserMemory(
        preferences=preferences,
        facts=facts,
        stm_items=stm_items,
        stm_unavailable=unavailable,
        cards=cards,
        proposals=proposals,
        deletions=deletions,
        verifications=verifications,
    )
