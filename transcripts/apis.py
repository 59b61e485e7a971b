"""Agents' API to Layer 0: append events, replay them, verify the chain."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryproject.errors import Gone, PayloadTooLarge
from memoryproject.fields import (
    JsonObjectField,
    QueryIntegerField,
    StrictCharField,
    StrictSerializer,
)
from profiles.auth import request_tenant
from profiles.models import external_id_validator
from transcripts.selectors import events_after, session_for, transcript_verify
from transcripts.serializers import EventOutputSerializer, VerifyProblemOutputSerializer
from transcripts.services import EventIn, Role, events_append

MAX_SEQ = 2**31 - 1  # the largest sequence number a session can hold


class EventInputSerializer(StrictSerializer):
    id = StrictCharField(required=False, max_length=128, validators=[external_id_validator])
    role = serializers.ChoiceField(choices=Role.ALL)
    content = StrictCharField(allow_blank=True, trim_whitespace=False)
    tool_call_id = StrictCharField(required=False, allow_blank=True, max_length=128, default="")
    metadata = JsonObjectField(required=False, default=dict)
    created_at = serializers.DateTimeField(required=False)

    def validate_content(self, value: str) -> str:
        limit = settings.TRANSCRIPT_MAX_CONTENT_CHARS
        if len(value) > limit:
            raise serializers.ValidationError(f"Content is longer than {limit} characters.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["role"] == Role.TOOL and not attrs.get("tool_call_id"):
            raise serializers.ValidationError({"tool_call_id": "Tool events need a tool_call_id."})
        return attrs


class AppendedEventOutputSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    id = serializers.CharField()


class SessionEventsApi(APIView):
    """POST appends a batch of events (all or nothing); GET replays them in order."""

    required_scopes = {"GET": "read", "POST": "write"}
    error_statuses = {"GET": (410,), "POST": (409, 410)}

    class AppendInputSerializer(StrictSerializer):
        user_id = StrictCharField(max_length=128, validators=[external_id_validator])
        task_id = StrictCharField(required=False, allow_blank=True, max_length=128, default="")
        events = EventInputSerializer(many=True, allow_empty=False)

        def validate_events(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
            ids = [e["id"] for e in events if e.get("id")]
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            if repeated:
                raise serializers.ValidationError(f"Repeated event ids: {', '.join(repeated)}.")
            return events

    class AppendOutputSerializer(serializers.Serializer):
        session_id = serializers.CharField()
        created = serializers.BooleanField()
        event_count = serializers.IntegerField()
        head_hash = serializers.CharField()
        events = AppendedEventOutputSerializer(many=True)

    class ReplayQuerySerializer(StrictSerializer):
        after = QueryIntegerField(required=False, min_value=0, max_value=MAX_SEQ, default=0)
        limit = QueryIntegerField(required=False, min_value=1, max_value=1000, default=100)

    class ReplayOutputSerializer(serializers.Serializer):
        session_id = serializers.CharField()
        user_id = serializers.CharField()
        task_id = serializers.CharField()
        event_count = serializers.IntegerField()
        next_after = serializers.IntegerField()
        has_more = serializers.BooleanField()
        events = EventOutputSerializer(many=True)

    @extend_schema(
        operation_id="events_append",
        summary="Record a batch of events",
        tags=["Transcripts"],
        description=(
            "Append the events as one segment, all or nothing (201). A retry with the same "
            "client ids answers the original ids and writes nothing (200); the same ids with "
            "other content are a 409. Extraction into short-term memory runs in the worker a "
            "second or so after the append commits, so the answer does not carry it."
        ),
        request=AppendInputSerializer,
        responses={201: AppendOutputSerializer, 200: AppendOutputSerializer},
    )
    def post(self, request: Request, session_id: str) -> Response:
        body = request.data
        limit = settings.TRANSCRIPT_MAX_EVENTS_PER_APPEND
        events = body.get("events") if isinstance(body, dict) else None
        if isinstance(events, list) and len(events) > limit:
            raise PayloadTooLarge(f"At most {limit} events per append.")
        serializer = self.AppendInputSerializer(data=body)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = events_append(
            tenant=request_tenant(request),
            session_id=session_id,
            user_id=data["user_id"],
            task_id=data["task_id"],
            events=[
                EventIn(
                    role=e["role"],
                    content=e["content"],
                    message_id=e.get("id", ""),
                    tool_call_id=e["tool_call_id"],
                    metadata=e["metadata"],
                    occurred_at=e.get("created_at"),
                )
                for e in data["events"]
            ],
        )
        output = self.AppendOutputSerializer(
            {
                "session_id": session_id,
                "created": result.created,
                "event_count": result.session.event_count,
                "head_hash": result.session.head_hash,
                "events": [{"seq": seq, "id": message_id} for seq, message_id in result.ids],
            }
        )
        return Response(
            output.data, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        )

    @extend_schema(
        operation_id="events_replay",
        summary="Replay a session's events",
        tags=["Transcripts"],
        description=(
            "The events in order, a page at a time (`after`, `limit`); an erased session "
            "answers 410 `gone`."
        ),
        parameters=[ReplayQuerySerializer],
        responses=ReplayOutputSerializer,
    )
    def get(self, request: Request, session_id: str) -> Response:
        query = self.ReplayQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        session = session_for(tenant=request_tenant(request), session_id=session_id)
        if session.erased_at is not None:
            raise Gone(f"Session {session_id!r} was erased; its events are gone.")
        page = events_after(session=session, **query.validated_data)
        output = self.ReplayOutputSerializer(
            {
                "session_id": session.external_id,
                "user_id": session.end_user.external_id if session.end_user else "",
                "task_id": session.task_id,
                "event_count": session.event_count,
                "next_after": page.next_after,
                "has_more": page.has_more,
                "events": page.events,
            }
        )
        return Response(output.data)


class SessionVerifyApi(APIView):
    """Re-hash a session's stored segments and report any broken link by segment."""

    required_scopes = {"GET": "read"}

    class VerifyOutputSerializer(serializers.Serializer):
        session_id = serializers.CharField()
        ok = serializers.BooleanField()
        segments_checked = serializers.IntegerField()
        events_checked = serializers.IntegerField()
        problems = VerifyProblemOutputSerializer(many=True)

    @extend_schema(
        operation_id="session_verify",
        summary="Verify a session's hash chain",
        tags=["Transcripts"],
        responses=VerifyOutputSerializer,
    )
    def get(self, request: Request, session_id: str) -> Response:
        session = session_for(tenant=request_tenant(request), session_id=session_id)
        report = transcript_verify(session=session)
        return Response(
            self.VerifyOutputSerializer(
                {
                    "session_id": session.external_id,
                    "ok": report.ok,
                    "segments_checked": report.segments_checked,
                    "events_checked": report.events_checked,
                    "problems": report.problems,
                }
            ).data
        )
