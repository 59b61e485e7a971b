"""The agents' compression endpoint: a session's context for the next model turn, in budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.compression.dependency import ToolDependency
from memories.compression.plan import Compression, Entry, State
from memories.compression.serializers import CompressionOutputSerializer
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


def _stubbed(entry: Entry, dependency: str | None) -> dict[str, Any]:
    return {
        "id": entry.id,
        "seq": entry.seq,
        "tool": tool_name(entry.event),
        "tool_call_id": str(entry.event.get("tool_call_id") or ""),
        "reason": entry.reason,
        "dependency": dependency,
    }


def _folded(entry: Entry, dependency: str | None) -> dict[str, Any]:
    return {
        "id": entry.id,
        "seq": entry.seq,
        "role": entry.role,
        "reason": entry.reason,
        "dependency": dependency,
    }


def _omitted(event: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": str(event.get("id", "")),
        "seq": event.get("seq"),
        "reason": "recall record: the service's own bookkeeping, not conversation",
    }


def _tool_result(found: ToolDependency) -> dict[str, Any]:
    return {
        "id": found.event_id,
        "seq": found.seq,
        "dependency": found.dependency,
        "current": found.current,
        "reasons": list(found.reasons),
        "consumers": list(found.consumers),
        "digested_by": list(found.digested_by),
    }


def _skipped(skipped: tuple[int, int] | None) -> dict[str, Any] | None:
    if not skipped:
        return None
    return {
        "first_seq": skipped[0],
        "last_seq": skipped[1],
        "reason": f"older than the newest {MAX_EVENTS} events; not read",
    }


def compression_view(result: SessionCompression) -> dict[str, Any]:
    """The answer of `POST /v1/sessions/{id}/compress` (`CompressionOutputSerializer`)."""
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
        "stubbed": [_stubbed(e, dependency_of(e)) for e in entries if e.state == State.STUBBED],
        "folded": [_folded(e, dependency_of(e)) for e in entries if e.state == State.FOLDED],
        "omitted": [_omitted(event) for event in compression.omitted],
        "tool_results": [_tool_result(found) for found in dependencies.values()],
        "skipped": _skipped(result.skipped),
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

    @extend_schema(
        operation_id="session_compress",
        summary="Compress a session's context to a token budget",
        tags=["Compression"],
        request=CompressInputSerializer,
        responses=CompressionOutputSerializer,
    )
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
        return Response(CompressionOutputSerializer(compression_view(result)).data)
