"""A reviewer's and tenant admin's walk through the admin in headless Chromium, against a live
server, with Chinese and English data. Every page is shot at 1,366 x 900, what a reviewer sees
without scrolling, into $WALKTHROUGH_SCREENSHOTS (default var/screenshots/).
"""

from __future__ import annotations

import os
import subprocess
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
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from memories.audit.models import AuditEvent
from memories.audit.services import Actor
from memories.ltm.services import CardInput, cards_import
from memories.review.deletion import deletion_request
from memories.review.models import DeletionRequest, PromotionRequest, ReviewStatus
from memories.write.candidates import Candidate
from memories.write.services import proposals_submit
from profiles.models import EndUser, Tenant, TenantMembership, UserPreference, UserProjectRole
from profiles.services.profile_versions import preference_set
from tests.factories import EndUserFactory, MembershipFactory, ProjectFactory, TenantFactory
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
    "--window-size=1366,900",
    "--lang=en-US",
)
WIDTH, HEIGHT = 1366, 900
PASSWORD = "walk-through-pw"


def _has_cjk_font() -> bool:
    try:
        found = subprocess.run(
            ["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(found.stdout.strip())


def screenshot_dir() -> Path:
    configured = os.environ.get("WALKTHROUGH_SCREENSHOTS")
    directory = Path(configured) if configured else Path(settings.BASE_DIR) / "var" / "screenshots"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if not _has_cjk_font():
        missing.append("a CJK font (Debian package fonts-noto-cjk)")
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not found. The admin walkthrough drives Chromium from the "
            "Debian packages chromium and chromium-driver with fonts-noto-cjk; ./scripts/test.sh "
            "installs them (as root: apt-get install -y --no-install-recommends chromium "
            "chromium-driver fonts-noto-cjk).",
            pytrace=False,
        )
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(20)
    # The viewport itself is 1,366 x 900: the window is grown by what its frame takes.
    driver.set_window_size(WIDTH, HEIGHT)
    inner_w, inner_h = driver.execute_script("return [innerWidth, innerHeight]")
    driver.set_window_size(2 * WIDTH - inner_w, 2 * HEIGHT - inner_h)
    try:
        yield driver
    finally:
        driver.quit()


def replaced(element: WebElement) -> bool:
    """Whether the page the element was on is gone. Chromium reports a node of a page being
    replaced as stale or, in the moment of the swap, as not belonging to the document."""
    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return True
        raise
    return False


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
        """Press a submit button and wait for the next page. A button found while the page
        was still being replaced is found again (Chromium refuses the click before sending
        it, so nothing is pressed twice)."""
        for attempt in range(3):
            button = self.find(css)
            try:
                button.click()
                break
            except (StaleElementReferenceException, WebDriverException) as exc:
                gone = isinstance(exc, StaleElementReferenceException) or (
                    "does not belong to the document" in str(exc)
                )
                if not gone or attempt == 2:
                    raise
                time.sleep(0.3)
        WebDriverWait(self.driver, 15).until(lambda driver: replaced(button))

    def message(self, level: str = "success") -> str:
        return self.find(f"ul.messagelist li.{level}").text

    def shoot(self, name: str) -> Path:
        """Save what the 1,366 x 900 viewport shows."""
        self.count += 1
        path = self.shots / f"{self.count:02d}-{name}.png"
        assert self.driver.save_screenshot(str(path)), f"no screenshot saved at {path}"
        return path

    def scroll_to(self, css: str) -> WebElement:
        element = self.find(css)
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", element)
        WebDriverWait(self.driver, 5).until(  # the admin scrolls smoothly
            lambda driver: (
                abs(
                    driver.execute_script(
                        "return arguments[0].getBoundingClientRect().top", element
                    )
                )
                < 2
                or driver.execute_script(
                    "return window.innerHeight + window.scrollY"
                    " >= document.documentElement.scrollHeight - 1"
                )
            )
        )
        return element

    def fits_width(self) -> None:
        """Nothing on the page needs horizontal scrolling at 1,366 px."""
        width = self.driver.execute_script("return document.documentElement.scrollWidth")
        assert width <= WIDTH, f"the page is {width} px wide at {WIDTH} px"

    def above_the_fold(self, css: str) -> None:
        top = self.driver.execute_script(
            "return arguments[0].getBoundingClientRect().bottom + window.scrollY", self.find(css)
        )
        assert top <= HEIGHT, f"{css} ends at {top} px, below the first {HEIGHT} px"

    def check(self, css: str, value: str) -> None:
        Select(self.find(css)).select_by_value(value)


def conversation(tenant: Tenant, end_user: EndUser) -> list[str]:
    lines = [
        (Role.USER, "The nightly export failed again, can you check?"),
        (Role.ASSISTANT, "Looking at it. Should I post the full log?"),
        (Role.USER, "No, keep it short: bullet points only, please."),
        (Role.ASSISTANT, "Got it, short bullet points from now on."),
        (Role.USER, "以后请用中文回答，我的卡号是 4111 1111 1111 1111，别记这个。"),
        (Role.ASSISTANT, "好的，以后用中文回答。"),
        (Role.USER, "报告里的数据请用表格列出来。"),
    ]
    events = [
        EventIn(role=role, content=text, message_id=f"msg-{n}")
        for n, (role, text) in enumerate(lines, start=1)
    ]
    events_append(tenant=tenant, session_id="sess-1", user_id=end_user.external_id, events=events)
    return [event.message_id for event in events]


def proposal(
    tenant: Tenant, end_user: EndUser, *, key: str, value: Any, message_id: str, summary: str = ""
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
            "item": {
                "summary": summary or f"prefers {value}",
                "memory_type": "preference",
                "canonical_fact_key": key,
                "fact_value": value,
            },
        },
        existing={"current": None},
        confidence=0.88,
        fingerprint=uuid.uuid4().hex,
    )


