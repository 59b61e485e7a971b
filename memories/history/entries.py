"""History entries made from transcript events: which events become one, what an entry says
(speaker, text, the previous turns as its context, the tenant's redaction applied) and what
of it is embedded, read back from a session's segments."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from memories.history.documents import HistoryDocument, entry_id_for
from memories.ltm.text import bm25_text
from memories.quarantine.services import events_held
from memoryproject.redaction import Redactor, redactor_for
from transcripts.models import Session
from transcripts.selectors import events_after

INDEXED_ROLES = frozenset({"user", "assistant", "tool"})
CONTEXT_TURN_CHARS = 300
_SPACES = re.compile(r"\s+")


def _speaker(event: dict[str, Any]) -> str:
    metadata = event.get("metadata") or {}
    for name in ("speaker", "name"):
        value = metadata.get(name) if isinstance(metadata, dict) else None
        if isinstance(value, str) and value.strip() and len(value) <= 64:
            return value.strip()
    return str(event.get("role", ""))


def tool_digest(event: dict[str, Any], *, limit: int | None = None) -> str:
    """A short digest of a tool result: the tool's name, the start of its output, its size."""
    limit = limit or settings.HISTORY_TOOL_DIGEST_CHARS
    given = event.get("metadata")
    metadata: dict[str, Any] = given if isinstance(given, dict) else {}
    name = next(
        (
            str(metadata[key])
            for key in ("tool", "tool_name", "name")
            if isinstance(metadata.get(key), str) and metadata[key].strip()
        ),
        str(event.get("tool_call_id") or "tool"),
    )[:64]
    body = _SPACES.sub(" ", str(event.get("content", ""))).strip()
    if len(body) > limit:
        body = f"{body[:limit].rstrip()} … ({len(body)} chars)"
    return f"tool {name}: {body}"


def indexable(event: dict[str, Any]) -> bool:
    """Whether an event becomes a history entry (user, assistant and tool events with text)."""
    return event.get("role") in INDEXED_ROLES and bool(str(event.get("content", "")).strip())


def entry_text(event: dict[str, Any]) -> str:
    """The event as an entry states it, before redaction: who said it, then what was said."""
    if event["role"] == "tool":
        return tool_digest(event)
    content = str(event["content"]).strip()
    speaker = _speaker(event)
    text = content if content.startswith(f"{speaker}:") else f"{speaker}: {content}"
    limit = settings.HISTORY_TEXT_MAX_CHARS
    return text if len(text) <= limit else f"{text[:limit].rstrip()} …"


def _occurred_at(event: dict[str, Any]) -> datetime:
    try:
        moment = datetime.fromisoformat(str(event.get("created_at")))
    except ValueError:
        return timezone.now()
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)


def _short(text: str) -> str:
    return text if len(text) <= CONTEXT_TURN_CHARS else f"{text[:CONTEXT_TURN_CHARS].rstrip()} …"


def session_documents(
    *,
    session: Session,
    events: Sequence[dict[str, Any]],
    first_seq: int,
    redactor: Redactor,
    context_turns: int | None = None,
) -> list[HistoryDocument]:
    """The entries of the events with seq >= first_seq; earlier events serve as context only.

    An event that reads as an instruction to the model is held for review
    (`memories.quarantine`): it becomes no entry and no other entry's context.
    """
    turns = settings.HISTORY_CONTEXT_TURNS if context_turns is None else context_turns
    previous: deque[str] = deque(maxlen=max(turns, 1))
    user_id = session.end_user.external_id if session.end_user else ""
    documents = []
    held = events_held(session=session, events=[e for e in events if indexable(e)])
    for event in events:
        if not indexable(event) or int(event["seq"]) in held:
            continue
        text = redactor.text(entry_text(event)).text
        if int(event["seq"]) >= first_seq:
            context = "\n".join(previous) if turns else ""
            documents.append(
                HistoryDocument(
                    entry_id=entry_id_for(session_pk=session.pk, seq=int(event["seq"])),
                    tenant_id=str(session.tenant_id),
                    user_id=user_id,
                    session_id=session.external_id,
                    session_pk=session.pk,
                    seq=int(event["seq"]),
                    event_id=str(event.get("id", "")),
                    role=str(event["role"]),
                    occurred_at=_occurred_at(event),
                    text=text,
                    context=context,
                    bm25_text=bm25_text(text),
                    bm25_context=bm25_text(context),
                )
            )
        previous.append(_short(text))
    return documents


def read_events(session: Session, *, after: int, last_seq: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while after < last_seq:
        page = events_after(session=session, after=after, limit=500)
        events.extend(e for e in page.events if e["seq"] <= last_seq)
        if not page.events or not page.has_more:
            break
        after = page.next_after
    return events


def documents_for_range(
    *, session: Session, first_seq: int, last_seq: int, redactor: Redactor | None = None
) -> list[HistoryDocument]:
    """The entries of events first_seq..last_seq of a session, read from its segments."""
    # A few events more than the context needs, since system events do not count as turns.
    lead = settings.HISTORY_CONTEXT_TURNS + 4 if settings.HISTORY_CONTEXT_TURNS else 0
    events = read_events(session, after=max(0, first_seq - 1 - lead), last_seq=last_seq)
    return session_documents(
        session=session,
        events=events,
        first_seq=first_seq,
        redactor=redactor or redactor_for(session.tenant),
    )


def embedding_input(document: HistoryDocument) -> str:
    """What is embedded of an entry: its text, with its context when so configured."""
    if settings.HISTORY_EMBED_CONTEXT and document.context:
        return f"{document.context}\n{document.text}"
    return document.text
