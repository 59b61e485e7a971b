"""Domain errors and the one error shape every 4xx and 5xx answer uses.

{"error": {"code": "invalid", "message": "...", "fields": {"events.3.role": ["..."]}}}
Clients branch on `code`, never on `message`.
"""

from __future__ import annotations

import logging
import sys
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response

logger = logging.getLogger(__name__)

FieldErrors = dict[str, list[str]]


class ErrorCode(StrEnum):
    """Every `code` an error answer carries (the OpenAPI schema lists them); clients branch on
    these, never on the message."""

    # 400
    INVALID = "invalid"
    INVALID_JSON = "invalid_json"
    # 401, 403, 404, 405, 406
    UNAUTHENTICATED = "unauthenticated"
    PERMISSION_DENIED = "permission_denied"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    NOT_ACCEPTABLE = "not_acceptable"
    # 409: the request contradicts stored state
    CONFLICT = "conflict"
    ALREADY_DECIDED = "already_decided"  # a review request was approved or rejected already
    DUPLICATE = "duplicate"  # another pending proposal promotes the same thing
    DUPLICATE_EVENT_ID = "duplicate_event_id"  # a client id reused with different content
    USER_GONE = "user_gone"  # the end user of a proposal no longer exists
    REPEATS_CARD = "repeats_card"  # approving would make a second card of a live card's fact
    # 410, 413, 414, 415, 429, 431
    GONE = "gone"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    URI_TOO_LONG = "uri_too_long"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    THROTTLED = "throttled"
    HEADERS_TOO_LARGE = "headers_too_large"
    # 5xx
    STORE_UNAVAILABLE = "store_unavailable"
    SCHEMA_MISMATCH = "schema_mismatch"  # a Milvus collection of another layout
    EMBEDDING_MISMATCH = "embedding_mismatch"  # a Milvus collection of another embedder
    SERVER_ERROR = "server_error"
    ERROR = "error"  # any other framework error


class DomainError(Exception):
    """An expected failure with a stable machine-readable code and an HTTP status."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    code: ErrorCode = ErrorCode.INVALID

    def __init__(
        self, message: str, *, fields: FieldErrors | None = None, code: ErrorCode | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields
        if code is not None:
            self.code = ErrorCode(code)


class Invalid(DomainError):
    pass


class NotFound(DomainError):
    status_code = status.HTTP_404_NOT_FOUND
    code = ErrorCode.NOT_FOUND


class Conflict(DomainError):
    status_code = status.HTTP_409_CONFLICT
    code = ErrorCode.CONFLICT


class Gone(DomainError):
    status_code = status.HTTP_410_GONE
    code = ErrorCode.GONE


class PayloadTooLarge(DomainError):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    code = ErrorCode.PAYLOAD_TOO_LARGE


class StoreUnavailable(DomainError):
    """An outside store (Redis, Elasticsearch, Milvus, object storage) did not answer."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    code = ErrorCode.STORE_UNAVAILABLE


# PostgreSQL could not be reached or dropped the connection: an outage, worth retrying.
# (IntegrityError and DataError are bugs or bad input, and stay errors.)
DATABASE_OUTAGES = (OperationalError, InterfaceError)
DATABASE_UNAVAILABLE_MESSAGE = "PostgreSQL is unavailable; retry later."


def retry_after_headers() -> dict[str, str]:
    return {"Retry-After": str(settings.RETRY_AFTER_SECONDS)}


def store_unavailable_body(message: str = DATABASE_UNAVAILABLE_MESSAGE) -> dict[str, Any]:
    return error_body(StoreUnavailable.code, message)


def error_body(code: ErrorCode, message: str, fields: FieldErrors | None = None) -> dict[str, Any]:
    return {"error": {"code": ErrorCode(code).value, "message": message, "fields": fields or {}}}


def flatten_field_errors(detail: Any, prefix: str = "") -> FieldErrors:
    """Turn DRF's nested error detail into {"events.3.role": ["..."]}."""
    flat: FieldErrors = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = prefix if key == "non_field_errors" else f"{prefix}.{key}" if prefix else key
            flat.update(flatten_field_errors(value, str(name)))
    elif isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            flat.setdefault(prefix or "__all__", []).extend(str(item) for item in detail)
        else:
            for index, item in enumerate(detail):
                if item:
                    flat.update(
                        flatten_field_errors(item, f"{prefix}.{index}" if prefix else str(index))
                    )
    else:
        flat.setdefault(prefix or "__all__", []).append(str(detail))
    return flat


