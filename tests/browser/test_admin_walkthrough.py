"""A reviewer's walk through the admin in headless Chromium, against a live server.

Screenshots go to $WALKTHROUGH_SCREENSHOTS (default var/screenshots/).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from memories.models import DeletionRequest, PromotionRequest, ReviewStatus
from memories.review.audit import Actor
from memories.review.deletion import deletion_request
from profiles.models import EndUser, Tenant, TenantMembership, UserPreference
from profiles.services import preference_set
from tests.factories import EndUserFactory, MembershipFactory, TenantFactory
from transcripts.services import EventIn, Role, events_append

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)
WIDTH = 1400
PASSWORD = "walk-through-pw"


def screenshot_dir() -> Path:
    configured = os.environ.get("WALKTHROUGH_SCREENSHOTS")
    directory = Path(configured) if configured else Path(settings.BASE_DIR) / "var" / "screenshots"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not found. The admin walkthrough drives Chromium from the "
            "Debian packages chromium and chromium-driver; ./scripts/test.sh installs them "
            "(as root: apt-get install -y --no-install-recommends chromium chromium-driver).",
            pytrace=False,
        )
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()


class Walk:
    """Small helpers over the driver: open, click, wait, and numbered screenshots."""

    def __init__(self, driver: WebDriver, base_url: str) -> None:
        self.driver, self.base_url = driver, base_url
        self.shots = screenshot_dir()
        self.count = 0

    def open(self, path: str) -> None:
        self.driver.get(self.base_url + path)

    def find(self, css: str) -> WebElement:
        return WebDriverWait(self.driver, 10).until(
            ec.presence_of_element_located((By.CSS_SELECTOR, css))
        )

    def submit(self, css: str) -> None:
        """Press a submit button and wait for the next page."""
        button = self.find(css)
        button.click()
        WebDriverWait(self.driver, 15).until(ec.staleness_of(button))

    def message(self, level: str = "success") -> str:
        return self.find(f"ul.messagelist li.{level}").text

    def shoot(self, name: str) -> Path:
        """Save the whole page (the window grows to the page's height first)."""
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(WIDTH, min(max(int(height) + 140, 800), 5000))
        self.count += 1
        path = self.shots / f"{self.count:02d}-{name}.png"
        assert self.driver.save_screenshot(str(path)), f"no screenshot saved at {path}"
        return path


def conversation(tenant: Tenant, end_user: EndUser) -> list[str]:
    lines = [
        (Role.USER, "The nightly export failed again, can you check?"),
        (Role.ASSISTANT, "Looking at it. Should I post the full log?"),
        (Role.USER, "No, keep it short: bullet points only, please."),
        (Role.ASSISTANT, "Got it, short bullet points from now on."),
        (Role.USER, "And answer in English even when the log is in German."),
    ]
    events = [
        EventIn(role=role, content=text, message_id=f"msg-{n}")
        for n, (role, text) in enumerate(lines, start=1)
    ]
    events_append(tenant=tenant, session_id="sess-1", user_id=end_user.external_id, events=events)
    return [event.message_id for event in events]


def proposal(
    tenant: Tenant, end_user: EndUser, *, key: str, value: Any, message_id: str
) -> PromotionRequest:
    return PromotionRequest.objects.create(
        request_id=f"prm_{uuid.uuid4().hex[:20]}",
        tenant=tenant,
        end_user=end_user,
        path=PromotionRequest.Path.POSTGRES,
        memory_type="preference",
        proposal={"key": key, "value": value, "target": "preference"},
        evidence={
            "stm_item_ids": [f"stm_{uuid.uuid4().hex[:12]}"],
            "message_ids": [message_id],
            "tool_call_ids": [],
            "sessions": ["sess-1"],
            "triggers": {
                "hits": "written 3× and recalled 2× (≥ 3)",
                "stable_profile": f"fills the structured key {key}",
            },
            "hits": 3,
            "recalls": 2,
            "age_hours": 26.0,
            "item": {"summary": f"prefers {value}", "memory_type": "preference"},
        },
        existing={"current": None},
        confidence=0.88,
        fingerprint=uuid.uuid4().hex,
    )


def test_a_reviewer_approves_rejects_and_approves_a_deletion(live_server, browser) -> None:
    started = time.monotonic()
    # given: a reviewer of one tenant, two pending proposals and one pending deletion
    tenant = TenantFactory(slug="acme", name="Acme")
    reviewer = get_user_model().objects.create_user(
        username="rita", password=PASSWORD, is_staff=True
    )
    MembershipFactory(user=reviewer, tenant=tenant, role=TenantMembership.Role.REVIEWER)
    alice = EndUserFactory(tenant=tenant, external_id="alice")
    ids = conversation(tenant, alice)
    style = proposal(
        tenant, alice, key="preference.answer_style", value="short bullet points", message_id=ids[2]
    )
    language = proposal(tenant, alice, key="preference.language", value="German", message_id=ids[4])
    color = preference_set(end_user=alice, key="preference.color", value="teal")
    deletion, _ = deletion_request(
        tenant=tenant,
        kind=DeletionRequest.Kind.PREFERENCE,
        target=f"pref_{color.pk}",
        actor=Actor.job("walkthrough"),
        reason="the user asked to forget it",
    )
    walk = Walk(browser, live_server.url)

    # log in
    walk.open(reverse("admin:login") + "?next=" + reverse("admin:index"))
    walk.find("#id_username").send_keys("rita")
    walk.find("#id_password").send_keys(PASSWORD)
    walk.shoot("login")
    walk.submit("#login-form input[type=submit]")
    assert "log out" in walk.find("#user-tools").text.lower()
    walk.shoot("admin-index")

    # the promotion queue, styled by the admin's own CSS
    walk.find("a[href$='/memories/promotionrequest/']").click()
    walk.find("#result_list")
    queue = browser.page_source
    assert style.request_id in queue and language.request_id in queue
    assert walk.find("#header").value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"
    walk.shoot("promotion-queue")

    # approve the first proposal from its review page
    browser.find_element(By.LINK_TEXT, style.request_id).click()
    assert "short bullet points" in walk.find("table.diff").text
    assert "bullet points only" in walk.find("#transcript-excerpt tr.evidence").text
    walk.shoot("review-approve")
    walk.submit("input[name=_approve]")
    assert f"Approved {style.request_id}" in walk.message()
    style.refresh_from_db()
    assert (style.status, style.decided_by) == (ReviewStatus.APPROVED, reviewer)
    assert (
        UserPreference.objects.get(
            end_user=alice, key="preference.answer_style", is_current=True
        ).value
        == "short bullet points"
    )
    walk.shoot("approved")

    # reject the second with a reason
    browser.find_element(By.LINK_TEXT, language.request_id).click()
    walk.find("#id_reason").send_keys("Language of the log, not a preference.")
    walk.shoot("review-reject")
    walk.submit("input[name=_reject]")
    assert f"Rejected {language.request_id}" in walk.message()
    language.refresh_from_db()
    assert (language.status, language.decision_reason) == (
        ReviewStatus.REJECTED,
        "Language of the log, not a preference.",
    )
    assert not UserPreference.objects.filter(key="preference.language").exists()
    walk.shoot("rejected")

    # approve the deletion: the erasure runs and leaves a receipt
    walk.open(reverse("admin:memories_deletionrequest_changelist"))
    browser.find_element(By.LINK_TEXT, deletion.request_id).click()
    walk.find("#id_reason").send_keys("Confirmed with the user.")
    walk.shoot("deletion-review")
    walk.submit("input[name=_approve]")
    assert f"Approved {deletion.request_id}" in walk.message()
    deletion.refresh_from_db()
    assert deletion.status == DeletionRequest.Status.DONE
    assert deletion.decided_by == reviewer and len(deletion.receipt_sha256) == 64
    assert not UserPreference.objects.filter(pk=color.pk).exists()
    walk.shoot("deletion-approved")
    walk.open(reverse("admin:memories_deletionrequest_changelist") + "?status=all")
    browser.find_element(By.LINK_TEXT, deletion.request_id).click()
    assert deletion.receipt_sha256 in walk.find(".field-receipt_sha256").text
    walk.shoot("deletion-receipt")

    assert time.monotonic() - started < 30, "the walkthrough should stay under 30 seconds"
