"""The OpenAPI schema's error responses, links and order.

Every operation declares the errors it can answer, all in the one error shape, so a client (or
a schema fuzzer) can rely on the documented codes.

Each operation gets the errors every request can meet (401, 403, 429, 503), those that follow
from its inputs (400 for a body or query parameters; 413 and 415 for a body; 404 for an object
named in the path), and any a view lists for a method in `error_statuses`, e.g.
`error_statuses = {"POST": (409, 410)}`.

The postprocessing hooks close request bodies, add the links between operations and put the
operations in the order of an agent's loop (`OPERATION_ORDER`), which the docs pages keep.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.drainage import warn
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework import serializers

from memoryproject.errors import ErrorCode

ERROR_COMPONENT = "Error"
COMPONENT_REF = "#/components/schemas/"
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every 4xx and 5xx answer; clients branch on `code`, never on `message`.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "enum": [code.value for code in ErrorCode],
                    "description": "stable, machine-readable (`memoryproject.errors.ErrorCode`)",
                },
                "message": {"type": "string", "description": "for people; may change"},
                "fields": {
                    "type": "object",
                    "description": "problems by input field, e.g. `events.3.role`",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
            },
            "required": ["code", "message", "fields"],
        }
    },
    "required": ["error"],
}

ERROR_DESCRIPTIONS = {
    400: "`invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed",
    401: "`unauthenticated`: no key, or an unknown or revoked one",
    403: "`permission_denied`: the key lacks the scope this operation needs",
    404: "`not_found`: no such object in the key's tenant",
    409: "`conflict` (or a more precise code): the request contradicts stored state",
    410: "`gone`: the object was erased",
    413: "`payload_too_large`: the body or one of its lists is over the limit",
    414: "`uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES`",
    415: "`unsupported_media_type`: send `Content-Type: application/json`",
    429: "`throttled`: over the key's rate limit; retry after `Retry-After` seconds",
    431: "`headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over "
    "`API_MAX_HEADERS` header fields",
    503: "`store_unavailable`: a store did not answer; retry later",
}


class ServiceAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema plus the error responses of each operation."""

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for status_code in sorted(self.error_statuses()):
            responses.setdefault(str(status_code), self._error_response(status_code))
        return responses

    def _map_serializer_field(
        self, field: Any, direction: Any, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction != "request" or not schema:
            return schema
        # A required text is trimmed before the blank check: it needs a non-space character.
        if (
            isinstance(field, serializers.CharField)
            and field.trim_whitespace
            and not field.allow_blank
            and schema.get("type") == "string"
        ):
            schema.setdefault("pattern", r"\S")
        # drf-spectacular leaves out these limits of lists; the serializers enforce them.
        lists = serializers.ListSerializer | serializers.ListField
        if schema.get("type") == "array" and isinstance(field, lists):
            if not field.allow_empty:
                schema.setdefault("minItems", 1)
            limit = getattr(field, "max_length", None)  # a ListSerializer keeps it untyped
            if limit is not None:
                schema.setdefault("maxItems", limit)
        return schema

    def _get_parameters(self) -> list[dict[str, Any]]:
        parameters = super()._get_parameters()
        for parameter in parameters:
            # DRF reads an empty optional query value (`?status=`) as not given.
            if parameter.get("in") == "query" and not parameter.get("required"):
                parameter["allowEmptyValue"] = True
        return parameters

    def error_statuses(self) -> set[int]:
        statuses = {401, 403, 414, 429, 431, 503}  # 414 and 431: any request's URL and headers
        parameters = self._get_parameters()
        if self._get_request_body():
            statuses |= {400, 413, 415}
        if any(p.get("in") == "query" for p in parameters):
            statuses.add(400)
        if any(p.get("in") == "path" for p in parameters):
            statuses.add(404)
        extras = getattr(self.view, "error_statuses", {})
        statuses.update(extras.get(self.method, ()))
        return statuses

    def _error_response(self, status_code: int) -> dict[str, Any]:
        component = ResolvedComponent(
            name=ERROR_COMPONENT,
            type=ResolvedComponent.SCHEMA,
            object=ERROR_COMPONENT,
            schema=ERROR_SCHEMA,
        )
        self.registry.register_on_missing(component)
        return {
            "description": ERROR_DESCRIPTIONS.get(status_code, ""),
            "content": {"application/json": {"schema": component.ref}},
        }


# Where one operation's answer names what another one takes (OpenAPI links), so clients and
# the stateful fuzzer can follow them: (from method, path, status) -> links to (method, path)
# with the parameters taken from the request or the answer.
_EVENTS = "/v1/sessions/{session_id}/events"
_SESSION = {"session_id": "$request.path.session_id"}
_DELETION = {"request_id": "$response.body#/request_id"}
LINKS: dict[tuple[str, str, str], dict[tuple[str, str], dict[str, str]]] = {
    ("post", _EVENTS, "201"): {
        ("get", _EVENTS): _SESSION,
        ("get", "/v1/sessions/{session_id}/verify"): _SESSION,
        ("post", "/v1/sessions/{session_id}/compress"): _SESSION,
        ("get", "/v1/users/{user_id}/profile"): {"user_id": "$request.body#/user_id"},
        ("get", "/v1/users/{user_id}/export"): {"user_id": "$request.body#/user_id"},
    },
    ("post", "/v1/memories/proposals", "201"): {
        ("get", "/v1/memories/{item_id}"): {"item_id": "$response.body#/results/0/item_id"},
        ("delete", "/v1/memories/{item_id}"): {"item_id": "$response.body#/results/0/item_id"},
    },
    ("post", "/v1/ltm/cards:import", "201"): {
        ("get", "/v1/ltm/cards/{memory_id}"): {"memory_id": "$response.body#/cards/0/memory_id"},
        ("delete", "/v1/ltm/cards/{memory_id}"): {"memory_id": "$response.body#/cards/0/memory_id"},
    },
    ("patch", "/v1/users/{user_id}/profile", "200"): {
        ("delete", "/v1/facts/{fact_id}"): {"fact_id": "$response.body#/facts/0/id"},
    },
    ("post", "/v1/users/{user_id}/forget", "202"): {
        ("get", "/v1/deletions/{request_id}"): _DELETION
    },
    ("delete", "/v1/ltm/cards/{memory_id}", "202"): {
        ("get", "/v1/deletions/{request_id}"): _DELETION
    },
    ("delete", "/v1/facts/{fact_id}", "202"): {("get", "/v1/deletions/{request_id}"): _DELETION},
}


def add_links(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: the LINKS between operations, by operationId."""
    paths = result.get("paths", {})
    for (method, path, status), targets in LINKS.items():
        response = paths[path][method]["responses"][status]
        links = response.setdefault("links", {})
        for (target_method, target_path), parameters in targets.items():
            operation_id = paths[target_path][target_method]["operationId"]
            links[operation_id] = {"operationId": operation_id, "parameters": parameters}
    return result


def _reachable(node: Any, components: dict[str, Any], found: set[str]) -> None:
    """Add the names of the components `node` refers to, directly or through others."""
    if isinstance(node, list):
        for item in node:
            _reachable(item, components, found)
    elif isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(COMPONENT_REF):
            name = ref.removeprefix(COMPONENT_REF)
            if name not in found and name in components:
                found.add(name)
                _reachable(components[name], components, found)
        for value in node.values():
            _reachable(value, components, found)


def _close(node: Any) -> None:
    """Mark every object schema with declared properties inside `node` as closed."""
    if isinstance(node, list):
        for item in node:
            _close(item)
    elif isinstance(node, dict):
        if node.get("type") == "object" and isinstance(node.get("properties"), dict):
            node.setdefault("additionalProperties", False)
        for value in node.values():
            _close(value)


def close_request_bodies(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: request bodies refuse fields they do not declare.

    The input serializers answer 400 naming an unknown field, so every request object says
    `additionalProperties: false` (free-form objects such as `metadata` stay open). A component
    that responses use too is left open, so no response shape changes.
    """
    components = result.get("components", {}).get("schemas", {})
    operations = [
        operation
        for item in result.get("paths", {}).values()
        for operation in item.values()
        if isinstance(operation, dict)
    ]
    requested: set[str] = set()
    answered: set[str] = set()
    for operation in operations:
        _reachable(operation.get("requestBody", {}), components, requested)
        _reachable(operation.get("responses", {}), components, answered)
    for operation in operations:
        _close(operation.get("requestBody", {}))
    for name in requested - answered:
        _close(components[name])
    return result


# The order the schema, and so Swagger UI and Redoc, list the operations in: an agent's loop
# (record, recall, what memory holds, review), tag by tag in the order of
# SPECTACULAR_SETTINGS["TAGS"]. Each id is set beside its view (`extend_schema(operation_id=)`).
OPERATION_ORDER: tuple[str, ...] = (
    # Transcripts
    "events_append",
    "events_replay",
    "session_verify",
    # Recall
    "recall",
    # Memories
    "proposals_submit",
    "stm_items_list",
    "stm_item_get",
    "stm_item_update",
    "stm_item_delete",
    # Long-term
    "cards_import",
    "cards_list",
    "ltm_search",
    "card_get",
    "card_update",
    "card_delete",
    # Profiles
    "profile_get",
    "profile_update",
    "user_memories",
    # Review
    "promotions_list",
    "fact_delete",
    "user_forget",
    "deletion_get",
    "user_export",
    # Compression
    "session_compress",
)
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def order_operations(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: paths, and the methods of each path, in OPERATION_ORDER.

    An operation missing from it, or tagged with a tag the settings do not describe, is a
    warning, so `spectacular --fail-on-warn` names it instead of the docs listing it anywhere.
    """
    position = {operation_id: index for index, operation_id in enumerate(OPERATION_ORDER)}
    described = {tag["name"] for tag in result.get("tags", [])}

    def rank(operation: dict[str, Any]) -> int:
        operation_id = operation["operationId"]
        if operation_id not in position:
            warn(f"operation {operation_id!r} is missing from memoryproject.schema.OPERATION_ORDER")
        for tag in set(operation.get("tags", [])) - described:
            warn(f"operation {operation_id!r} has tag {tag!r}, not in SPECTACULAR_SETTINGS['TAGS']")
        return position.get(operation_id, len(position))

    ranked: list[tuple[int, str, dict[str, Any]]] = []
    for path, item in result.get("paths", {}).items():
        methods = sorted(
            ((rank(item[method]), method) for method in item if method in _METHODS),
        )
        shared = {key: value for key, value in item.items() if key not in _METHODS}
        ordered = {**shared, **{method: item[method] for _, method in methods}}
        ranked.append((methods[0][0] if methods else len(position), path, ordered))
    result["paths"] = {path: item for _, path, item in sorted(ranked, key=lambda r: r[0])}
    return result