_DRF_CODES = {
    exceptions.ParseError: ErrorCode.INVALID_JSON,
    exceptions.AuthenticationFailed: ErrorCode.UNAUTHENTICATED,
    exceptions.NotAuthenticated: ErrorCode.UNAUTHENTICATED,
    exceptions.PermissionDenied: ErrorCode.PERMISSION_DENIED,
    exceptions.NotFound: ErrorCode.NOT_FOUND,
    exceptions.MethodNotAllowed: ErrorCode.METHOD_NOT_ALLOWED,
    exceptions.NotAcceptable: ErrorCode.NOT_ACCEPTABLE,
    exceptions.UnsupportedMediaType: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    exceptions.Throttled: ErrorCode.THROTTLED,
}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF exception handler rendering domain and framework errors in the one shape."""
    if isinstance(exc, DomainError):
        headers = retry_after_headers() if isinstance(exc, StoreUnavailable) else None
        return Response(
            error_body(exc.code, exc.message, exc.fields), status=exc.status_code, headers=headers
        )
    if isinstance(exc, DATABASE_OUTAGES):
        logger.warning("PostgreSQL unavailable: %s", exc)
        return Response(
            store_unavailable_body(),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers=retry_after_headers(),
        )
    if isinstance(exc, SuspiciousOperation):  # Django's own guards on the request it was sent
        status_code, body = _unreadable_request(exc)
        return Response(body, status=status_code)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.ValidationError):
        fields = flatten_field_errors(exc.detail)
        return Response(
            error_body(ErrorCode.INVALID, "The request is not valid; see fields.", fields),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, exceptions.APIException):
        code = next((c for cls, c in _DRF_CODES.items() if isinstance(exc, cls)), ErrorCode.ERROR)
        headers = {}
        wait = getattr(exc, "wait", None)
        if isinstance(exc, exceptions.Throttled) and wait is not None:
            headers["Retry-After"] = str(int(wait) + 1)
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        return Response(error_body(code, detail), status=exc.status_code, headers=headers)
    return None


ADMIN_PREFIX = "/admin/"


def server_error(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """handler500: the API's error shape (503 with Retry-After when PostgreSQL is down, as in
    the API views); the admin keeps Django's HTML page."""
    if request.path.startswith(ADMIN_PREFIX):
        return defaults.server_error(request)
    failure = sys.exc_info()[1]  # Django calls this handler while handling the exception
    if isinstance(failure, (*DATABASE_OUTAGES, StoreUnavailable)):
        message = failure.message if isinstance(failure, StoreUnavailable) else None
        response = JsonResponse(
            store_unavailable_body(message or DATABASE_UNAVAILABLE_MESSAGE), status=503
        )
        for name, value in retry_after_headers().items():
            response[name] = value
        return response
    return JsonResponse(
        error_body(ErrorCode.SERVER_ERROR, "An unexpected error happened; it has been logged."),
        status=500,
    )


def _unreadable_request(exc: Exception) -> tuple[int, dict[str, Any]]:
    """A request Django refused to read: too large a body (413), anything else 400."""
    if isinstance(exc, RequestDataTooBig):
        return status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, error_body(
            PayloadTooLarge.code,
            f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.",
        )
    return status.HTTP_400_BAD_REQUEST, error_body(
        ErrorCode.INVALID, f"The request was refused: {exc}"
    )


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: the API's error shape (413 for too large a body); the admin keeps HTML."""
    if request.path.startswith(ADMIN_PREFIX):
        return defaults.bad_request(request, exception or SuspiciousOperation())
    status_code, body = _unreadable_request(exception or SuspiciousOperation("bad request"))
    return JsonResponse(body, status=status_code)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: the API's error shape; the admin keeps Django's HTML page."""
    if request.path.startswith(ADMIN_PREFIX):
        return defaults.page_not_found(request, exception or Http404())
    return JsonResponse(error_body(ErrorCode.NOT_FOUND, "No such resource."), status=404)
