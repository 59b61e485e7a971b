"""A client-side check of every API answer against the service's own OpenAPI schema.

`tests/conftest.py` runs it on each response an `APIClient` gets in the suite: the operation
must declare the status, and a JSON body must validate against the declared shape with every
object the schema describes closed (`additionalProperties: false`), so a key an output
serializer does not declare fails as surely as a wrong type.
"""

from __future__ import annotations

import copy
import re
from functools import cache
from typing import Any

import jsonschema
from drf_spectacular.generators import SchemaGenerator

_PARAMETER = re.compile(r"<(?:\w+:)?(\w+)>")
METHODS = {"get", "post", "put", "patch", "delete"}


@cache
def openapi_schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def _strict(node: Any) -> Any:
    """OpenAPI 3.0's `nullable` as JSON Schema, and described objects closed."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _strict(value) for key, value in node.items()}
    if node.get("type") == "object" and isinstance(node.get("properties"), dict):
        node.setdefault("additionalProperties", False)
    if node.pop("nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


@cache
def _components() -> dict[str, Any]:
    return _strict(copy.deepcopy(openapi_schema().get("components", {})))


def _operation(method: str, route: str) -> dict[str, Any] | None:
    path = "/" + _PARAMETER.sub(r"{\1}", route)
    return openapi_schema()["paths"].get(path, {}).get(method)


@cache
def _validator(method: str, route: str, status: str) -> jsonschema.Draft202012Validator:
    operation = _operation(method, route) or {}
    declared = operation["responses"][status]["content"]["application/json"]["schema"]
    shape = _strict(copy.deepcopy(declared))
    return jsonschema.Draft202012Validator({**shape, "components": _components()})


def response_problems(method: str, route: str, status: int, response: Any) -> list[str]:
    """What is wrong with one answer; [] when the schema describes it."""
    method = method.lower()
    if method not in METHODS or not route.startswith("v1/"):
        return []
    operation = _operation(method, route)
    if operation is None:
        return []  # a method the route does not serve (405): no operation to check
    where = f"{method.upper()} /{route} -> {status}"
    declared = operation["responses"].get(str(status))
    if declared is None:
        return [f"{where}: status not declared ({sorted(operation['responses'])})"]
    content = declared.get("content", {})
    body = response.content
    if not content:
        return [] if not body else [f"{where}: a body where the schema declares none"]
    if "json" not in response.get("Content-Type", ""):
        return [f"{where}: not JSON ({response.get('Content-Type')})"]
    validator = _validator(method, route, str(status))
    return [
        f"{where}: {'/'.join(map(str, error.absolute_path)) or '(body)'}: {error.message}"
        for error in validator.iter_errors(response.json())
    ]
