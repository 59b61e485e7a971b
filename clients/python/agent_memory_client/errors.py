"""The service's one error shape, `{"error": {"code", "message", "fields"}}`, as exceptions.

Branch on the exception class (chosen by `code`, then by HTTP status for a code this version
does not know) or on `.code`; never on `.message`, which is for people and may change.
"""

from __future__ import annotations

from typing import Any


class MemoryServiceError(Exception):
    """Any failed call: an error answer of the service, or no answer at all."""

    code = "error"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        fields: dict[str, list[str]] | None = None,
        retry_after: float | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        if code:
            self.code = code
        self.fields = fields or {}
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        where = f" ({self.status} {self.code})" if self.status else f" ({self.code})"
        fields = f" fields={self.fields}" if self.fields else ""
        return f"{self.message}{where}{fields}"


class TransportError(MemoryServiceError):
    """The service did not answer (connection refused or reset, timeout)."""

    code = "transport_error"


class InvalidRequest(MemoryServiceError):
    """400 `invalid` (see `fields`) or `invalid_json`: nothing changed."""

    code = "invalid"


class Unauthenticated(MemoryServiceError):
    """401: no key, or an unknown or revoked one."""

    code = "unauthenticated"


class PermissionDenied(MemoryServiceError):
    """403: the key lacks the scope this operation needs."""

    code = "permission_denied"


class NotFound(MemoryServiceError):
    """404: no such object in the key's tenant."""

    code = "not_found"


class MethodNotAllowed(MemoryServiceError):
    code = "method_not_allowed"


class Conflict(MemoryServiceError):
    """409: the request contradicts stored state (e.g. `duplicate_event_id`: the same event id
    with other content, or a session of another user)."""

    code = "conflict"


class Gone(MemoryServiceError):
    """410: the object was erased."""

    code = "gone"


class PayloadTooLarge(MemoryServiceError):
    code = "payload_too_large"


class UnsupportedMediaType(MemoryServiceError):
    code = "unsupported_media_type"


class Throttled(MemoryServiceError):
    """429: over the key's rate limit (retried by the client until its retries run out)."""

    code = "throttled"


class StoreUnavailable(MemoryServiceError):
    """503: a store did not answer; nothing was written (retried by the client)."""

    code = "store_unavailable"


class ServerError(MemoryServiceError):
    """500 (or another 5xx): a bug in the service; it has been logged there."""

    code = "server_error"


BY_CODE: dict[str, type[MemoryServiceError]] = {
    "invalid": InvalidRequest,
    "invalid_json": InvalidRequest,
    "unauthenticated": Unauthenticated,
    "permission_denied": PermissionDenied,
    "not_found": NotFound,
    "method_not_allowed": MethodNotAllowed,
    "conflict": Conflict,
    "duplicate_event_id": Conflict,
    "already_decided": Conflict,
    "user_gone": Conflict,
    "gone": Gone,
    "payload_too_large": PayloadTooLarge,
    "unsupported_media_type": UnsupportedMediaType,
    "throttled": Throttled,
    "store_unavailable": StoreUnavailable,
    "server_error": ServerError,
}
BY_STATUS: dict[int, type[MemoryServiceError]] = {
    400: InvalidRequest,
    401: Unauthenticated,
    403: PermissionDenied,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    429: Throttled,
    503: StoreUnavailable,
}


def error_for(status: int, body: Any, retry_after: float | None = None) -> MemoryServiceError:
    """The exception for an error answer: by its `code`, else by its status."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code = error["code"]
        message = str(error.get("message") or code)
        fields = error.get("fields") if isinstance(error.get("fields"), dict) else None
    else:
        code, message, fields = "", f"HTTP {status}", None
    cls = (
        BY_CODE.get(code)
        or BY_STATUS.get(status)
        or (ServerError if status >= 500 else MemoryServiceError)
    )
    return cls(
        message,
        status=status,
        code=code or cls.code,
        fields=fields,
        retry_after=retry_after,
        body=body,
    )
