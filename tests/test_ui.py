"""The /ui explorer in a real headless Chromium, opened as `branchmem serve` prints it.

The page is opened from the link with the local session's token (nobody types a key); it
lists conversations by title, shows only the chosen conversation's records with their
source messages marked on the tree, says in words why a record is hidden, and a different
anchor gives a different visible set. A screenshot is kept as a test artifact.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

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
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from branchmem import Memory  # noqa: E402
from branchmem.server import create_app  # noqa: E402
from branchmem.server.explorer import LocalSession  # noqa: E402
from branchmem.testing.conformance import chengdu  # noqa: E402
from test_server_harness import LiveService  # noqa: E402

KYOTO_MESSAGE = (
    "We are planning two weeks in Kyoto next spring, mostly temples and gardens, "
    "with a day trip to Nara and maybe one to Osaka for the food; my partner does not "
    "eat fish, I am vegetarian, and we would like quiet places to stay near a station."
)


def move(mem: Memory) -> None:
    """The conformance story, with the title an importer would have put on the root."""
    chengdu(mem, root_meta={"title": "A move"})


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, LocalSession]]:
    memory = Memory()
    move(memory)
    memory.set_head("a2b")
    memory.add_event("k1", role="user", content=KYOTO_MESSAGE, meta={"title": "Trip to Kyoto"})
    memory.add_event("k2", "k1", role="assistant", content="Lovely: spring is busy, book early.")
    memory.add_record("f-kyoto", sources=["k1"], content="trip to Kyoto in spring")
    memory.add_record("f-legacy", sources=None, content="an old note with no sources")
    local = LocalSession()
    live = LiveService(create_app(memory, local=local)).start()
    yield live.url, local
    live.stop()
    memory.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-extensions", "--no-first-run",
        "--window-size=1400,900",
    ):  # fmt: skip
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


def why(driver: webdriver.Chrome, record: str) -> str:
    return driver.find_element(By.CSS_SELECTOR, f'#records tr[data-record="{record}"] .why').text


def marks(driver: webdriver.Chrome, event: str) -> list[str]:
    found = driver.find_elements(By.CSS_SELECTOR, f'#tree .event[data-event="{event}"] > .mark')
    return [m.text for m in found]


def anchor_is(anchor: str) -> object:
    return lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-anchor") == anchor


def keep_screenshot(driver: webdriver.Chrome, folder: Path, name: str) -> Path:
    """Save a screenshot under the test's tmp dir and, with BRANCHMEM_ARTIFACTS, there too."""
    path = folder / name
    assert driver.save_screenshot(str(path))
    artifacts = os.environ.get("BRANCHMEM_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(artifacts) / name)
    return path


def test_the_served_link_opens_the_explorer_and_another_branch_changes_the_records(
    served: tuple[str, LocalSession], browser: webdriver.Chrome, tmp_path: Path
) -> None:
    url, local = served
    wait = WebDriverWait(browser, 20)
    browser.get(url + "/ui")
    browser.execute_script("sessionStorage.clear()")
    browser.get("about:blank")  # a fresh page load, as from a terminal's link
    browser.get(url + "/ui#token=" + local.token)  # the link `branchmem serve` prints

    # no key typed: the conversations are listed by title, latest activity first
    wait.until(anchor_is("k2"))
    titles = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#conversations .title")]
    assert titles == ["Trip to Kyoto", "A move"]
    assert "token" not in browser.current_url  # taken out of the address bar

    # a long message is clipped, with an expander
    k1 = browser.find_element(By.CSS_SELECTOR, '#tree .event[data-event="k1"]')
    assert KYOTO_MESSAGE not in k1.text and "…" in k1.text
    k1.find_element(By.CSS_SELECTOR, "button.more").click()
    assert KYOTO_MESSAGE in k1.text
    assert shown(browser) == {"f-kyoto": ("true", "visible")}  # this conversation's only

    # the move conversation, at its head a2b
    browser.find_element(By.CSS_SELECTOR, '#conversations li[data-tree="u1"]').click()
    wait.until(anchor_is("a2b"))
    at_head = shown(browser)
    assert set(at_head) == {"f-chengdu", "f-hangzhou", "f-planning"}  # no f-kyoto, f-legacy
    assert at_head["f-hangzhou"] == ("true", "visible")
    assert at_head["f-chengdu"] == ("false", "off_path")
    assert why(browser, "f-chengdu") == (  # messages named by their words, ids on hover
        "Hidden: it was built from “I'm moving to Chengdu next month.”, which is on another "
        "branch; the branches part at “Sure! Where are you moving?”."
    )
    named = browser.find_elements(By.CSS_SELECTOR, '#records tr[data-record="f-chengdu"] .why a')
    assert [(a.get_attribute("title"), a.get_attribute("data-event")) for a in named] == [
        ("u2", "u2"), ("a1", "a1"),
    ]  # fmt: skip
    assert (marks(browser, "u2"), marks(browser, "u2b"), marks(browser, "u1")) == (
        ["f-chengdu"], ["f-hangzhou"], ["f-planning"],
    )  # fmt: skip
    path = [
        e.get_attribute("data-event")
        for e in browser.find_elements(By.CSS_SELECTOR, "#tree .event.on-path")
    ]
    assert path == ["u1", "a1", "u2b", "a2b"]

    # click the other branch
    browser.find_element(By.CSS_SELECTOR, '#tree .event[data-event="a2"]').click()
    wait.until(anchor_is("a2"))
    at_a2 = shown(browser)
    assert at_a2["f-chengdu"] == ("true", "visible")
    assert at_a2["f-hangzhou"] == ("false", "off_path")
    assert at_a2["f-planning"] == at_head["f-planning"] == ("true", "visible")
    assert why(browser, "f-hangzhou").startswith(
        "Hidden: it was built from “I'm moving to Hangzhou next month.”, which is on"
    )
    assert why(browser, "f-chengdu").startswith("Shown: every message it was built from")
    highlighted = browser.find_elements(By.CSS_SELECTOR, "#tree .event.on-path")
    assert [e.get_attribute("data-event") for e in highlighted] == ["u1", "a1", "u2", "a2"]

    # ids are links: a record id marks its sources on the tree, a source id finds the message
    link = '#records a.record-link[data-record="f-hangzhou"]'
    browser.find_element(By.CSS_SELECTOR, link).click()
    focused = browser.find_elements(By.CSS_SELECTOR, "#tree .event.focus")
    assert [e.get_attribute("data-event") for e in focused] == ["u2b"]
    row = browser.find_element(By.CSS_SELECTOR, '#records tr[data-record="f-chengdu"]')
    row.find_element(By.CSS_SELECTOR, '.sources a[data-event="u2"]').click()
    flashed = browser.find_element(By.CSS_SELECTOR, '#tree .event[data-event="u2"]')
    assert "flash" in (flashed.get_attribute("class") or "")

    screenshot = keep_screenshot(browser, tmp_path, "explorer-branch-a2.png")
    assert screenshot.stat().st_size > 10_000


def test_without_a_valid_token_the_page_says_how_to_get_one(
    served: tuple[str, LocalSession], browser: webdriver.Chrome
) -> None:
    url, _ = served
    browser.get(url + "/ui")
    browser.execute_script("sessionStorage.clear()")
    browser.get("about:blank")
    browser.get(url + "/ui#token=not-this-servers-token")
    status = WebDriverWait(browser, 20).until(
        lambda d: d.find_element(By.ID, "status").text or None
    )
    assert "unauthorized" in status and "branchmem serve" in status
    assert browser.find_elements(By.CSS_SELECTOR, "#conversations li") == []


@pytest.fixture(scope="module")
def imported_as_alice() -> Iterator[tuple[str, LocalSession]]:
    """A store whose data was imported with ``-n alice``: nothing is in ``default``."""
    memory = Memory()
    memory.add_event("k1", role="user", content=KYOTO_MESSAGE, meta={"title": "Trip to Kyoto"},
                     namespace="alice")  # fmt: skip
    memory.add_record("f-kyoto", sources=["k1"], content="trip to Kyoto", namespace="alice")
    memory.add_event("n1", role="user", content="notes", namespace="notes")
    local = LocalSession()
    live = LiveService(create_app(memory, local=local)).start()
    yield live.url, local
    live.stop()
    memory.close()


def open_fresh(browser: webdriver.Chrome, url: str, token: str, namespace: str | None) -> None:
    """Open the served link in a tab that last showed ``namespace`` (None: a new tab)."""
    browser.get(url + "/ui")
    browser.execute_script("sessionStorage.clear()")
    if namespace is not None:
        browser.execute_script("sessionStorage.setItem('branchmem.namespace', arguments[0])",
                               namespace)  # fmt: skip
    browser.get("about:blank")
    browser.get(url + "/ui#token=" + token)


def test_the_explorer_opens_where_the_data_is_and_lists_the_namespaces(
    imported_as_alice: tuple[str, LocalSession], browser: webdriver.Chrome
) -> None:
    url, local = imported_as_alice
    wait = WebDriverWait(browser, 20)
    open_fresh(browser, url, local.token, None)
    wait.until(anchor_is("k1"))  # "default" holds nothing: the first namespace with data
    picker = browser.find_element(By.ID, "namespace")
    options = [o.get_attribute("value") for o in picker.find_elements(By.TAG_NAME, "option")]
    assert (options, picker.get_attribute("value")) == (["alice", "notes"], "alice")
    assert browser.find_element(By.ID, "status").text == "1 conversation(s) in alice"

    # a tab that last showed "default" says where the data is, and links there
    open_fresh(browser, url, local.token, "default")
    status = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#status .elsewhere"))
    assert status.text == "No conversation in namespace default. Data is in alice, notes."
    assert browser.find_elements(By.CSS_SELECTOR, "#conversations li") == []
    status.find_element(By.CSS_SELECTOR, 'a[data-namespace="alice"]').click()
    wait.until(anchor_is("k1"))
    assert browser.find_element(By.ID, "namespace").get_attribute("value") == "alice"

    # picking another namespace in the list loads it
    Select(browser.find_element(By.ID, "namespace")).select_by_value("notes")
    wait.until(anchor_is("n1"))
    titles = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#conversations .title")]
    assert titles == ["n1"]
