"""JSON log lines that carry the request id, in the web process and in the tasks it enqueues."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from celery import signals
from django.http import HttpRequest, HttpResponse

REQUEST_ID_HEADER = "X-Request-ID"
_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

_STANDARD_ATTRS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "request_id"}


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        return True


class MilvusClientTsFilter(logging.Filter):
    """Drop pymilvus's "failed to get mvccTs from milvus server, use client-side ts instead".

    Milvus servers that do not hand out a session timestamp (milvus-lite's among them) make
    every query iterator say so; the iterator then uses the client's clock, which the strong
    consistency of drift checks and reindexing already covers, so the line says nothing new.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        return "mvccTs" not in message or "use client-side ts instead" not in message


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id and any extras."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str, ensure_ascii=False)


request_logger = logging.getLogger("memoryproject.request")


class RequestIdMiddleware:
    """Adopt the caller's X-Request-ID (if well-formed) or make one; echo it on the response.

    Also writes the one access-log line of each request, as JSON with its request id.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = incoming if _VALID_REQUEST_ID.match(incoming) else uuid.uuid4().hex
        token = _request_id.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            request_logger.info(
                "%s %s %s",
                request.method,
                request.path,
                response.status_code,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                },
            )
        finally:
            _request_id.reset(token)
        response[REQUEST_ID_HEADER] = request_id
        return response


@signals.before_task_publish.connect
def _attach_request_id(headers: dict[str, Any] | None = None, **_: Any) -> None:
    request_id = _request_id.get()
    if headers is not None and request_id:
        headers["request_id"] = request_id


_task_tokens: dict[str, Any] = {}


@signals.task_prerun.connect
def _adopt_request_id(task_id: str = "", task: Any = None, **_: Any) -> None:
    request_id = getattr(task.request, "request_id", None) if task is not None else None
    # A task run inline (eager) keeps the id of the request it runs in.
    _task_tokens[task_id] = _request_id.set(request_id or _request_id.get())


@signals.task_postrun.connect
def _forget_request_id(task_id: str = "", **_: Any) -> None:
    token = _task_tokens.pop(task_id, None)
    if token is not None:
        _request_id.reset(token)
    else:
        _request_id.set(None)
