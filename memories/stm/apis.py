"""Agents' API to short-term memory: list a user's items (one item's read, change and
delete are the write path's: `memories.write.apis.MemoryItemApi`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.stm.items import MemoryType
from memories.stm.selectors import stm_items_for
from memories.stm.serializers import StmPageOutputSerializer, item_document
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
