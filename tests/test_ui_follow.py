"""The explorer's blame and compare panels follow what the page shows, in headless Chromium:
a new anchor re-runs the comparison for it and marks the deliveries given there; another
namespace reloads the session's deliveries there and compares there, and nothing of the
namespace left stays on the page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("selenium", reason="Selenium is in the test extra")

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

import test_ui  # skips this module too when there is no browser
from branchmem import Memory
from branchmem.server import create_app
from branchmem.server.explorer import LocalSession
from branchmem.testing.conformance import chengdu
from test_server_harness import LiveService
from test_ui import anchor_is, open_fresh

browser = test_ui.browser  # the headless Chromium fixture, shared


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, LocalSession, dict[str, int]]]:
    memory = Memory()
    chengdu(memory, root_meta={"title": "A move"})  # namespace "default"
    memory.set_head("a2b")
    seqs = {"at a2": memory.context("a2", session="chat-7", cite=True).delivery or 0}
    seqs["at a2b"] = memory.context("a2b", session="chat-7", cite=True).delivery or 0
    work = {"namespace": "work"}
    memory.add_event("w1", role="user", content="Let's plan the launch.", meta={"title": "Launch"},
                     **work)  # fmt: skip
    memory.add_event("w2", "w1", content="The launch is on Monday.", **work)
    memory.add_record("f-monday", sources=["w2"], content="launch on Monday", key="day", **work)
    memory.add_event("w2b", "w1", content="The launch is on Friday.", **work)
    memory.add_record("f-friday", sources=["w2b"], content="launch on Friday", key="day", **work)
    memory.set_head("w2", **work)
    seqs["work"] = memory.context("w2", session="chat-7", cite=True, **work).delivery or 0
    memory.add_event("q1", role="user", content="Nothing was given here.", namespace="quiet")
    local = LocalSession()
    live = LiveService(create_app(memory, local=local)).start()
    yield live.url, local, seqs
    live.stop()
    memory.close()


def body(driver: webdriver.Chrome, name: str) -> str:
    return driver.find_element(By.TAG_NAME, "body").get_attribute(f"data-{name}") or ""


def has(name: str, value: str) -> object:
    return lambda d: body(d, name) == value


def diff_records(driver: webdriver.Chrome) -> set[str]:
    return {
        item.get_attribute("data-record") or ""
        for item in driver.find_elements(By.CSS_SELECTOR, "#diff-a li, #diff-b li")
    }


def blamed_records(driver: webdriver.Chrome) -> set[str]:
    rows = driver.find_elements(By.CSS_SELECTOR, "#blame tbody tr")
    return {row.get_attribute("data-record") or "" for row in rows}


def delivered(driver: webdriver.Chrome) -> dict[str, bool]:
    """delivery seq -> whether it is marked as given at the anchor."""
    return {
        item.get_attribute("data-delivery") or "": "at-anchor"
        in (item.get_attribute("class") or "")
        for item in driver.find_elements(By.CSS_SELECTOR, "#deliveries .delivery")
    }


def test_the_panels_follow_a_new_anchor_and_another_namespace(
    served: tuple[str, LocalSession, dict[str, int]], browser: webdriver.Chrome
) -> None:
    url, local, seqs = served
    wait = WebDriverWait(browser, 20)
    open_fresh(browser, url, local.token, "default")
    wait.until(anchor_is("a2b"))

    # a session's deliveries, the latest opened; the comparison of the head against a2
    browser.find_element(By.ID, "session").send_keys("chat-7")
    browser.find_element(By.CSS_SELECTOR, "#blame-form button").click()
    opened = f'#deliveries .delivery.selected[data-delivery="{seqs["at a2b"]}"]'
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, opened))
    Select(browser.find_element(By.ID, "diff-other")).select_by_value("a2")
    browser.find_element(By.ID, "diff-run").click()
    wait.until(has("diff", "a2b a2"))

    # a new anchor: the comparison is run again for it, the deliveries given there marked
    browser.find_element(By.CSS_SELECTOR, '#tree .event[data-event="a2"]').click()
    wait.until(anchor_is("a2"))
    wait.until(has("diff", "a2 a2b"))  # a2 against itself says nothing: against the head
    assert diff_records(browser) == {"f-chengdu", "f-hangzhou"}
    assert delivered(browser) == {str(seqs["at a2"]): True, str(seqs["at a2b"]): False}
    assert body(browser, "blame") == f"default chat-7 {seqs['at a2b']}"  # still the one opened
    browser.find_element(By.CSS_SELECTOR, '#tree .event[data-event="u2b"]').click()
    wait.until(anchor_is("u2b"))
    wait.until(has("diff", "u2b a2b"))
    assert diff_records(browser) == set()
    assert "same records" in browser.find_element(By.ID, "diff-note").text
    assert not any(delivered(browser).values())

    # another namespace: its chat-7, its comparison; nothing of "default" stays
    Select(browser.find_element(By.ID, "namespace")).select_by_value("work")
    wait.until(anchor_is("w2"))
    wait.until(has("blame", f"work chat-7 {seqs['work']}"))
    assert delivered(browser) == {str(seqs["work"]): True}
    assert blamed_records(browser) == {"f-monday"}
    wait.until(has("diff", "w2 w2b"))
    assert diff_records(browser) == {"f-monday", "f-friday"}
    page = browser.find_element(By.TAG_NAME, "main").text
    assert "Chengdu" not in page and "Hangzhou" not in page, page

    # a namespace where the session was given nothing says so, and shows none of work's
    Select(browser.find_element(By.ID, "namespace")).select_by_value("quiet")
    wait.until(anchor_is("q1"))
    wait.until(has("blame", "quiet chat-7 none"))
    assert delivered(browser) == {} and blamed_records(browser) == set()
    said = browser.find_element(By.ID, "blame-branch").text
    assert "was given nothing in namespace quiet" in said, said
    assert "Monday" not in browser.find_element(By.TAG_NAME, "main").text
