"""Liveness and readiness endpoints (no authentication: they reveal no data)."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from wiring.health import readiness, readiness_warnings


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "alive"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    checks = readiness()
    failing = sorted(
        name for name, result in checks.items() if not result["ok"] and result.get("required", True)
    )
    body = {
        "status": "ready" if not failing else "unavailable",
        "failing": failing,
        "warnings": readiness_warnings(checks),
        "checks": checks,
    }
    return JsonResponse(body, status=200 if not failing else 503)
