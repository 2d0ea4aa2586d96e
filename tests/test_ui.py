"""The /ui explorer in a real headless Chromium: a different anchor, a different visible set."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

pytest.importorskip("selenium", reason="Selenium is in the test extra")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
    MISSING = "no Chromium: install the Debian packages 'chromium chromium-driver'"
    if os.environ.get("BRANCHMEM_REQUIRE_BROWSER", "") not in ("", "0"):  # CI: never skip
        pytest.fail(MISSING + " (BRANCHMEM_REQUIRE_BROWSER=1)", pytrace=False)
    pytest.skip(MISSING + " to run the UI test", allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service as ChromeService  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from branchmem import Memory  # noqa: E402
from branchmem.server import KeyRing, create_app  # noqa: E402
from conformance import chengdu  # noqa: E402
from test_server_harness import LiveService  # noqa: E402


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, str]]:
    memory = Memory()
    chengdu(memory)
    memory.set_head("a2b")
    api_key, _ = KeyRing(memory).create("ui", ["default"])
    live = LiveService(create_app(memory)).start()
    yield live.url, api_key
    live.stop()
    memory.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=ChromeService(CHROMEDRIVER))
    yield driver
    driver.quit()


def shown(driver: webdriver.Chrome) -> dict[str, tuple[str, str]]:
    """record id -> (visible?, reason) as the page shows them."""
    return {
        row.get_attribute("data-record") or "": (
            row.get_attribute("data-visible") or "",
            row.get_attribute("data-reason") or "",
        )
        for row in driver.find_elements(By.CSS_SELECTOR, "#records tbody tr")
    }


def test_clicking_another_anchor_changes_the_visible_set(
    served: tuple[str, str], browser: webdriver.Chrome
) -> None:
    url, api_key = served
    wait = WebDriverWait(browser, 20)
    browser.get(url + "/ui")
    browser.find_element(By.ID, "api-key").send_keys(api_key)
    browser.find_element(By.ID, "load").click()
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-anchor") == "a2b")
    at_head = shown(browser)
    assert at_head["f-hangzhou"] == ("true", "visible")
    assert at_head["f-chengdu"] == ("false", "off_path")
    path = [
        e.get_attribute("data-event")
        for e in browser.find_elements(By.CSS_SELECTOR, "#tree .event.on-path")
    ]
    assert path == ["u1", "a1", "u2b", "a2b"]

    browser.find_element(By.CSS_SELECTOR, '#tree .event[data-event="a2"]').click()
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-anchor") == "a2")
    at_a2 = shown(browser)
    assert at_a2["f-chengdu"] == ("true", "visible")
    assert at_a2["f-hangzhou"] == ("false", "off_path")
    assert at_a2["f-planning"] == at_head["f-planning"] == ("true", "visible")
    highlighted = browser.find_elements(By.CSS_SELECTOR, "#tree .event.on-path")
    assert [e.get_attribute("data-event") for e in highlighted] == ["u1", "a1", "u2", "a2"]


def test_a_wrong_key_is_reported_on_the_page(
    served: tuple[str, str], browser: webdriver.Chrome
) -> None:
    url, _ = served
    browser.get(url + "/ui")
    browser.execute_script("sessionStorage.clear()")
    browser.get(url + "/ui")
    browser.find_element(By.ID, "api-key").send_keys("bm_nobody_secret")
    browser.find_element(By.ID, "load").click()
    WebDriverWait(browser, 20).until(
        lambda d: "unauthorized" in d.find_element(By.ID, "status").text
    )
