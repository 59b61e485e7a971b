"""Agents' API to short-term memory: list, read with provenance, delete."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.audit.services import Actor
from memories.stm.items import MemoryType
from memories.stm.selectors import stm_item_for, stm_item_provenance, stm_items_for
from memories.stm.serializers import (
    StmItemDetailOutputSerializer,
    StmPageOutputSerializer,
    item_document,
)
from memories.stm.services import stm_item_delete
from memoryproject.fields import QueryIntegerField, StrictCharField, StrictSerializer
from profiles.auth import request_tenant
from profiles.models import external_id_validator


class StmListApi(APIView):
    """A user's live short-term items, newest first, filtered and paged (`before` cursor)."""

    required_scopes = {"GET": "read"}
    error_statuses = {"GET": (404,)}  # an unknown user_id

    class ListQuerySerializer(StrictSerializer):
        user_id = StrictCharField(max_length=128, validators=[external_id_validator])
        session_id = StrictCharField(required=False, max_length=128, default="")
        task_id = StrictCharField(required=False, max_length=128, default="")
        type = serializers.ChoiceField(choices=MemoryType.ALL, required=False)
        entity = StrictCharField(required=False, max_length=200, default="")
        before = serializers.FloatField(required=False, min_value=0)
        limit = QueryIntegerField(required=False, min_value=1, max_value=200, default=50)

    @extend_schema(
        operation_id="stm_items_list",
        summary="List a user's short-term items",
        tags=["Memories"],
        parameters=[ListQuerySerializer],
        responses=StmPageOutputSerializer,
    )
    def get(self, request: Request) -> Response:
        query = self.ListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        page = stm_items_for(
            tenant=request_tenant(request),
            user_id=data["user_id"],
            session_id=data["session_id"],
            task_id=data["task_id"],
            memory_type=data.get("type", ""),
            entity=data["entity"],
            before=data.get("before"),
            limit=data["limit"],
        )
        return Response(
            StmPageOutputSerializer(
                {
                    "items": [item_document(item) for item in page.items],
                    "next_before": repr(page.next_before) if page.next_before else None,
                }
            ).data
        )


class MemoryItemApi(APIView):
    """GET one short-term item with the transcript events it came from (redacted); DELETE it
    at once."""

    required_scopes = {"GET": "read", "DELETE": "write"}

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
