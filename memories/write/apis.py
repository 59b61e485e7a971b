"""Agents' API to the write pipeline: propose memories, judged by the tenant's write policy;
read, change and delete one short-term item."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.audit.services import Actor
from memories.stm.items import MemoryType
from memories.stm.selectors import stm_item_for, stm_item_provenance
from memories.stm.serializers import StmItemDetailOutputSerializer, item_document
from memories.stm.services import stm_item_delete
from memories.write.candidates import Candidate, SourceKind
from memories.write.serializers import ItemUpdateOutputSerializer, ProposalsOutputSerializer
from memories.write.services import proposals_submit
from memories.write.updates import ItemChanges, stm_item_update
from memories.write.updates import Outcome as UpdateOutcome
from memoryproject.fields import (
    ChangesSerializer,
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


class ItemChangesSerializer(ChangesSerializer):
    """The fields of an item an edit may change; at least one."""

    summary = StrictCharField(required=False, max_length=20000, trim_whitespace=False)
    entities = serializers.ListField(
        child=StrictCharField(max_length=200), required=False, max_length=50
    )
    tags = serializers.ListField(
        child=StrictCharField(max_length=64), required=False, max_length=50
    )
    importance = StrictFloatField(required=False, min_value=0.0, max_value=1.0)
    confidence = StrictFloatField(required=False, min_value=0.0, max_value=1.0)
    ttl_minutes = StrictIntegerField(required=False, min_value=1, max_value=10 * 365 * 1440)

    def validate_summary(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("The summary cannot be empty.")
        return value


class MemoryItemApi(APIView):
    """One short-term item: GET it with the transcript events it came from (redacted), PATCH
    some of its fields (guarded as a new write is), DELETE it at once."""

    required_scopes = {"GET": "read", "PATCH": "write", "DELETE": "write"}
    error_statuses = {"PATCH": (404, 409)}

    @extend_schema(
        operation_id="stm_item_get",
        summary="Get a short-term item with its provenance",
        tags=["Memories"],
        description="One short-term item with the transcript events it came from (redacted).",
        responses=StmItemDetailOutputSerializer,
    )
    def get(self, request: Request, item_id: str) -> Response:
        tenant = request_tenant(request)
        item = stm_item_for(tenant=tenant, item_id=item_id)
        provenance = stm_item_provenance(tenant=tenant, item=item)
        return Response(
            StmItemDetailOutputSerializer({**item_document(item), "provenance": provenance}).data
        )

    @extend_schema(
        operation_id="stm_item_update",
        summary="Change a short-term item",
        tags=["Memories"],
        description=(
            "Change the summary, entities, tags, importance, confidence or lifetime of a live "
            "item. The item keeps its id; its version goes up and every index follows. The "
            "change meets what a proposal meets: redaction, the write policy's refusals, the "
            "quarantine screen (202, `quarantined`: nothing changed) and trust: an untrusted "
            "key's new words for a constraint, preference or profile fact wait for a reviewer "
            "(202, `held_for_verification`: nothing changed until approved). The audit trail "
            "keeps each field before and after."
        ),
        request=ItemChangesSerializer,
        responses={200: ItemUpdateOutputSerializer, 202: ItemUpdateOutputSerializer},
    )
    def patch(self, request: Request, item_id: str) -> Response:
        body = ItemChangesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        expected_version = data.pop("expected_version", None)
        result = stm_item_update(
            tenant=request_tenant(request),
            item_id=item_id,
            changes=ItemChanges(**data),
            actor=Actor.api_key(request.auth),  # type: ignore[arg-type]
            trusted_writer=bool(getattr(request.auth, "trusted_writer", False)),
            expected_version=expected_version,
        )
        document = {
            "outcome": result.outcome,
            "item": item_document(result.item),
            "redacted": result.redacted,
            "quarantine": result.quarantine,
            "hold_reason": result.hold_reason,
            "verification_id": result.verification_id or None,
        }
        held = result.outcome in (UpdateOutcome.QUARANTINED, UpdateOutcome.HELD)
        return Response(
            ItemUpdateOutputSerializer(document).data,
            status=status.HTTP_202_ACCEPTED if held else status.HTTP_200_OK,
        )

    @extend_schema(
        operation_id="stm_item_delete",
        summary="Delete a short-term item",
        tags=["Memories"],
        description="Delete the item and every index entry of it at once.",
        responses={204: None},
    )
    def delete(self, request: Request, item_id: str) -> Response:
        stm_item_delete(
            tenant=request_tenant(request),
            item_id=item_id,
            actor=Actor.api_key(request.auth),  # type: ignore[arg-type]
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
