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

from memoryproject.errors import (
    ADMIN_PREFIX,
    ErrorCode,
    FieldErrors,
    Invalid,
    PayloadTooLarge,
    error_body,
)

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
FLOAT_LIMIT = float(2**63)
MAX_REPORTED_FIELDS = 20

_STRING_LITERAL = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
_SUSPECT_NUMBER = re.compile("[0-9]{19}|[eE]")


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


def _without_strings(text: str) -> str:
    return _STRING_LITERAL.sub("", text)


def _brackets_deeper_than(structure: str, limit: int) -> bool:
    brackets = _NOT_BRACKET.sub("", structure)
    for _ in range(limit):
        if not brackets:
            return False
        inner = _INNERMOST.sub("", brackets)
        if inner == brackets:
            return False
        brackets = inner
    return bool(brackets)


def nested_deeper_than(text: str, limit: int) -> bool:
    """Whether the JSON text nests arrays and objects more than `limit` levels deep.

    Checked before parsing, so the parser never recurses past the limit: strings are taken
    out, then each pass removes the innermost empty brackets; `limit` passes empty any text
    that nests no deeper. Malformed bracketing is left to the parser to report.
    """
    return _brackets_deeper_than(_without_strings(text), limit)


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


def _value_problem(value: Any) -> str:
    kind = type(value)
    if kind is str:
        problem = _text_problem(value)
        return f"Must not {problem}" if problem else ""
    if kind is int and not INT_MIN <= value <= INT_MAX:
        return "Integers must be between -2^63 and 2^63-1."
    # PostgreSQL's jsonb gives 1e20 back as the integer 100000000000000000000.
    if kind is float and not (math.isfinite(value) and -FLOAT_LIMIT < value < FLOAT_LIMIT):
        return "Numbers must be finite and between -2^63 and 2^63."
    return ""


Path = tuple[Any, str | int] | None  # (parent path, key), built only as deep as it is walked


def _path_name(path: Path) -> str:
    parts: list[str] = []
    while path is not None:
        path, key = path
        parts.append(_shown(key) if isinstance(key, str) else str(key))
    return ".".join(reversed(parts)) or "__all__"


def unstorable_values(data: Any) -> FieldErrors:
    """Where the parsed JSON holds a value no store can keep, by field path (a.0.b)."""
    problems: FieldErrors = {}

    def note(path: Path, message: str) -> None:
        problems.setdefault(_path_name(path), []).append(message)

    if not isinstance(data, dict | list):
        problem = _value_problem(data)
        return {"__all__": [problem]} if problem else {}
    stack: list[tuple[dict[str, Any] | list[Any], Path]] = [(data, None)]
    while stack and len(problems) < MAX_REPORTED_FIELDS:
        container, path = stack.pop()
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, value in items:
            here = (path, key)
            if type(key) is str and _UNSTORABLE.search(key):
                note(here, f"Field names must not {_text_problem(key)}")
            if isinstance(value, dict | list):
                if value:
                    stack.append((value, here))
            else:
                problem = _value_problem(value)
                if problem:
                    note(here, problem)
    return problems


def might_hold_unstorable_values(text: str, structure: str | None = None) -> bool:
    """A quick look at the text for what unstorable_values finds: numbers of 19 digits or with
    an exponent outside strings, NUL or surrogate escapes, raw surrogates (which only an odd
    charset can decode to). It may see more than there is, never less."""
    if structure is None:
        structure = _without_strings(text)
    if _SUSPECT_NUMBER.search(structure):
        return True
    if "\\u" in text and _SUSPECT_ESCAPE.search(text):
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


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
        structure = _without_strings(text)
        if _brackets_deeper_than(structure, depth):
            raise too_deep
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise too_deep from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if might_hold_unstorable_values(text, structure):
            problems = unstorable_values(data)
            if problems:
                raise Invalid("The request is not valid; see fields.", fields=problems)
        return data


class RequestHeadLimitMiddleware:
    """Over-long URLs (414 `uri_too_long`) and over-large or too many header fields (431
    `headers_too_large`) answered in the API's error shape, before any view runs.

    gunicorn reads request lines and headers up to limits of its own (gunicorn.conf.py), set
    above API_MAX_URL_BYTES, API_MAX_HEADER_BYTES and API_MAX_HEADERS so that these answers,
    not gunicorn's HTML pages, are what clients see.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        url_bytes = len(_raw_target(request))
        if url_bytes > settings.API_MAX_URL_BYTES:
            return JsonResponse(
                error_body(
                    ErrorCode.URI_TOO_LONG,
                    f"The URL is {url_bytes} bytes long; at most {settings.API_MAX_URL_BYTES}.",
                ),
                status=414,
            )
        fields = _header_fields(request)
        if len(fields) > settings.API_MAX_HEADERS:
            return _headers_too_large(
                f"The request has {len(fields)} header fields; at most {settings.API_MAX_HEADERS}."
            )
        for name, size in fields:
            if size > settings.API_MAX_HEADER_BYTES:
                return _headers_too_large(
                    f"Header {name} is {size} bytes long; at most {settings.API_MAX_HEADER_BYTES}.",
                    name,
                )
        return self.get_response(request)


def _raw_target(request: HttpRequest) -> bytes:
    """The URL as the client sent it (gunicorn passes it on), else as Django rebuilds it."""
    environ = getattr(request, "environ", None) or {}
    raw = environ.get("RAW_URI") or request.get_full_path()
    return str(raw).encode("latin-1", errors="replace")


def _header_fields(request: HttpRequest) -> list[tuple[str, int]]:
    """(name, bytes of its line: name, ": ", value) of each header field of the request."""
    fields = []
    for key, value in request.META.items():
        if key.startswith("HTTP_"):
            name = key[5:]
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
            name = key
        else:
            continue
        name = name.replace("_", "-").title()
        fields.append((name, len(name) + 2 + len(str(value).encode("latin-1", errors="replace"))))
    return fields


def _headers_too_large(message: str, name: str = "") -> JsonResponse:
    fields = {f"headers.{name}": [message]} if name else None
    return JsonResponse(error_body(ErrorCode.HEADERS_TOO_LARGE, message, fields), status=431)


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