def short_term_item(tenant: Tenant, end_user: EndUser) -> str:
    [written] = proposals_submit(
        tenant=tenant,
        candidates=[
            Candidate(
                user_id=end_user.external_id,
                session_id="sess-1",
                memory_type="decision",
                subtype="decision",
                summary="导出任务改为每晚 02:00 运行，失败时重试三次",
                verified=True,
            )
        ],
    )
    assert written.item_id, written
    return written.item_id


def test_a_reviewer_and_tenant_admin_walk_through_the_admin(live_server, browser) -> None:
    started = time.monotonic()
    # given: a reviewer who is also the tenant's admin, an end user with a bilingual
    # conversation, four pending proposals, a live short-term item and a pending deletion
    tenant = TenantFactory(slug="acme", name="Acme 示例")
    ProjectFactory(tenant=tenant, key="export", name="Nightly export 夜间导出")
    rita = get_user_model().objects.create_user(username="rita", password=PASSWORD, is_staff=True)
    for role in (TenantMembership.Role.REVIEWER, TenantMembership.Role.TENANT_ADMIN):
        MembershipFactory(user=rita, tenant=tenant, role=role)
    actor = f"staff:{rita.pk}:rita"
    alice = EndUserFactory(tenant=tenant, external_id="alice")
    other = EndUserFactory(tenant=tenant, external_id="bob")
    ids = conversation(tenant, alice)
    style = proposal(
        tenant, alice, key="preference.answer_style", value="short bullet points", message_id=ids[2]
    )
    chinese = proposal(
        tenant,
        alice,
        key="preference.language",
        value="中文",
        message_id=ids[4],
        summary="用户希望以后用中文回答",
    )
    bulk = [
        proposal(tenant, alice, key="preference.tone", value="friendly", message_id=ids[3]),
        proposal(
            tenant,
            alice,
            key="preference.examples",
            value="多举例子",
            message_id=ids[6],
            summary="希望多举例子",
        ),
    ]
    preference_set(end_user=alice, key="preference.format", value="要点列表")
    color = preference_set(end_user=alice, key="preference.color", value="teal")
    deletion, _ = deletion_request(
        tenant=tenant,
        kind=DeletionRequest.Kind.PREFERENCE,
        target=f"pref_{color.pk}",
        actor=Actor.job("walkthrough"),
        reason="the user asked to forget it",
    )
    item_id = short_term_item(tenant, alice)
    walk = Walk(browser, live_server.url)
    assert browser.execute_script("return [innerWidth, innerHeight]") == [WIDTH, HEIGHT]

    # log in; the index shows what waits in each queue
    walk.open(reverse("admin:login") + "?next=" + reverse("admin:index"))
    walk.find("#id_username").send_keys("rita")
    walk.find("#id_password").send_keys(PASSWORD)
    walk.shoot("login")
    walk.submit("#login-form input[type=submit]")
    assert "log out" in walk.find("#user-tools").text.lower()
    assert walk.find(".model-promotionrequest .pending-badge").text == "4 pending"
    assert walk.find(".model-deletionrequest .pending-badge").text == "1 pending"
    walk.shoot("admin-index")

    # the promotion queue opens on Pending, with counts, every column on screen
    walk.find("a[href$='/memories/promotionrequest/']").click()
    walk.find("#result_list")
    assert "Pending review (4)" in walk.find("#changelist-filter").text
    assert walk.find("#header").value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"
    walk.fits_width()
    for column in ("status", "created", "decided_by"):
        walk.above_the_fold(f"#result_list th.column-{column}")
    walk.shoot("promotion-queue")

    # edit, then approve: the edit is what is written
    browser.find_element(By.LINK_TEXT, style.request_id).click()
    walk.above_the_fold("input[name=_approve]")
    walk.above_the_fold("input[name=_reject]")
    assert "short bullet points" in walk.find("table.diff").text
    assert "bullet points only" in walk.find("#transcript-excerpt tr.evidence").text
    value = walk.find("#id_value")
    value.clear()
    value.send_keys("short bullet points, at most five")
    assert walk.find("#edited-note").is_displayed()
    walk.fits_width()
    walk.shoot("review-edit-en")
    walk.submit("input[name=_approve]")
    assert f"Approved with edits {style.request_id}" in walk.message()
    current = UserPreference.objects.get(
        end_user=alice, key="preference.answer_style", is_current=True
    )
    assert current.value == "short bullet points, at most five"
    style.refresh_from_db()
    assert (style.status, style.decided_by) == (ReviewStatus.APPROVED, rita)
    walk.shoot("approved")

    # retarget fact → card, then card → fact under another key: the diff shows that key's
    # current value
    walk.open(reverse("admin:memories_promotionrequest_change", args=[chinese.pk]))
    assert "[REDACTED:bank_card]" in walk.find("#transcript-excerpt").text
    assert "4111 1111" not in browser.page_source
    walk.shoot("review-zh")
    walk.submit("input[name=_retarget_ltm]")
    assert "a long-term card" in walk.message()
    walk.find("input[name=_merge]")
    walk.fits_width()
    walk.shoot("retargeted-to-card")
    walk.check("#id_retarget_key", "preference.format")
    walk.find("#id_retarget_value").send_keys("表格")
    walk.submit("input[name=_retarget]")
    assert "a profile fact, key preference.format" in walk.message()
    diff = walk.find("#comparison table.diff").text
    assert "要点列表" in diff and "表格" in diff
    walk.shoot("retargeted-to-key")
    chinese.refresh_from_db()
    assert (chinese.path, chinese.proposal["key"], chinese.status) == (
        PromotionRequest.Path.POSTGRES,
        "preference.format",
        ReviewStatus.PENDING,
    )

    # bulk approve two from the queue
    walk.open(reverse("admin:memories_promotionrequest_changelist"))
    for request in bulk:
        walk.find(f"input.action-select[value='{request.pk}']").click()
    walk.check("select[name=action]", "approve_selected")
    walk.shoot("bulk-approve")
    walk.submit("button[name=index]")
    assert "Approved 2 promotion requests" in walk.message()
    assert {r.status for r in PromotionRequest.objects.filter(pk__in=[b.pk for b in bulk])} == {
        ReviewStatus.APPROVED
    }
    walk.shoot("bulk-approved")

    # approve the deletion: the erasure runs and leaves a receipt, a table per store
    walk.open(reverse("admin:memories_deletionrequest_changelist"))
    browser.find_element(By.LINK_TEXT, deletion.request_id).click()
    walk.scroll_to("fieldset:has(#erasure-inventory)")
    inventory = walk.find("#erasure-inventory")
    assert "postgres" in inventory.text.lower() or "postgresql" in inventory.text.lower()
    walk.shoot("deletion-inventory")
    walk.find("#id_reason").send_keys("Confirmed with the user. 已与用户确认。")
    walk.shoot("deletion-review")
    walk.submit("input[name=_approve]")
    assert f"Approved {deletion.request_id}" in walk.message()
    deletion.refresh_from_db()
    assert deletion.status == DeletionRequest.Status.DONE and deletion.decided_by == rita
    walk.open(reverse("admin:memories_deletionrequest_change", args=[deletion.pk]))
    receipt = walk.scroll_to("#erasure-receipt")
    assert "✓ Verified erased" in receipt.text and "postgres" in receipt.text
    assert walk.find("#receipt-download").get_attribute("href").endswith("/receipt.json")
    assert deletion.receipt_sha256 in walk.find(".field-receipt_sha256").text
    walk.shoot("deletion-receipt")

    # the end-user page: add a role, which saves
    user_page = reverse("admin:profiles_enduser_change", args=[alice.pk])
    walk.open(user_page)
    walk.find("#project_roles-group .add-row a").click()
    walk.check("select[name=project_roles-0-project]", str(tenant.projects.get().pk))
    walk.find("input[name=project_roles-0-role]").send_keys("维护者 maintainer")
    walk.check("select[name=project_roles-0-permission_scope]", "read_write")
    walk.shoot("end-user-add-role")
    walk.submit("input[name=_continue]")
    assert "was changed successfully" in walk.message()
    role = UserProjectRole.objects.get(end_user=alice)
    assert (role.role, role.tenant_id) == ("维护者 maintainer", tenant.pk)

    # a form error on a hidden field is shown on a visible one
    walk.find("#project_roles-group .add-row a").click()
    walk.check("select[name=project_roles-1-project]", str(tenant.projects.get().pk))
    walk.find("input[name=project_roles-1-role]").send_keys("viewer")
    browser.execute_script(
        "document.querySelector('input[name=\"project_roles-1-end_user\"]').value = arguments[0]",
        str(other.pk),
    )
    walk.submit("input[name=_continue]")
    error = walk.find("#project_roles-group .errorlist")
    assert error.is_displayed() and "End user: The inline value did not match" in error.text
    summary = walk.find("#error-summary")  # and at the top of the page, where one looks first
    assert "End user: The inline value did not match" in summary.text
    walk.above_the_fold("#error-summary")
    assert UserProjectRole.objects.filter(end_user=alice).count() == 1
    walk.shoot("end-user-hidden-field-error")

    # the user's memory on the same page: history, live items (deleted here), cards, proposals
    walk.open(user_page)
    walk.fits_width()
    walk.shoot("end-user")
    panels = walk.scroll_to("#memory-panels")
    assert "要点列表" in panels.text and "short bullet points, at most five" in panels.text
    assert "导出任务改为每晚 02:00 运行" in walk.find("#stm-items").text
    assert chinese.request_id in walk.find("#pending-proposals").text
    assert walk.find("#export-download").get_attribute("href").endswith("/export.json")
    # the panels sit below the form: hide the form for this shot so they fill the viewport
    browser.execute_script("document.getElementById('enduser_form').style.display = 'none'")
    walk.shoot("end-user-memory")
    browser.execute_script("document.getElementById('enduser_form').style.display = ''")
    walk.submit(f"#stm-{item_id} button.stm-delete")
    assert f"Deleted short-term item {item_id}" in walk.message()
    assert item_id not in walk.find("#stm-items").text

    # a preference added by hand: the form starts empty and names no source
    walk.open(reverse("admin:profiles_userpreference_add"))
    assert walk.find("#id_value").get_attribute("value") == ""
    assert "Source" not in walk.find("#userpreference_form").text
    walk.check("#id_end_user", str(alice.pk))
    walk.find("#id_key").send_keys("preference.tone")
    walk.find("#id_value").send_keys("正式 formal")
    walk.shoot("preference-add")
    walk.submit("input[name=_save]")
    assert "was added successfully" in walk.message()

    # the audit trail lists each of these changes with its actor, time and actor on screen
    walk.open(reverse("admin:memories_auditevent_changelist") + "?actor_type__exact=staff")
    trail = walk.find("#result_list").text
    rows = [
        ("approve", "promotion_request"),
        ("retarget", "promotion_request"),
        ("update", "profile"),
        ("delete", "stm_item"),
        ("approve", "deletion_request"),
    ]
    for action, object_type in rows:
        assert f"{actor} {action} {object_type}" in trail, (action, object_type, trail)
    walk.fits_width()
    walk.above_the_fold("#result_list th.column-actor")
    walk.above_the_fold("#result_list th.column-created")
    walk.shoot("audit-trail")

    # an event says what changed: the profile edit's values before and after
    edit = AuditEvent.objects.filter(tenant=tenant, object_type="profile", action="update")
    walk.open(reverse("admin:memories_auditevent_change", args=[edit.latest("seq").pk]))
    walk.scroll_to(".field-changes_table")
    assert "before" in walk.find(".field-changes_table").text.lower()
    walk.shoot("audit-event-before-after")

    # the approved promotion keeps what was proposed beside what was approved
    walk.open(reverse("admin:memories_promotionrequest_change", args=[style.pk]))
    proposed = walk.find("body").text
    assert "short bullet points, at most five" in proposed and "As proposed" in proposed
    walk.shoot("approved-as-proposed-and-as-approved")

    # the card list names each card's end user
    cards_import(
        tenant=tenant,
        cards=[
            CardInput(memory_type="procedure", user_id="alice", summary="先在预发环境验证，再发布"),
            CardInput(memory_type="knowledge", summary="Deploys go through Terraform plan"),
        ],
    )
    walk.open(reverse("admin:memories_ltmcard_changelist"))
    walk.above_the_fold("#result_list th.column-card_user")
    assert "alice" in walk.find("#result_list").text
    walk.shoot("card-list-end-user")

    # "Delete" on an end user offers an erasure request instead
    walk.open(reverse("admin:profiles_enduser_delete", args=[alice.pk]))
    assert "erasure" in walk.find("#content").text.lower()
    walk.shoot("end-user-delete-offers-erasure")

    assert time.monotonic() - started < 90, "the walkthrough should stay under 90 seconds"
