"""The explorer's side-by-side diff of two branches, in headless Chromium over GET /diff."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("selenium", reason="Selenium is in the test extra")

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from branchmem.server.explorer import LocalSession
from test_ui import anchor_is, browser, keep_screenshot, served  # noqa: F401 (fixtures)


def side(driver: webdriver.Chrome, which: str) -> dict[str, tuple[str, str]]:
    """record id -> (the other side's reason, its words) as one column shows them."""
    return {
        item.get_attribute("data-record") or "": (
            item.get_attribute("data-reason") or "",
            item.find_element(By.CSS_SELECTOR, ".why").text,
        )
        for item in driver.find_elements(By.CSS_SELECTOR, f"#diff-{which} li")
    }


def test_two_branches_side_by_side_with_why_each_record_is_hidden_on_the_other(
    served: tuple[str, LocalSession],  # noqa: F811 (the fixture)
    browser: webdriver.Chrome,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    url, local = served
    wait = WebDriverWait(browser, 20)
    browser.get(url + "/ui#token=" + local.token)
    move = '#conversations li[data-tree="u1"]'
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, move))
    browser.find_element(By.CSS_SELECTOR, move).click()
    wait.until(anchor_is("a2b"))
    Select(browser.find_element(By.ID, "diff-other")).select_by_value("a2")
    browser.find_element(By.ID, "diff-run").click()
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-diff"))
    assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-diff") == "a2b a2"
    assert side(browser, "a") == {
        "f-hangzhou": (
            "off_path",
            "Hidden there: it was built from “I'm moving to Hangzhou next month.”, which is not "
            "on that branch; the branches part at “Sure! Where are you moving?”.",
        )
    }
    assert list(side(browser, "b")) == ["f-chengdu"]
    rows = browser.find_elements(By.CSS_SELECTOR, "#diff-keys tbody tr")
    assert [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in rows] == [
        ["city", "", "f-hangzhou: moving to Hangzhou", "f-chengdu: moving to Chengdu"]
    ]
    assert keep_screenshot(browser, tmp_path, "explorer-diff.png").stat().st_size > 10_000
