"""Admin login throttling per username and per client address, counted in the real Redis."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import pytest
from django.test import Client
from django.urls import reverse

from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection
from tests.factories import StaffUserFactory

LOGIN = reverse("admin:login")
INVALID = "Please enter the correct username and password"
THROTTLED = "Too many failed attempts; try again in"


def login_keys() -> list[bytes]:
    pattern = keys.admin_login_failures(by="*", digest="*")
    return list(redis_connection().scan_iter(match=pattern, count=1000))


@pytest.fixture(autouse=True)
def no_counts() -> Iterator[None]:
    """Counters live in Redis, not in the test database: start and end each test without."""
    for key in login_keys():
        redis_connection().delete(key)
    yield
    for key in login_keys():
        redis_connection().delete(key)


@pytest.fixture
def staff(db: None) -> None:
    for name in ("alice", "bob"):
        StaffUserFactory(username=name)  # password "pw"


def attempt(address: str, username: str, password: str) -> tuple[int, str, bool]:
    """(status, page text, logged in?) of one login from `address`."""
    client = Client(REMOTE_ADDR=address)
    response = client.post(LOGIN, {"username": username, "password": password, "next": "/admin/"})
    return response.status_code, response.content.decode(), "_auth_user_id" in client.session


@pytest.mark.django_db
def test_fifty_wrong_passwords_then_the_right_one_is_refused(staff) -> None:
    pages = [attempt("10.0.0.1", "alice", f"guess-{n}")[1] for n in range(50)]
    status, page, logged_in = attempt("10.0.0.1", "alice", "pw")

    assert all(INVALID in p for p in pages[:4])
    assert all("Too many failed attempts; try again in 15 minutes." in p for p in pages[4:])
    assert status == 200 and not logged_in
    assert "Too many failed attempts; try again in 15 minutes." in page
    # The same username is refused from any address; another one, elsewhere, logs in.
    assert THROTTLED in attempt("10.0.0.2", "alice", "pw")[1]
    status, _, logged_in = attempt("10.0.0.2", "bob", "pw")
    assert status == 302 and logged_in
    # Redis holds digests, never the username or the address.
    assert login_keys() and not any(b"alice" in k or b"10.0.0" in k for k in login_keys())


@pytest.mark.django_db
def test_one_address_trying_many_usernames_is_refused(staff, settings) -> None:
    settings.ADMIN_LOGIN_FAILURES_PER_IP = 20
    for n in range(20):
        page = attempt("10.0.0.9", f"user{n}", "guess")[1]
        assert INVALID in page if n < 19 else THROTTLED in page

    status, page, logged_in = attempt("10.0.0.9", "bob", "pw")
    assert THROTTLED in page and not logged_in
    assert attempt("10.0.0.10", "bob", "pw")[2]  # another address is not affected


@pytest.mark.django_db
def test_a_successful_login_clears_the_usernames_count(staff) -> None:
    for _ in range(2):
        for n in range(4):
            assert INVALID in attempt("10.0.0.3", "alice", f"guess-{n}")[1]
        assert attempt("10.0.0.3", "alice", "pw")[2]  # 8 failures in all, but never 5 in a row


@pytest.mark.django_db
def test_the_count_expires_with_its_window(staff, settings) -> None:
    settings.ADMIN_LOGIN_WINDOW_SECONDS = 1
    for n in range(5):
        attempt("10.0.0.4", "alice", f"guess-{n}")
    status, page, logged_in = attempt("10.0.0.4", "alice", "pw")
    assert "Too many failed attempts; try again in 1 minute." in page and not logged_in

    time.sleep(1.2)

    status, _, logged_in = attempt("10.0.0.4", "alice", "pw")
    assert status == 302 and logged_in
    assert login_keys() == []  # expired, and the username's count cleared by the success


@pytest.mark.django_db
def test_logins_are_not_throttled_without_redis(staff, settings, caplog) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.CACHES = {
        "default": {**settings.CACHES["default"], "LOCATION": f"redis://127.0.0.1:{port}/0"}
    }

    with caplog.at_level(logging.WARNING, logger="profiles.login_throttle"):
        pages = [attempt("10.0.0.5", "alice", f"guess-{n}")[1] for n in range(8)]
        status, _, logged_in = attempt("10.0.0.5", "alice", "pw")

    assert all(INVALID in p for p in pages)
    assert status == 302 and logged_in
    assert "admin login not throttled: Redis unavailable" in caplog.text
