"""Agents' API to review state: ask for deletions, follow them, list promotions, read or export
everything about a user, change a card."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.audit.services import Actor
from memories.ltm.selectors import card_for, cards_for
from memories.ltm.serializers import CardOutputSerializer, CardUpdateOutputSerializer, card_view
from memories.ltm.updates import Outcome as CardOutcome
from memories.ltm.updates import card_update
from memories.review.deletion import deletion_for, deletion_request
from memories.review.export import user_export
from memories.review.models import DeletionRequest, PromotionRequest, ReviewStatus
from memories.review.promotion import promotions_for
from memories.review.serializers import (
    DeletionOutputSerializer,
    PromotionListOutputSerializer,
    UserExportOutputSerializer,
    UserMemoriesOutputSerializer,
)
from memories.stm.selectors import stm_items_for
from memories.stm.serializers import item_document
from memoryproject.fields import (
    ChangesSerializer,
    QueryIntegerField,
    StrictCharField,
    StrictFloatField,
    StrictSerializer,
)
from profiles.auth import request_tenant
from profiles.selectors import profile_document_for


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


class CardChangesSerializer(ChangesSerializer):
    """The fields of a card an edit may change; at least one."""

    title = StrictCharField(required=False, allow_blank=True, max_length=300)
    summary = StrictCharField(required=False, max_length=4000)
    content = StrictCharField(required=False, allow_blank=True, max_length=20000)
    entities = serializers.ListField(
        child=StrictCharField(max_length=200), required=False, max_length=50
    )
    tags = serializers.ListField(
        child=StrictCharField(max_length=64), required=False, max_length=50
    )
    importance = StrictFloatField(required=False, min_value=0, max_value=1)
    confidence = StrictFloatField(required=False, min_value=0, max_value=1)
    occurred_at = serializers.DateTimeField(required=False, allow_null=True)


class CardDetailApi(APIView):
    """GET one card of the ledger; PATCH (admin) changes it; DELETE (admin) asks for its
    erasure, which a reviewer approves before anything is removed.

    The card's read is Layer 3's, its deletion a review workflow: the view lives here, above
    both, so Layer 3 never imports the review layer."""

    required_scopes = {"GET": "read", "PATCH": "admin", "DELETE": "admin"}
    error_statuses = {"PATCH": (404, 409), "DELETE": DELETE_BODY_ERRORS}

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
        operation_id="card_update",
        summary="Change a long-term card",
        tags=["Long-term"],
        description=(
            "Change a card's texts, entities, tags, importance, confidence or date. The card "
            "keeps its id; its version goes up and both indexes follow shortly (the ledger "
            "answers recall at once). Texts are redacted; a change that reads as an instruction "
            "to the model is held for review (202, `quarantined`: nothing changed). The audit "
            "trail keeps each field before and after."
        ),
        request=CardChangesSerializer,
        responses={200: CardUpdateOutputSerializer, 202: CardUpdateOutputSerializer},
    )
    def patch(self, request: Request, memory_id: str) -> Response:
        body = CardChangesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        changes = dict(body.validated_data)
        expected_version = changes.pop("expected_version", None)
        result = card_update(
            tenant=request_tenant(request),
            memory_id=memory_id,
            changes=changes,
            actor=Actor.api_key(request.auth),  # type: ignore[arg-type]
            expected_version=expected_version,
        )
        document = {
            "outcome": result.outcome,
            "card": card_view(result.card),
            "redacted": result.redacted,
            "quarantine": result.quarantine,
        }
        held = result.outcome == CardOutcome.QUARANTINED
        return Response(
            CardUpdateOutputSerializer(document).data,
            status=status.HTTP_202_ACCEPTED if held else status.HTTP_200_OK,
        )

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


class UserMemoriesApi(APIView):
    """Everything an agent may read about one end user, in one answer: the profile, the live
    short-term items and the user's own cards, each part paged on its own."""

    required_scopes = {"GET": "read"}
    error_statuses = {"GET": (404,)}  # an unknown user_id

    class QuerySerializer(StrictSerializer):
        limit = QueryIntegerField(
            required=False, min_value=1, max_value=200, default=50, help_text="per part"
        )
        items_before = serializers.FloatField(required=False, min_value=0)
        cards_cursor = QueryIntegerField(required=False, min_value=1)

    @extend_schema(
        operation_id="user_memories",
        summary="Get everything about a user",
        tags=["Profiles"],
        description=(
            "The user's profile, live short-term items (newest first) and own active cards "
            "(newest first; the tenant's shared cards are listed by `cards_list`). Page on with "
            "`items_before` and `cards_cursor`; the profile comes with every page."
        ),
        parameters=[QuerySerializer],
        responses=UserMemoriesOutputSerializer,
    )
    def get(self, request: Request, user_id: str) -> Response:
        query = self.QuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data, tenant = query.validated_data, request_tenant(request)
        profile = profile_document_for(tenant=tenant, external_id=user_id)
        items = stm_items_for(
            tenant=tenant, user_id=user_id, before=data.get("items_before"), limit=data["limit"]
        )
        cards = cards_for(
            tenant=tenant, user_id=user_id, cursor=data.get("cards_cursor"), limit=data["limit"]
        )
        document = {
            "user_id": profile["user_id"],
            "profile": profile,
            "items": [item_document(item) for item in items.items],
            "next_items_before": repr(items.next_before) if items.next_before else None,
            "cards": [card_view(card) for card in cards.cards],
            "next_cards_cursor": str(cards.next_cursor) if cards.next_cursor else None,
        }
        return Response(UserMemoriesOutputSerializer(document).data)
