"""Agents' API to Layer 3 alone: import cards, list them, search (inspection)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.audit.services import Actor
from memories.ltm.models import LtmCard
from memories.ltm.selectors import MODES, cards_for, ltm_search
from memories.ltm.serializers import (
    CardImportOutputSerializer,
    CardPageOutputSerializer,
    LtmSearchOutputSerializer,
    card_view,
)
from memories.ltm.services import CardInput, cards_import_screened
from memoryproject.errors import PayloadTooLarge
from memoryproject.fields import (
    QueryIntegerField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
)
from profiles.auth import request_tenant
from profiles.models import external_id_validator, slug_validator

MAX_SOURCE_KINDS = 20


class CardInputSerializer(StrictSerializer):
    id = StrictCharField(required=False, max_length=128, default="")
    user_id = StrictCharField(
        required=False, max_length=128, default="", validators=[external_id_validator]
    )
    project = StrictCharField(
        required=False, max_length=64, default="", validators=[slug_validator]
    )
    memory_type = serializers.ChoiceField(choices=LtmCard.Type.choices)
    title = StrictCharField(required=False, allow_blank=True, max_length=300, default="")
    summary = StrictCharField(max_length=4000)
    content = StrictCharField(required=False, allow_blank=True, max_length=20000, default="")
    entities = serializers.ListField(
        child=StrictCharField(max_length=200), required=False, max_length=50, default=list
    )
    tags = serializers.ListField(
        child=StrictCharField(max_length=64), required=False, max_length=50, default=list
    )
    source_refs = serializers.DictField(
        child=serializers.ListField(child=StrictCharField(max_length=128), max_length=200),
        required=False,
        default=dict,
    )
    importance = StrictFloatField(min_value=0, max_value=1, default=0.5)
    confidence = StrictFloatField(min_value=0, max_value=1, default=0.8)
    occurred_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="When what the card remembers happened (shown with the card when recalled, "
        "and matched by dates in queries).",
    )

    def validate_source_refs(self, refs: dict[str, list[str]]) -> dict[str, list[str]]:
        if len(refs) > MAX_SOURCE_KINDS or any(len(kind) > 64 for kind in refs):
            raise serializers.ValidationError(
                f"At most {MAX_SOURCE_KINDS} kinds of reference, each named in 64 characters."
            )
        return refs


class CardImportApi(APIView):
    """Bulk import of knowledge cards (all or nothing); a known `id` updates its card; more
    than `LTM_IMPORT_MAX_CARDS` cards is a 413.

    A card whose text reads as an instruction to the model is held for review (outcome
    `quarantined`, with its quarantine id and reason) and nothing of it is written.
    """

    required_scopes = {"POST": "admin"}

    class ImportInputSerializer(StrictSerializer):
        cards = CardInputSerializer(many=True, allow_empty=False)

        def validate_cards(self, cards: list[dict[str, Any]]) -> list[dict[str, Any]]:
            ids = [c["id"] for c in cards if c["id"]]
            if len(ids) != len(set(ids)):
                raise serializers.ValidationError("Card ids repeat within the import.")
            return cards

    @extend_schema(
        operation_id="cards_import",
        summary="Import long-term cards",
        tags=["Long-term"],
        request=ImportInputSerializer,
        responses={201: CardImportOutputSerializer},
    )
    def post(self, request: Request) -> Response:
        # Counted before validation, so an oversized import costs nothing but this check.
        limit = settings.LTM_IMPORT_MAX_CARDS
        given = request.data.get("cards") if isinstance(request.data, dict) else None
        if isinstance(given, list) and len(given) > limit:
            raise PayloadTooLarge(
                f"At most {limit} cards per import; send more in several imports.",
                fields={"cards": [f"{len(given)} cards given, at most {limit} allowed."]},
            )
        serializer = self.ImportInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        cards = [
            CardInput(
                external_id=c["id"],
                user_id=c["user_id"],
                project=c["project"],
                memory_type=c["memory_type"],
                title=c["title"],
                summary=c["summary"],
                content=c["content"],
                entities=c["entities"],
                tags=c["tags"],
                source_refs=c["source_refs"],
                importance=c["importance"],
                confidence=c["confidence"],
                occurred_at=c["occurred_at"],
            )
            for c in serializer.validated_data["cards"]
        ]
        results = cards_import_screened(
            tenant=request_tenant(request),
            cards=cards,
            actor=Actor.api_key(request.auth),  # type: ignore[arg-type]
        )
        body = {
            "cards": [
                {
                    "memory_id": result.card.memory_id if result.card else None,
                    "version": result.card.version if result.card else None,
                    "outcome": result.outcome,
                    "quarantine": result.quarantine,
                }
                for result in results
            ]
        }
        return Response(CardImportOutputSerializer(body).data, status=status.HTTP_201_CREATED)


class LtmSearchApi(APIView):
    """Search Layer 3 alone (lexical, vector or hybrid), with each hit's branch ranks."""

    required_scopes = {"POST": "read"}

    class SearchInputSerializer(StrictSerializer):
        query = StrictCharField(max_length=2000)
        mode = serializers.ChoiceField(choices=MODES, default="hybrid")
        k = StrictIntegerField(min_value=1, max_value=100, default=10)
        user_id = StrictCharField(
            required=False, max_length=128, validators=[external_id_validator]
        )
        project = StrictCharField(required=False, max_length=64, validators=[slug_validator])
        memory_types = serializers.ListField(
            child=serializers.ChoiceField(choices=LtmCard.Type.choices),
            required=False,
            default=list,
            max_length=len(LtmCard.Type.choices),
        )
        statuses = serializers.ListField(
            child=serializers.ChoiceField(choices=["active", "archived"]),
            required=False,
            default=["active"],
            allow_empty=False,
            max_length=2,
        )

    @extend_schema(
        operation_id="ltm_search",
        summary="Search long-term memory",
        tags=["Long-term"],
        request=SearchInputSerializer,
        responses=LtmSearchOutputSerializer,
    )
    def post(self, request: Request) -> Response:
        serializer = self.SearchInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = ltm_search(
            tenant=request_tenant(request),
            query=data["query"],
            mode=data["mode"],
            k=data["k"],
            user_id=data.get("user_id"),
            project=data.get("project"),
            memory_types=data["memory_types"],
            statuses=data["statuses"],
        )
        return Response(
            LtmSearchOutputSerializer(
                {
                    "mode": result.mode,
                    "degraded": result.degraded,
                    "failed_branches": list(result.failed_branches),
                    "hits": [
                        {
                            "memory_id": h.memory_id,
                            "score": h.score,
                            "lexical_rank": h.lexical_rank,
                            "lexical_score": h.lexical_score,
                            "vector_rank": h.vector_rank,
                            "vector_score": h.vector_score,
                            "title": h.card.get("title", ""),
                            "summary": h.card.get("summary", ""),
                            "memory_type": h.card.get("memory_type", ""),
                            "user_id": h.card.get("user_id") or None,
                        }
                        for h in result.hits
                    ],
                }
            ).data
        )


