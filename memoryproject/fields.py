"""Serializer fields shared by the APIs."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers, booleans and objects instead of stringifying them."""

    default_error_messages = {"not_a_string": "Must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class JsonObjectField(serializers.DictField):
    """A JSON object of any values, null included (as it is inside nested lists and objects)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("child", serializers.JSONField(allow_null=True))
        super().__init__(**kwargs)
