"""Swagger UI and Redoc render in headless Chromium with every outside host unreachable.

Screenshots go beside the admin walkthrough's ($WALKTHROUGH_SCREENSHOTS, default var/screenshots/).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser.test_admin_walkthrough import CHROMEDRIVER, CHROMIUM, FLAGS, screenshot_dir

pytestmark = pytest.mark.django_db


@pytest.fixture
def offline_browser(tmp_path: Path) -> Iterator[WebDriver]:
    """Chromium that resolves no host but localhost (the live server): a page needing the
    internet would stay blank."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail("chromium and chromium-driver are needed; ./scripts/test.sh installs them")
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost")
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.mark.parametrize(
    ("page", "rendered", "name"),
    [
        ("/api/docs/", ".swagger-ui .opblock-summary-path", "api-docs-swagger"),
        ("/api/redoc/", "[data-section-id^='operation']", "api-docs-redoc"),
    ],
)
def test_api_docs_render_offline(
    live_server, offline_browser: WebDriver, page: str, rendered: str, name: str
) -> None:
    offline_browser.get(live_server.url + page)
    WebDriverWait(offline_browser, 30).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, rendered))
    )
    assert "/v1/recall" in offline_browser.find_element(By.TAG_NAME, "body").text
    path = screenshot_dir() / f"{name}.png"
    assert offline_browser.save_screenshot(str(path)), path
