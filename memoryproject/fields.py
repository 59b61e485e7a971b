"""Serializer fields shared by the APIs, and the base of every input serializer."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from django.http import QueryDict
from rest_framework import serializers
from rest_framework.settings import api_settings

MAX_REPORTED_UNKNOWN = 20


class StrictSerializer(serializers.Serializer):
    """An input serializer that refuses fields it does not declare, naming each one.

    A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
    serializers derive from it too, so `events.0.colour` is named the same way. In a query
    string, DRF's own `format` parameter is allowed.
    """

    default_error_messages = {"unknown_field": "Unknown field."}

    def _unknown_fields(self, data: Any) -> dict[str, list[str]]:
        if not isinstance(data, Mapping):
            return {}
        allowed = set(self.fields)
        if isinstance(data, QueryDict):
            allowed.add(api_settings.URL_FORMAT_OVERRIDE or "")
        unknown = [str(name) for name in data if name not in allowed][:MAX_REPORTED_UNKNOWN]
        message = str(self.error_messages["unknown_field"])
        return {name: [message] for name in unknown}

    def to_internal_value(self, data: Any) -> Any:
        unknown = self._unknown_fields(data)
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                merged: dict[Any, Any] = {**exc.detail, **unknown}
                raise serializers.ValidationError(merged) from None
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers, booleans and objects instead of stringifying them,
    and holds the text as sent to its maximum length (the schema's `maxLength`): DRF checks
    the length only after trimming, so a long text ending in spaces would pass."""

    default_error_messages = {"not_a_string": "Must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string")
        if self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """A BooleanField for JSON bodies: `true` or `false`, not 0, 1 or "yes"."""

    default_error_messages = {"not_a_boolean": "Must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("not_a_boolean")
        return data


class StrictIntegerField(serializers.IntegerField):
    """An IntegerField for JSON bodies: a number, not `true` or `"5"`."""

    default_error_messages = {"not_a_number": "Must be a number."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("not_a_number")
        return super().to_internal_value(data)


class QueryIntegerField(serializers.IntegerField):
    """An IntegerField for a query parameter: digits only, so `?after=0.0` or `?limit=1e3` is
    a 400 as the schema's `integer` says, not read as a number (DRF takes "5.0" for 5)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str) and not data.strip().isdigit():
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A FloatField for JSON bodies: a number, not `false` or `"0.5"`."""

    default_error_messages = {"not_a_number": "Must be a number."}

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("not_a_number")
        return super().to_internal_value(data)


class JsonObjectField(serializers.DictField):
    """A JSON object of any values, null included (as it is inside nested lists and objects)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("child", serializers.JSONField(allow_null=True))
        super().__init__(**kwargs)


class ChangesSerializer(StrictSerializer):
    """A PATCH body: some of the fields a change may set (at least one), and optionally the
    version of the object it applies to."""

    expected_version = StrictIntegerField(
        required=False,
        min_value=1,
        help_text="apply only to this version of the object (409 `conflict` otherwise)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not set(attrs) - {"expected_version"}:
            raise serializers.ValidationError("Give at least one field to change.")
        return attrs


class OutputSerializer(serializers.Serializer):
    """An answer's shape, declared for the OpenAPI schema, for the views and services that build it.

    The values reach the renderer as they were built (a time stays a datetime, a count an
    int), so declaring a shape never changes an answer's bytes: only nested output serializers
    and lists and maps of them are walked. A key the serializer does not declare is kept, and
    the schema test of every response (tests/schema_check.py) fails on it.
    """

    def to_representation(self, instance: Any) -> dict[str, Any]:
        document = dict(instance)
        for name, field in _walked(type(self)):
            if document.get(name) is not None:
                document[name] = _represent(field, document[name])
        return document


@cache
def _walked(serializer: type[OutputSerializer]) -> tuple[tuple[str, Any], ...]:
    """The declared fields an answer's walk descends into, once per class: `self.fields`
    deep-copies every declared field on each call, a cost paid per item of every answer, while
    the walk reads them only (no binding, no context)."""
    declared: dict[str, Any] = serializer._declared_fields  # type: ignore[attr-defined]
    return tuple((name, field) for name, field in declared.items() if _descends(field))


def _descends(field: Any) -> bool:
    if isinstance(field, OutputSerializer):
        return True
    if isinstance(
        field, serializers.ListSerializer | serializers.ListField | serializers.DictField
    ):
        return _descends(field.child)
    return False


def _represent(field: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(field, OutputSerializer):
        return field.to_representation(value)
    if isinstance(field, serializers.ListSerializer | serializers.ListField):
        return [_represent(field.child, item) for item in value]
    if isinstance(field, serializers.DictField):
        return {key: _represent(field.child, item) for key, item in value.items()}
    return value
