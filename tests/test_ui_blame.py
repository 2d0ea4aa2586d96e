"""The explorer's blame panel in a real headless Chromium: a session's deliveries, and one
traced back to its records, the messages they were built from and the branch it was given
on; erased text stays out of the page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("selenium", reason="Selenium is in the test extra")

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import test_ui  # skips this module too when there is no browser
from branchmem import Memory
from branchmem.server import create_app
from branchmem.server.explorer import LocalSession
from branchmem.testing.conformance import chengdu
from test_server_harness import LiveService
from test_ui import anchor_is, keep_screenshot

browser = test_ui.browser  # the headless Chromium fixture, shared


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, LocalSession, int]]:
    memory = Memory()
    chengdu(memory, root_meta={"title": "A move"})
    memory.set_head("a2")
    delivery = memory.context("a2", session="chat-7", cite=True).delivery
    assert delivery is not None
    memory.erase("u1")  # f-planning was built on it: erased with it
    local = LocalSession()
    live = LiveService(create_app(memory, local=local)).start()
    yield live.url, local, delivery
    live.stop()
    memory.close()


def test_the_explorer_blames_a_delivered_context(
    served: tuple[str, LocalSession, int], browser: webdriver.Chrome, tmp_path: Path
) -> None:
    url, local, delivery = served
    wait = WebDriverWait(browser, 20)
    browser.get(url + "/ui")
    browser.execute_script("sessionStorage.clear()")
    browser.get("about:blank")
    browser.get(url + "/ui#token=" + local.token)
    wait.until(anchor_is("a2"))

    browser.find_element(By.ID, "session").send_keys("chat-7")
    browser.find_element(By.CSS_SELECTOR, "#blame-form button").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#blame tbody tr"))
    given = browser.find_element(By.CSS_SELECTOR, "#deliveries .delivery.selected")
    assert given.get_attribute("data-delivery") == str(delivery)

    rows = {
        row.get_attribute("data-record"): row
        for row in browser.find_elements(By.CSS_SELECTOR, "#blame tbody tr")
    }
    assert set(rows) == {"f-chengdu", "f-planning"}
    chosen = rows["f-chengdu"].text
    assert "moving to Chengdu" in chosen and "I'm moving to Chengdu next month." in chosen
    assert "(erased)" in rows["f-planning"].text
    assert "planning a move" not in browser.page_source  # erased: neither record nor message
    assert (
        "in conversation u1, a path of 4 message(s)"
        in browser.find_element(By.ID, "blame-branch").text
    )

    browser.find_element(By.CSS_SELECTOR, "#conversations li").click()  # elsewhere first
    browser.find_element(By.CSS_SELECTOR, "#blame-branch a").click()  # back to where it was given
    wait.until(anchor_is("a2"))
    screenshot = keep_screenshot(browser, tmp_path, "explorer-blame.png")
    assert screenshot.stat().st_size > 10_000
