"""Agents' API to review state: ask for deletions, follow them, list promotions, export a user."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.audit.services import Actor
from memories.ltm.selectors import card_for
from memories.ltm.serializers import CardOutputSerializer, card_view
from memories.review.deletion import deletion_for, deletion_request
from memories.review.export import user_export
from memories.review.models import DeletionRequest, PromotionRequest, ReviewStatus
from memories.review.promotion import promotions_for
from memories.review.serializers import (
    DeletionOutputSerializer,
    PromotionListOutputSerializer,
    UserExportOutputSerializer,
)
from memoryproject.fields import QueryIntegerField, StrictCharField, StrictSerializer
from profiles.auth import request_tenant


def deletion_view(request: DeletionRequest) -> dict[str, Any]:
    return {
        "request_id": request.request_id,
        "kind": request.kind,
        "target": request.target,
        "status": request.status,
        "reason": request.reason,
        "decision_reason": request.decision_reason,
        "decided_at": request.decided_at,
        "completed_at": request.completed_at,
        "attempts": request.attempts,
        "last_error": request.last_error,
        "receipt": request.receipt or None,
        "receipt_sha256": request.receipt_sha256 or None,
        "created_at": request.created_at,
    }


# A DELETE may carry a reason in its body; the schema generator gives DELETE no body, so the
# errors a body can cause are listed here.
DELETE_BODY_ERRORS = (400, 413, 415)


class DeletionInputSerializer(StrictSerializer):
    reason = StrictCharField(required=False, allow_blank=True, max_length=2000, default="")


def _accepted(request: Request, *, kind: str, target: str) -> Response:
    # No body at all is an empty request; a JSON body must be an object (not null or a list).
    data = {} if isinstance(request.data, QueryDict) and not request.data else request.data
    body = DeletionInputSerializer(data=data)
    body.is_valid(raise_exception=True)
    deletion, _ = deletion_request(
        tenant=request_tenant(request),
        kind=kind,
        target=target,
        actor=Actor.api_key(request.auth),  # type: ignore[arg-type]  # set by ApiKeyAuthentication
        reason=body.validated_data["reason"],
    )
    return Response(
        DeletionOutputSerializer(deletion_view(deletion)).data, status=status.HTTP_202_ACCEPTED
    )


class UserForgetApi(APIView):
    """Ask to erase an end user from every layer (right to erasure); a reviewer approves it."""

    required_scopes = {"POST": "admin"}

    @extend_schema(
        operation_id="user_forget",
        summary="Ask to erase an end user",
        tags=["Review"],
        request=DeletionInputSerializer,
        responses={202: DeletionOutputSerializer},
    )
    def post(self, request: Request, user_id: str) -> Response:
        return _accepted(request, kind=DeletionRequest.Kind.USER, target=user_id)


class FactDeleteApi(APIView):
    """Ask to delete a stable fact (`fact_<n>`) or preference (`pref_<n>`) with its history."""

    required_scopes = {"DELETE": "admin"}
    error_statuses = {"DELETE": DELETE_BODY_ERRORS}

    @extend_schema(
        operation_id="fact_delete",
        summary="Ask to erase a fact or preference",
        tags=["Review"],
        request=DeletionInputSerializer,
        responses={202: DeletionOutputSerializer},
    )
    def delete(self, request: Request, fact_id: str) -> Response:
        return _accepted(request, kind=DeletionRequest.Kind.FACT, target=fact_id)


class CardDetailApi(APIView):
    """GET one card of the ledger; DELETE (admin) asks for its erasure, which a reviewer
    approves before anything is removed.

    The card's read is Layer 3's, its deletion a review workflow: the view lives here, above
    both, so Layer 3 never imports the review layer."""

    required_scopes = {"GET": "read", "DELETE": "admin"}
    error_statuses = {"DELETE": DELETE_BODY_ERRORS}

    @extend_schema(
        operation_id="card_get",
        summary="Get a long-term card",
        tags=["Long-term"],
        description="One card of the long-term ledger in any status but deleted (erased: 404).",
        responses=CardOutputSerializer,
    )
    def get(self, request: Request, memory_id: str) -> Response:
        card = card_for(tenant=request_tenant(request), memory_id=memory_id)
        return Response(CardOutputSerializer(card_view(card)).data)

    @extend_schema(
        operation_id="card_delete",
        summary="Ask to erase a long-term card",
        tags=["Long-term"],
        description=(
            "Ask to erase the card: answers 202 with a deletion request (`pending`) and removes "
            "nothing yet. Once a reviewer approves it in the review queue, the card is erased "
            "from PostgreSQL, Elasticsearch, Milvus and the caches and the request gets its "
            "receipt; follow it at `GET /v1/deletions/{request_id}`. An open request for the "
            "same card is returned as is."
        ),
        responses={202: DeletionOutputSerializer},
    )
    def delete(self, request: Request, memory_id: str) -> Response:
        return _accepted(request, kind=DeletionRequest.Kind.CARD, target=memory_id)


class DeletionDetailApi(APIView):
    """A deletion request's status and, once erased and verified, its receipt."""

    required_scopes = {"GET": "read"}

    @extend_schema(
        operation_id="deletion_get",
        summary="Follow a deletion request to its receipt",
        tags=["Review"],
        responses=DeletionOutputSerializer,
    )
    def get(self, request: Request, request_id: str) -> Response:
        deletion = deletion_for(tenant=request_tenant(request), request_id=request_id)
        return Response(DeletionOutputSerializer(deletion_view(deletion)).data)


