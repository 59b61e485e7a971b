"""Reading request bodies: a hard size limit (413 before the body is read) and JSON that every
store can keep, checked once here so no view or service meets a value it cannot store.

Refused with 400 `invalid`, naming the field: nesting deeper than API_MAX_JSON_DEPTH, NUL
characters and unpaired surrogates in any string or key (PostgreSQL text cannot hold NUL, and
neither UTF-8 nor orjson can encode a lone surrogate), integers outside the signed 64-bit
range, and other numbers that are not finite or not within +-2^63 (PostgreSQL's jsonb would
give them back as integers beyond that range).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from io import BytesIO
from typing import IO, Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from memoryproject.errors import ADMIN_PREFIX, FieldErrors, Invalid, PayloadTooLarge, error_body

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
FLOAT_LIMIT = float(2**63)
MAX_REPORTED_FIELDS = 20

_STRING_LITERAL = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def too_large() -> PayloadTooLarge:
    return PayloadTooLarge(f"The request body is larger than {settings.API_MAX_BODY_BYTES} bytes.")


def _declared_length(request: HttpRequest) -> int | None:
    """The Content-Length header as a number; None when absent; Invalid when not a number."""
    declared = request.META.get("CONTENT_LENGTH") or ""
    if not declared:
        return None
    if not (declared.isascii() and declared.isdigit()):
        raise Invalid("The Content-Length header is not a number.")
    return int(declared)


def nested_deeper_than(text: str, limit: int) -> bool:
    """Whether the JSON text nests arrays and objects more than `limit` levels deep.

    Checked before parsing, so the parser never recurses past the limit: strings are taken
    out, then each pass removes the innermost empty brackets; `limit` passes empty any text
    that nests no deeper. Malformed bracketing is left to the parser to report.
    """
    brackets = _NOT_BRACKET.sub("", _STRING_LITERAL.sub("", text))
    for _ in range(limit):
        if not brackets:
            return False
        inner = _INNERMOST.sub("", brackets)
        if inner == brackets:
            return False
        brackets = inner
    return bool(brackets)


def _shown(text: str) -> str:
    """A key as it can be shown in an error: NUL and surrogates written as escapes."""
    return _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _text_problem(text: str) -> str:
    """What `text` must not contain, if it does ("contain NUL ..."); empty when it is fine."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return ""
    if found.group() == "\x00":
        return "contain NUL (\\u0000) characters."
    return "contain unpaired surrogates (\\ud800-\\udfff)."


def unstorable_values(data: Any) -> FieldErrors:
    """Where the parsed JSON holds a value no store can keep, by field path (a.0.b)."""
    problems: FieldErrors = {}
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack and len(problems) < MAX_REPORTED_FIELDS:
        value, path = stack.pop()
        problem = ""
        if isinstance(value, str):
            problem = _text_problem(value) and f"Must not {_text_problem(value)}"
        elif isinstance(value, bool) or value is None:
            pass
        elif isinstance(value, int):
            if not INT_MIN <= value <= INT_MAX:
                problem = "Integers must be between -2^63 and 2^63-1."
        elif isinstance(value, float):
            # PostgreSQL's jsonb gives 1e20 back as the integer 100000000000000000000.
            if not (math.isfinite(value) and -FLOAT_LIMIT < value < FLOAT_LIMIT):
                problem = "Numbers must be finite and between -2^63 and 2^63."
        elif isinstance(value, dict):
            for key, item in value.items():
                name = f"{path}.{_shown(key)}" if path else _shown(key)
                key_problem = _text_problem(key)
                if key_problem:
                    problems.setdefault(name, []).append(f"Field names must not {key_problem}")
                stack.append((item, name))
        elif isinstance(value, list):
            stack.extend((item, f"{path}.{i}" if path else str(i)) for i, item in enumerate(value))
        if problem:
            problems.setdefault(path or "__all__", []).append(problem)
    return problems


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class BoundedJSONParser(JSONParser):
    """JSONParser with the body size limit (413) and the checks above (400)."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Any = None
    ) -> Any:
        context = parser_context or {}
        limit = settings.API_MAX_BODY_BYTES
        request = context.get("request")
        if request is not None and (_declared_length(request) or 0) > limit:
            raise too_large()
        body = stream.read(limit + 1)
        if len(body) > limit:
            raise too_large()
        if not body.strip():
            raise ParseError("The request body is empty; a JSON object is expected.")
        try:
            text = body.decode(context.get("encoding", settings.DEFAULT_CHARSET))
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        depth = settings.API_MAX_JSON_DEPTH
        too_deep = Invalid(
            f"The JSON body nests deeper than {depth} levels.",
            fields={"__all__": [f"Nest arrays and objects at most {depth} levels deep."]},
        )
        if nested_deeper_than(text, depth):
            raise too_deep
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise too_deep from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        problems = unstorable_values(data)
        if problems:
            raise Invalid("The request is not valid; see fields.", fields=problems)
        return data


class BodyLimitMiddleware:
    """Bodies sent without a Content-Length (chunked) are read here, up to the limit.

    Django reads nothing of a body whose length it is not told, so the API would see an empty
    request; here the body is read (one byte past API_MAX_BODY_BYTES at most), answered 413
    when larger, or handed on with its length. A declared length above the limit is 413 at
    once, before anything is read.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(ADMIN_PREFIX):  # the admin keeps Django's own pages
            return self.get_response(request)
        limit = settings.API_MAX_BODY_BYTES
        try:
            declared = _declared_length(request)
            if declared is not None and declared > limit:
                raise too_large()
            if declared is None and "HTTP_TRANSFER_ENCODING" in request.META:
                self._read_unsized_body(request, limit)
        except (Invalid, PayloadTooLarge) as exc:
            return JsonResponse(
                error_body(exc.code, exc.message, exc.fields), status=exc.status_code
            )
        return self.get_response(request)

    @staticmethod
    def _read_unsized_body(request: HttpRequest, limit: int) -> None:
        environ = getattr(request, "environ", None) or {}
        source = environ.get("wsgi.input") or request._stream
        chunks, size = [], 0
        while size <= limit:
            chunk = source.read(min(64 * 1024, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise too_large()
        body = b"".join(chunks)
        request.META["CONTENT_LENGTH"] = str(len(body))
        request._stream = BytesIO(body)
