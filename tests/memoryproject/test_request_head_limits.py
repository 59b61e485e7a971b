"""Over-long URLs and headers are answered 414 / 431 by Django in the API's error shape; the
limits gunicorn is started with lie above them, so gunicorn's HTML pages are never the answer."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from transcripts.models import Session

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
EVENTS = reverse("transcripts:events", kwargs={"session_id": "s_1"})
APPEND = {"user_id": "u_1", "events": [{"role": "user", "content": "hello"}]}


def error_of(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == code and error["message"]
    return error


def test_an_over_long_url_is_414_in_the_error_shape_and_writes_nothing(owner) -> None:
    limit = django_settings.API_MAX_URL_BYTES
    padding = "a" * (limit - len(EVENTS) - len("?pad="))
    assert len(f"{EVENTS}?pad={padding}") == limit
    # At the limit the request reaches its view (which refuses the unknown parameter)
    error_of(owner.get(f"{EVENTS}?pad={padding}"), 400, "invalid")

    over = owner.post(f"{EVENTS}?pad={padding}a", APPEND, format="json")

    error = error_of(over, 414, "uri_too_long")
    assert str(limit) in error["message"]
    assert not Session.objects.exists()


def test_an_over_large_header_is_431_naming_it(owner) -> None:
    size = django_settings.API_MAX_HEADER_BYTES
    value = "x" * (size - len("X-Trace: "))
    assert owner.get(EVENTS, HTTP_X_TRACE=value).status_code == 404  # at the limit: read

    response = owner.post(EVENTS, APPEND, format="json", HTTP_X_TRACE=value + "x")

    error = error_of(response, 431, "headers_too_large")
    assert list(error["fields"]) == ["headers.X-Trace"]
    assert not Session.objects.exists()


def test_too_many_header_fields_are_431(owner) -> None:
    extra = {f"HTTP_X_FIELD_{n}": "1" for n in range(django_settings.API_MAX_HEADERS)}

    response = owner.post(EVENTS, APPEND, format="json", **extra)

    error_of(response, 431, "headers_too_large")
    assert not Session.objects.exists()


def test_pages_outside_the_api_answer_json_too(client) -> None:
    response = client.get("/admin/login/", {"next": "a" * django_settings.API_MAX_URL_BYTES})
    error_of(response, 414, "uri_too_long")
    error_of(client.get("/readyz", HTTP_COOKIE="c" * 9000), 431, "headers_too_large")


@pytest.mark.parametrize(
    "env",
    [{}, {"API_MAX_URL_BYTES": "8000", "API_MAX_HEADER_BYTES": "32768", "API_MAX_HEADERS": "300"}],
)
def test_gunicorns_limits_lie_above_the_services(env, monkeypatch) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    url = int(env.get("API_MAX_URL_BYTES", django_settings.API_MAX_URL_BYTES))
    header = int(env.get("API_MAX_HEADER_BYTES", django_settings.API_MAX_HEADER_BYTES))
    headers = int(env.get("API_MAX_HEADERS", django_settings.API_MAX_HEADERS))

    # The longest request line Django refuses: the longest method, the URL one byte over
    assert conf["limit_request_line"] >= len("OPTIONS ") + url + 1 + len(" HTTP/1.1")
    assert conf["limit_request_line"] <= 8190  # above it gunicorn takes 8190 anyway
    assert conf["limit_request_field_size"] > header
    assert conf["limit_request_fields"] > headers
    assert "--config gunicorn.conf.py" in (ROOT / "scripts" / "run.sh").read_text()
