"""Checks of the SDK's TypedDicts: against a JSON value the service answered, and against a
schema of the service's OpenAPI document."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

from typing_extensions import is_typeddict


def _hints(model: Any) -> dict[str, Any]:
    return typing.get_type_hints(model)


def _options(annotation: Any) -> list[Any]:
    if get_origin(annotation) in (Union, types.UnionType):
        return list(get_args(annotation))
    return [annotation]


def value_problems(value: Any, annotation: Any, where: str = "$") -> list[str]:
    """Where `value` (decoded JSON) does not fit `annotation`; [] when it does."""
    if annotation is Any:
        return []
    options = _options(annotation)
    if len(options) > 1:
        found = [value_problems(value, option, where) for option in options]
        return [] if any(not f for f in found) else min(found, key=len)
    if annotation is type(None):
        return [] if value is None else [f"{where}: expected null, got {value!r:.60}"]
    if is_typeddict(annotation):
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        hints = _hints(annotation)
        problems = [
            f"{where}: missing {key!r}" for key in annotation.__required_keys__ - value.keys()
        ]
        problems += [f"{where}: undeclared {key!r}" for key in value.keys() - hints.keys()]
        for key in value.keys() & hints.keys():
            problems += value_problems(value[key], hints[key], f"{where}.{key}")
        return problems
    origin = get_origin(annotation)
    if origin is Literal:
        return [] if value in get_args(annotation) else [f"{where}: {value!r} not in {annotation}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        (item,) = get_args(annotation)
        return [p for n, v in enumerate(value) for p in value_problems(v, item, f"{where}.{n}")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        _, item = get_args(annotation)
        return [p for k, v in value.items() for p in value_problems(v, item, f"{where}.{k}")]
    if annotation is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif annotation is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, annotation)
    return [] if ok else [f"{where}: expected {annotation.__name__}, got {value!r:.60}"]


def assert_fits(value: Any, annotation: Any) -> None:
    problems = value_problems(value, annotation)
    assert not problems, "\n".join(problems)


# --- against the OpenAPI schema -------------------------------------------------------------

_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool}


def schema_problems(
    annotation: Any,
    schema: dict[str, Any],
    components: dict[str, Any],
    *,
    request: bool,
    where: str = "$",
) -> list[str]:
    """Where the SDK's `annotation` disagrees with the OpenAPI `schema`; [] when it agrees.

    A free-form schema (an object without properties, `{}`) admits any annotation: the SDK
    may be more precise than the schema. Request enums must be the same Literal; responses may
    type an enum as plain str.
    """
    ref = schema.get("$ref")
    if ref:
        return schema_problems(
            annotation,
            components[ref.rsplit("/", 1)[-1]],
            components,
            request=request,
            where=where,
        )
    if not schema or annotation is Any:
        return []
    options = [o for o in _options(annotation) if o is not type(None)]
    nullable = len(options) < len(_options(annotation))
    if nullable and not schema.get("nullable") and request:
        return [f"{where}: the SDK allows null, the schema does not"]
    if len(options) != 1:
        return [f"{where}: the SDK's union {annotation} has no single schema"]
    (annotation,) = options
    if "enum" in schema:
        values = {v for v in schema["enum"] if v is not None}
        if get_origin(annotation) is Literal:
            return (
                []
                if set(get_args(annotation)) == values
                else [f"{where}: Literal{get_args(annotation)} against enum {sorted(values)}"]
            )
        if request or annotation is not str:
            return [f"{where}: the schema has the enum {sorted(values)}; the SDK {annotation}"]
        return []
    kind = schema.get("type")
    if kind == "array":
        if get_origin(annotation) is not list:
            return [f"{where}: the schema has an array; the SDK {annotation}"]
        (item,) = get_args(annotation)
        return schema_problems(
            item, schema.get("items", {}), components, request=request, where=f"{where}[]"
        )
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties")
        if not properties:
            if is_typeddict(annotation) or get_origin(annotation) is dict or annotation is dict:
                return []
            return [f"{where}: the schema has an object; the SDK {annotation}"]
        if not is_typeddict(annotation):
            return [f"{where}: the schema declares {sorted(properties)}; the SDK {annotation}"]
        hints = _hints(annotation)
        problems = []
        if set(hints) != set(properties):
            problems.append(
                f"{where}: keys differ: SDK only {sorted(set(hints) - set(properties))}, "
                f"schema only {sorted(set(properties) - set(hints))}"
            )
        required = set(schema.get("required", ()))
        if set(annotation.__required_keys__) != required & set(hints):
            problems.append(
                f"{where}: required keys differ: SDK {sorted(annotation.__required_keys__)}, "
                f"schema {sorted(required)}"
            )
        for key in set(hints) & set(properties):
            problems += schema_problems(
                hints[key], properties[key], components, request=request, where=f"{where}.{key}"
            )
        return problems
    expected = _JSON_TYPES.get(kind or "")
    if expected is None:
        return []
    if get_origin(annotation) is Literal:
        annotation = type(get_args(annotation)[0])
    if annotation is expected or (expected is float and annotation is int and not request):
        return []
    return [f"{where}: the schema has {kind}; the SDK {annotation}"]