class PromotionListApi(APIView):
    """The tenant's promotion proposals, newest first, by status."""

    required_scopes = {"GET": "read"}

    class QuerySerializer(StrictSerializer):
        status = serializers.ChoiceField(choices=ReviewStatus.choices, required=False)
        limit = QueryIntegerField(min_value=1, max_value=500, default=100)

    @extend_schema(
        operation_id="promotions_list",
        summary="List promotion proposals",
        tags=["Review"],
        parameters=[QuerySerializer],
        responses=PromotionListOutputSerializer,
    )
    def get(self, request: Request) -> Response:
        query = self.QuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        wanted = query.validated_data.get("status")
        promotions = promotions_for(
            tenant=request_tenant(request),
            statuses=[wanted] if wanted else [],
            limit=query.validated_data["limit"],
        )
        document = {"promotions": [_promotion_view(p) for p in promotions]}
        return Response(PromotionListOutputSerializer(document).data)


def _promotion_view(promotion: PromotionRequest) -> dict[str, Any]:
    return {
        "request_id": promotion.request_id,
        "path": promotion.path,
        "origin": promotion.origin,
        "user_id": promotion.end_user.external_id if promotion.end_user else None,
        "memory_type": promotion.memory_type,
        "proposal": promotion.proposal,
        "confidence": promotion.confidence,
        "triggers": promotion.evidence.get("triggers", {}),
        "status": promotion.status,
        "decision_reason": promotion.decision_reason,
        "result_ref": promotion.result_ref or None,
        "created_at": promotion.created_at,
        "decided_at": promotion.decided_at,
    }


class UserExportApi(APIView):
    """Everything held about one end user in every layer, as one JSON document: derived text
    redacted, the transcripts as recorded (the end user's own copy; docs/redaction.md)."""

    required_scopes = {"GET": "admin"}

    @extend_schema(
        operation_id="user_export",
        summary="Export everything held about an end user",
        tags=["Review"],
        responses=UserExportOutputSerializer,
    )
    def get(self, request: Request, user_id: str) -> Response:
        document = user_export(
            tenant=request_tenant(request), user_id=user_id, raw_transcripts=True
        )
        return Response(UserExportOutputSerializer(document).data)
