"""JSON parsing with a hard size limit, so an oversized body is a clear 413 before it is read."""

from __future__ import annotations

from io import BytesIO
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from memoryproject.errors import PayloadTooLarge


class BoundedJSONParser(JSONParser):
    """JSONParser that refuses bodies above API_MAX_BODY_BYTES with 413."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Any = None
    ) -> Any:
        limit = settings.API_MAX_BODY_BYTES
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        too_large = PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        if declared and declared.isdigit() and int(declared) > limit:
            raise too_large
        body = stream.read(limit + 1)
        if len(body) > limit:
            raise too_large
        if not body.strip():
            raise ParseError("The request body is empty; a JSON object is expected.")
        return super().parse(BytesIO(body), media_type, parser_context)