class CardListApi(APIView):
    """The tenant's cards, newest first: one user's, the shared ones, or all; paged."""

    required_scopes = {"GET": "read"}
    error_statuses = {"GET": (404,)}  # an unknown user_id

    class QuerySerializer(StrictSerializer):
        user_id = StrictCharField(
            required=False, max_length=128, default="", validators=[external_id_validator]
        )
        shared = serializers.BooleanField(
            required=False, default=False, help_text="only the cards of no user (the tenant's)"
        )
        status = serializers.ChoiceField(
            choices=[LtmCard.Status.ACTIVE, LtmCard.Status.ARCHIVED],
            required=False,
            help_text="active (the default) or archived",
        )
        memory_type = serializers.ChoiceField(choices=LtmCard.Type.choices, required=False)
        cursor = QueryIntegerField(required=False, min_value=1)
        limit = QueryIntegerField(required=False, min_value=1, max_value=200, default=50)

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if attrs.get("user_id") and attrs.get("shared"):
                raise serializers.ValidationError(
                    {"shared": ["A user's cards are not shared ones: give one of the two."]}
                )
            return attrs

    @extend_schema(
        operation_id="cards_list",
        summary="List long-term cards",
        tags=["Long-term"],
        parameters=[QuerySerializer],
        responses=CardPageOutputSerializer,
    )
    def get(self, request: Request) -> Response:
        query = self.QuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        page = cards_for(
            tenant=request_tenant(request),
            user_id=data["user_id"],
            shared=data["shared"],
            statuses=[data.get("status", LtmCard.Status.ACTIVE)],
            memory_type=data.get("memory_type", ""),
            cursor=data.get("cursor"),
            limit=data["limit"],
        )
        document = {
            "cards": [card_view(card) for card in page.cards],
            "next_cursor": str(page.next_cursor) if page.next_cursor else None,
        }
        return Response(CardPageOutputSerializer(document).data)
