"""The agents' recall endpoint: what to know before the next model turn, within a budget."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.recall.pool import MemoryCandidate
from memories.recall.routing import LAYERS
from memories.recall.serializers import RecallOutputSerializer
from memories.recall.services import RecallRequest, RecallResult, recall
from memoryproject.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)
from profiles.auth import request_tenant
from profiles.models import external_id_validator, slug_validator


def item_view(candidate: MemoryCandidate, shortened: bool) -> dict[str, Any]:
    return {
        "memory_id": candidate.memory_id,
        "source": candidate.source,
        "source_priority": candidate.source_priority,
        "memory_type": candidate.memory_type,
        "domain": candidate.domain,
        "text": candidate.summary if shortened else candidate.text,
        "shortened": shortened,
        "score": candidate.score,
        "score_parts": candidate.parts,
        "weight": candidate.weight,
        "relevance": round(candidate.relevance, 4),
        "answers": candidate.answer,
        "answer_parts": candidate.answer_parts,
        "canonical_fact_key": candidate.canonical_fact_key,
        "provenance": candidate.provenance,
        "source_kind": candidate.source_kind,
        "trust": candidate.trust,
    }


def recall_view(result: RecallResult) -> dict[str, Any]:
    shortened = set(result.shortened)
    document: dict[str, Any] = {
        "recall_id": result.recall_id,
        **result.blocks.as_dict(),
        "items": [item_view(c, c.memory_id in shortened) for c in result.items],
        "injection_text": result.injection_text,
        "token_estimate": result.token_estimate,
        "budget_tokens": result.budget_tokens,
        "language": result.language,
        "degraded": result.degraded,
    }
    if result.explain is not None:
        document["explain"] = result.explain
    return document


class RecallApi(APIView):
    """POST a query with its user and session; get the blocks, the chosen memories and the
    text to inject. Layers that are down are listed under `degraded`; the answer is still 200."""

    required_scopes = {"POST": "read"}
    error_statuses = {"POST": (409,)}  # the session is another user's

    class RecallInputSerializer(StrictSerializer):
        user_id = StrictCharField(max_length=128, validators=[external_id_validator])
        session_id = StrictCharField(max_length=128, validators=[external_id_validator])
        query = StrictCharField(max_length=8000, allow_blank=True)
        task_id = StrictCharField(required=False, allow_blank=True, max_length=128, default="")
        project = StrictCharField(
            required=False, allow_blank=True, max_length=64, validators=[slug_validator], default=""
        )
        workspace = StrictCharField(
            required=False, allow_blank=True, max_length=64, validators=[slug_validator], default=""
        )
        budget_tokens = StrictIntegerField(min_value=50, max_value=32000, required=False)
        k = StrictIntegerField(
            min_value=1,
            max_value=50,
            required=False,
            help_text="at most this many memories (with `cutoff`, those that answer the query)",
        )
        cutoff = StrictBooleanField(
            required=False,
            default=True,
            help_text="inject only the memories that answer the query; false: the top k",
        )
        layers = serializers.ListField(
            child=serializers.ChoiceField(choices=LAYERS),
            required=False,
            default=list,
            max_length=len(LAYERS),
        )
        explain = StrictBooleanField(required=False, default=False)
        user_stated_only = StrictBooleanField(
            required=False,
            default=False,
            help_text="only the user's word: leave out what an assistant, a tool, an agent's "
            "proposal, a model or an import said",
        )

        def validate_layers(self, value: list[str]) -> list[str]:
            if len(set(value)) != len(value):
                raise serializers.ValidationError("Name each layer once.")
            return value

    @extend_schema(
        operation_id="recall",
        summary="Recall what to inject before the next model turn",
        tags=["Recall"],
        request=RecallInputSerializer,
        responses=RecallOutputSerializer,
    )
    def post(self, request: Request) -> Response:
        serializer = self.RecallInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = recall(
            tenant=request_tenant(request),
            request=RecallRequest(
                user_id=data["user_id"],
                session_id=data["session_id"],
                query=data["query"],
                task_id=data["task_id"],
                project=data["project"],
                workspace=data["workspace"],
                budget_tokens=data.get("budget_tokens"),
                k=data.get("k"),
                cutoff=data["cutoff"],
                layers=tuple(data["layers"]),
                explain=data["explain"],
                user_stated_only=data["user_stated_only"],
            ),
        )
        response = Response(RecallOutputSerializer(recall_view(result)).data)
        # Where the time went, for dashboards and benchmarks (W3C Server-Timing).
        response["Server-Timing"] = ", ".join(
            f"{name};dur={ms}" for name, ms in result.latency_ms.items()
        )
        return response
