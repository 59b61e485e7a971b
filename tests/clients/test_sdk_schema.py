"""The SDK covers every operation of the OpenAPI schema, and its typed models agree with it.

The SDK is written by hand (readable methods, TypedDicts that are the JSON itself) and checked
here against the schema the service generates: request bodies and query parameters key by key
and type by type, responses wherever the schema declares their properties (the free-form ones
are checked against real answers in test_sdk_live.py).
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from agent_memory_client import AsyncMemoryClient, MemoryClient
from agent_memory_client import models as m
from drf_spectacular.generators import SchemaGenerator

from tests.clients.shapes import schema_problems

# operationId -> (SDK method, request body model, query model, {status: response model})
OPERATIONS: dict[str, tuple[str, Any, Any, dict[str, Any]]] = {
    "events_append": (
        "append_events",
        m.AppendRequest,
        None,
        {"200": m.AppendResponse, "201": m.AppendResponse},
    ),
    "events_replay": (
        "replay_events",
        None,
        m.ReplayQuery,
        {"200": m.ReplayResponse},
    ),
    "session_verify": ("verify_session", None, None, {"200": m.VerifyResponse}),
    "profile_get": ("get_profile", None, None, {"200": m.ProfileResponse}),
    "profile_update": (
        "update_profile",
        m.ProfilePatch,
        None,
        {"200": m.ProfilePatchResponse},
    ),
    "proposals_submit": (
        "propose_memories",
        m.ProposalsRequest,
        None,  # dry_run is a keyword of its own
        {"200": m.ProposalsResponse, "201": m.ProposalsResponse},
    ),
    "stm_items_list": ("list_stm", None, m.StmQuery, {"200": m.StmPage}),
    "stm_item_get": ("get_memory", None, None, {"200": m.StmItemWithProvenance}),
    "stm_item_update": (
        "update_memory",
        m.MemoryUpdate,
        None,
        {"200": m.MemoryUpdateResponse, "202": m.MemoryUpdateResponse},
    ),
    "stm_item_delete": ("delete_memory", None, None, {"204": None}),
    "cards_import": (
        "import_cards",
        m.CardImportRequest,
        None,
        {"201": m.CardImportResponse},
    ),
    "cards_list": ("list_cards", None, m.CardsQuery, {"200": m.CardPage}),
    "card_get": ("get_card", None, None, {"200": m.Card}),
    "card_update": (
        "update_card",
        m.CardUpdate,
        None,
        {"200": m.CardUpdateResponse, "202": m.CardUpdateResponse},
    ),
    "card_delete": ("delete_card", None, None, {"202": m.Deletion}),
    "ltm_search": (
        "search_ltm",
        m.LtmSearchRequest,
        None,
        {"200": m.LtmSearchResponse},
    ),
    "recall": ("recall", m.RecallRequest, None, {"200": m.RecallResponse}),
    "session_compress": (
        "compress_session",
        m.CompressRequest,
        None,
        {"200": m.CompressResponse},
    ),
    "user_forget": ("forget_user", m.DeletionRequestIn, None, {"202": m.Deletion}),
    # DELETE takes an optional {"reason"} body the schema leaves out (as OpenAPI tools do).
    "fact_delete": ("delete_fact", None, None, {"202": m.Deletion}),
    "deletion_get": ("get_deletion", None, None, {"200": m.Deletion}),
    "promotions_list": (
        "list_promotions",
        None,
        m.PromotionsQuery,
        {"200": m.PromotionsResponse},
    ),
    "user_export": ("export_user", None, None, {"200": m.UserExport}),
    "user_memories": ("get_user_memories", None, m.UserMemoriesQuery, {"200": m.UserMemories}),
}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def _operations(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        operation["operationId"]: operation
        for item in schema["paths"].values()
        for method, operation in item.items()
        if method in ("get", "post", "patch", "put", "delete")
    }


def test_every_operation_has_a_method_on_both_clients(schema) -> None:
    assert set(_operations(schema)) == set(OPERATIONS)
    for method, *_ in OPERATIONS.values():
        assert callable(getattr(MemoryClient, method))
        assert inspect.iscoroutinefunction(getattr(AsyncMemoryClient, method)), method
        sync, asynchronous = (
            inspect.signature(getattr(cls, method)) for cls in (MemoryClient, AsyncMemoryClient)
        )
        assert list(sync.parameters) == list(asynchronous.parameters), method


@pytest.mark.parametrize("operation_id", sorted(OPERATIONS))
def test_request_models_match_the_schema(schema, operation_id: str) -> None:
    _, body_model, query_model, _ = OPERATIONS[operation_id]
    operation = _operations(schema)[operation_id]
    components = schema["components"]["schemas"]
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    assert (body is not None) == (body_model is not None), operation_id
    if body is not None:
        problems = schema_problems(body_model, body["schema"], components, request=True)
        assert not problems, "\n".join(problems)
    query = [p for p in operation.get("parameters", []) if p["in"] == "query"]
    if query_model is not None:
        as_object = {
            "type": "object",
            "properties": {p["name"]: p["schema"] for p in query},
            "required": [p["name"] for p in query if p.get("required")],
        }
        problems = schema_problems(query_model, as_object, components, request=True)
        assert not problems, "\n".join(problems)
    elif operation_id != "proposals_submit":
        assert not query, operation_id


@pytest.mark.parametrize("operation_id", sorted(OPERATIONS))
def test_response_models_match_the_schema(schema, operation_id: str) -> None:
    responses = OPERATIONS[operation_id][3]
    declared = _operations(schema)[operation_id]["responses"]
    assert set(responses) == {status for status in declared if status < "400"}, operation_id
    components = schema["components"]["schemas"]
    for status, model in responses.items():
        content = declared[status].get("content", {}).get("application/json")
        if model is None:
            assert content is None
            continue
        problems = schema_problems(model, content["schema"], components, request=False)
        assert not problems, "\n".join(problems)
