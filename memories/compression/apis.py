"""The agents' compression endpoint: a session's context for the next model turn, in budget."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.compression.plan import Compression, Entry, State
from memories.compression.services import (
    MAX_BUDGET_TOKENS,
    MAX_EVENTS,
    MIN_BUDGET_TOKENS,
    SessionCompression,
    session_compress,
    session_user_id,
)
from memories.compression.summary import tool_name
from memoryproject.fields import StrictCharField, StrictIntegerField, StrictSerializer
from profiles.auth import request_tenant
from profiles.models import external_id_validator


def _message(entry: Entry) -> dict[str, Any]:
    return {
        "seq": entry.seq,
        "id": entry.id,
        "role": entry.role,
        "tool_call_id": str(entry.event.get("tool_call_id") or ""),
        "tool": tool_name(entry.event),
        "state": entry.state,
        "near_field": entry.near,
        "content": entry.stub if entry.state == State.STUBBED else entry.event.get("content"),
        "tokens": entry.tokens,
    }


def _summary(compression: Compression) -> dict[str, Any] | None:
    summary = compression.summary
    if summary is None:
        return None
    return {
        "sections": {
            name: [{"text": line.text, "refs": list(line.refs)} for line in lines]
            for name, lines in summary.sections().items()
        },
        "covers": {
            "events": summary.folded_events,
            "first_seq": summary.first_seq,
            "last_seq": summary.last_seq,
        },
        "dropped_lines": len(summary.dropped),
        "summariser": compression.summariser,
    }


def compression_view(result: SessionCompression) -> dict[str, Any]:
    compression = result.compression
    dependencies = compression.dependencies
    entries = compression.entries

    def dependency_of(entry: Entry) -> str | None:
        found = dependencies.get(entry.id)
        return found.dependency if found else None

    return {
        "session_id": result.session.external_id,
        "user_id": session_user_id(result.session),
        "task_id": result.session.task_id,
        "context": compression.context,
        "messages": [_message(e) for e in entries if e.state != State.FOLDED],
        "summary": _summary(compression),
        "tokens": {
            "budget": compression.budget,
            "before": compression.before,
            "after": compression.after,
            "near_field": compression.near_field_tokens,
        },
        "within_budget": compression.within_budget,
        "near_field": [e.id for e in entries if e.near],
        "stubbed": [
            {
                "id": e.id,
                "seq": e.seq,
                "tool": tool_name(e.event),
                "tool_call_id": str(e.event.get("tool_call_id") or ""),
                "reason": e.reason,
                "dependency": dependency_of(e),
            }
            for e in entries
            if e.state == State.STUBBED
        ],
        "folded": [
            {
                "id": e.id,
                "seq": e.seq,
                "role": e.role,
                "reason": e.reason,
                "dependency": dependency_of(e),
            }
            for e in entries
            if e.state == State.FOLDED
        ],
        "omitted": [
            {
                "id": str(e.get("id", "")),
                "seq": e.get("seq"),
                "reason": "recall record: the service's own bookkeeping, not conversation",
            }
            for e in compression.omitted
        ],
        "tool_results": [
            {
                "id": d.event_id,
                "seq": d.seq,
                "dependency": d.dependency,
                "current": d.current,
                "reasons": list(d.reasons),
                "consumers": list(d.consumers),
                "digested_by": list(d.digested_by),
            }
            for d in dependencies.values()
        ],
        "skipped": (
            {
                "first_seq": result.skipped[0],
                "last_seq": result.skipped[1],
                "reason": f"older than the newest {MAX_EVENTS} events; not read",
            }
            if result.skipped
            else None
        ),
        "language": compression.language,
        "notes": compression.notes,
        "degraded": result.degraded,
    }


class SessionCompressApi(APIView):
    """POST a token budget; get the session's context for the next model turn: the near field
    verbatim, older tool results stubbed or everything older folded into a summary, and what
    became of every event (with its transcript id and seq) and why. Writes nothing."""

    required_scopes = {"POST": "read"}
    error_statuses = {"POST": (404, 409)}  # unknown session; another user's session

    class CompressInputSerializer(StrictSerializer):
        budget_tokens = StrictIntegerField(min_value=MIN_BUDGET_TOKENS, max_value=MAX_BUDGET_TOKENS)
        user_id = StrictCharField(
            required=False,
            allow_blank=True,
            max_length=128,
            validators=[external_id_validator],
            default="",
        )

    @extend_schema(request=CompressInputSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, session_id: str) -> Response:
        serializer = self.CompressInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = session_compress(
            tenant=request_tenant(request),
            session_id=session_id,
            budget_tokens=data["budget_tokens"],
            user_id=data["user_id"],
        )
        return Response(compression_view(result))
