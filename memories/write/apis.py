"""Agents' API to the write pipeline: propose memories, judged by the tenant's write policy."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.audit.services import Actor
from memories.stm.items import MemoryType
from memories.write.candidates import Candidate, SourceKind
from memories.write.serializers import ProposalsOutputSerializer
from memories.write.services import proposals_submit
from memoryproject.fields import (
    JsonObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
)
from profiles.auth import request_tenant
from profiles.models import external_id_validator

MAX_PROPOSALS = 100


class SourceSerializer(StrictSerializer):
    # What the agent says the source was; a proposal is an agent's proposal whatever it says,
    # and its trust is its API key's (`trusted_writer`).
    kind = StrictCharField(required=False, max_length=32, default="proposal")
    message_ids = serializers.ListField(
        child=StrictCharField(max_length=128), required=False, max_length=200, default=list
    )
    tool_call_ids = serializers.ListField(
        child=StrictCharField(max_length=128), required=False, max_length=200, default=list
    )


class ProposalSerializer(StrictSerializer):
    user_id = StrictCharField(max_length=128, validators=[external_id_validator])
    session_id = StrictCharField(max_length=128, validators=[external_id_validator])
    task_id = StrictCharField(required=False, allow_blank=True, max_length=128, default="")
    memory_type = serializers.ChoiceField(choices=MemoryType.ALL)
    subtype = StrictCharField(required=False, allow_blank=True, max_length=64, default="")
    summary = StrictCharField(max_length=20000, trim_whitespace=False)
    detail = JsonObjectField(required=False, default=dict)
    entities = serializers.ListField(
        child=StrictCharField(max_length=200), required=False, max_length=50, default=list
    )
    tags = serializers.ListField(
        child=StrictCharField(max_length=64), required=False, max_length=50, default=list
    )
    source = SourceSerializer(required=False)  # type: ignore[assignment]  # a field, not Field.source
    confidence = StrictFloatField(min_value=0.0, max_value=1.0, default=0.5)
    importance = StrictFloatField(min_value=0.0, max_value=1.0, default=0.5)
    canonical_fact_key = StrictCharField(
        required=False, allow_blank=True, max_length=300, default=""
    )
    fact_value = StrictCharField(required=False, allow_blank=True, max_length=500, default="")
    verified = StrictBooleanField(default=False)
    remember = StrictBooleanField(default=False)
    ttl_minutes = StrictIntegerField(required=False, min_value=1, max_value=10 * 365 * 1440)

    def to_candidate(self, data: dict[str, Any], *, trusted_writer: bool = False) -> Candidate:
        source = data.get("source") or {}
        return Candidate(
            user_id=data["user_id"],
            session_id=data["session_id"],
            task_id=data["task_id"],
            memory_type=data["memory_type"],
            subtype=data["subtype"],
            summary=data["summary"],
            detail=data["detail"],
            entities=tuple(data["entities"]),
            tags=tuple(data["tags"]),
            source_kind=SourceKind.PROPOSAL,
            trusted_writer=trusted_writer,
            message_ids=tuple(source.get("message_ids", ())),
            tool_call_ids=tuple(source.get("tool_call_ids", ())),
            confidence=data["confidence"],
            importance=data["importance"],
            canonical_fact_key=data["canonical_fact_key"],
            fact_value=data["fact_value"],
            verified=data["verified"],
            remember=data["remember"],
            ttl_minutes=data.get("ttl_minutes"),
        )


class ProposalSubmitApi(APIView):
    """Submit proposed facts; the tenant's policy decides each, accepted ones land in Layer 2.

    `?dry_run=1` decides exactly the same and writes nothing.
    """

    required_scopes = {"POST": "write"}

    class ProposalsInputSerializer(StrictSerializer):
        proposals = ProposalSerializer(  # type: ignore[call-arg]  # ListSerializer takes max_length
            many=True, allow_empty=False, max_length=MAX_PROPOSALS
        )

    class ProposalsQuerySerializer(serializers.Serializer):
        # Refuses what is not a boolean: a mistyped dry run must not write.
        dry_run = serializers.BooleanField(
            required=False, default=False, help_text="decide only, write nothing"
        )

    @extend_schema(
        operation_id="proposals_submit",
        summary="Propose memories for short-term memory",
        tags=["Memories"],
        request=ProposalsInputSerializer,
        parameters=[ProposalsQuerySerializer],
        responses={200: ProposalsOutputSerializer, 201: ProposalsOutputSerializer},
    )
    def post(self, request: Request) -> Response:
        query = self.ProposalsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        serializer = self.ProposalsInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        dry_run = query.validated_data["dry_run"]
        trusted_writer = bool(getattr(request.auth, "trusted_writer", False))
        candidates = [
            ProposalSerializer().to_candidate(p, trusted_writer=trusted_writer)
            for p in serializer.validated_data["proposals"]
        ]
        results = proposals_submit(
            tenant=request_tenant(request),
            candidates=candidates,
            dry_run=dry_run,
            actor=Actor.api_key(request.auth),  # type: ignore[arg-type]
        )
        body = {
            "dry_run": dry_run,
            "results": [
                {
                    "index": index,
                    "outcome": result.outcome,
                    "item_id": result.item_id or None,
                    "version": result.version or None,
                    "superseded_id": result.superseded_id or None,
                    "redacted": result.redacted,
                    "source_kind": result.source_kind,
                    "trust": result.trust,
                    "held_for_verification": bool(result.hold_reason),
                    "hold_reason": result.hold_reason,
                    "verification_id": result.verification_id or None,
                    "quarantine": result.quarantine,
                    **result.decision.as_dict(),
                }
                for index, result in enumerate(results)
            ],
        }
        written = any(r.item_id or r.verification_id for r in results)
        return Response(
            ProposalsOutputSerializer(body).data,
            status=status.HTTP_201_CREATED if written else status.HTTP_200_OK,
        )
