"""The task's own record: what was said earlier in this task, searched when a question carries
the task on (or refers to what was said) and short-term memory does not hold its words.

Working memory holds what the extractor proposed; a passing statement ("the p99 jumped to 900 ms
after the release", "芒果系列的复购率是 18%") is often no candidate of any kind, yet it is what
"where were we on the latency issue?" or "我刚才说…是多少来着" asks for. The history index holds
every turn; searched within this session and the task's other sessions only, one shared word is
evidence enough, since the scope is the task itself. History in general leaves the current
session out (its turns are in the agent's context); a question that points back at it is the
exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from memories.history.selectors import history_search
from memories.recall.branches import FusedHit
from memories.recall.history_candidates import history_candidate
from memories.recall.pool import MemoryCandidate
from memories.recall.query_profile import Intent, QueryProfile
from memories.recall.relevance import Alternates, holding_of
from profiles.models import Tenant
from transcripts.selectors import task_session_ids

TASK_RECORD_K = 3  # entries of the record at most: it fills a gap, it is not a second search
TASK_SESSIONS = 20  # the task's newest sessions searched besides the current one
HELD_SHARE = 0.5  # a short-term item holding this share of the query's terms answers it


@dataclass(frozen=True)
class TaskRecordQuery:
    """What to look for in the task's record: the query's words short-term memory lacks."""

    missing: tuple[str, ...]
    session_id: str
    task_id: str


def task_record_query(
    profile: QueryProfile,
    *,
    session_id: str,
    stm_texts: Sequence[str],
    alternates: Alternates | None = None,
) -> TaskRecordQuery | None:
    """The record is searched for a question about the current task or context that no
    short-term candidate holds half of, nor names what it names, for the terms none of them
    holds; None otherwise."""
    if not profile.content_terms:
        return None
    if not (profile.intent in Intent.TASK_INTENTS or profile.has_reference):
        return None
    if not (session_id or profile.active_task_id):
        return None
    if profile.about_world and not profile.active_task_id:
        return None  # "what does this word mean?" asks the world, not this session's record
    task = profile.active_task_id.lower()
    terms = [term for term in profile.content_terms if term != task]  # the task names itself
    if not terms:
        return None
    if any(holding_of(terms, text, alternates).share >= HELD_SHARE for text in stm_texts):
        return None  # a short-term item answers it
    named = [entity.lower() for entity in profile.entities if entity.lower() != task]
    if named and any(name in text.lower() for text in stm_texts for name in named):
        return None  # a short-term item is about the thing the question names
    missing = tuple(
        term
        for term in terms
        if not any(holding_of([term], t, alternates).terms for t in stm_texts)
    )
    if not missing:
        return None
    return TaskRecordQuery(missing, session_id, profile.active_task_id)


def task_record_candidates(
    *,
    tenant: Tenant,
    user_id: str,
    query: str,
    wanted: TaskRecordQuery,
    alternates: Alternates | None = None,
    history_on: bool = True,
) -> tuple[list[MemoryCandidate], list[str]]:
    """Entries of the task's record that hold a missing word, as history candidates, and the
    branches that failed."""
    sessions = [wanted.session_id] if wanted.session_id else []
    sessions += task_session_ids(
        tenant=tenant, user_id=user_id, task_id=wanted.task_id, limit=TASK_SESSIONS
    )
    sessions = list(dict.fromkeys(s for s in sessions if s))
    if not sessions:
        return [], []
    result = history_search(
        tenant=tenant,
        user_id=user_id,
        query=query,
        k=TASK_RECORD_K + 1,  # the question itself may be among them
        only_sessions=sessions,
        mode="lexical",
        timeout=settings.LTM_BRANCH_TIMEOUT_SECONDS,
        enabled=history_on,
    )
    asked = _normal(query)
    chosen: list[MemoryCandidate] = []
    for rank, hit in enumerate(result.hits, start=1):
        if not holding_of(list(wanted.missing), hit.text, alternates).terms:
            continue
        candidate = history_candidate(
            FusedHit(key=hit.entry_id, score=hit.score, ranks={"lexical": rank}, hit=hit)
        )
        if _normal(candidate.core) == asked:
            continue  # the question, appended before it was asked
        candidate.provenance["task_record"] = True
        chosen.append(candidate)
    return chosen[:TASK_RECORD_K], result.degraded


def _normal(text: str) -> str:
    return " ".join(text.lower().split()).strip(" ?？!！.。")
