"""The review page in a real headless browser: Debian's Chromium driven by Selenium through
Debian's chromedriver (``scripts/install/chromium.sh``), against ``chatmem serve`` running as
its own process on a SQLite file. A missing browser fails the test: it is part of CI."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmem.core.longterm import (
    AgentSettings,
    MemoryCandidate,
    MemoryStatus,
    MemoryType,
    get_settings,
)
from chatmem.jdbc import JdbcMemoryRecordRepository

from ._server import serve

pytestmark = pytest.mark.backend("sqlite")

CHROMIUM = os.environ.get("CHATMEM_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHATMEM_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
)
KEY = "review-page-key-42"
WAIT = 30.0


@pytest.fixture
def browser() -> Iterator[Any]:
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        pytest.fail(f"no {CHROMIUM} / {CHROMEDRIVER}: run scripts/install/chromium.sh")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()


def rows(driver: Any) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, "#records tbody tr"))


def wait_for(driver: Any, condition: Any) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # The page replaces its rows on each load: a row found a moment ago may be gone.
    wait = WebDriverWait(driver, WAIT, ignored_exceptions=(StaleElementReferenceException,))
    return wait.until(condition)


def test_review_page_lists_filters_approves_and_rejects(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url = f"sqlite:///{tmp_path / 'review.db'}"
    repo = JdbcMemoryRecordRepository(url)
    seeded = {
        text: repo.add(
            "assistant",
            user,
            MemoryCandidate(memory_type=MemoryType(kind), content=text, confidence=conf),
        ).record.id
        for user, kind, text, conf in [
            ("ana", "preference", "The user prefers Python code examples over pseudocode.", 0.9),
            ("ana", "fact", "The user is the CTO of StartupCorp.", 0.95),
            ("ana", "context", "The user launches a product next month.", 0.85),
            ("bob", "fact", "The user <b>is</b> a designer.", 0.8),
        ]
    }
    with serve(url, env={"CHATMEM_API_KEY": KEY}) as (base, _):
        browser.get(base)
        find = browser.find_element

        # A wrong key shows the API's refusal and lists nothing.
        find(By.ID, "api-key").send_keys("not-the-key")
        find(By.ID, "load").click()
        wait_for(browser, lambda d: "401" in d.find_element(By.ID, "message").text)
        assert rows(browser) == []

        key = find(By.ID, "api-key")
        key.clear()
        key.send_keys(KEY)
        find(By.ID, "user-id").send_keys("ana")
        find(By.ID, "load").click()
        wait_for(browser, lambda d: len(rows(d)) == 3)
        texts = {r.find_element(By.CSS_SELECTOR, "td.memory").text for r in rows(browser)}
        assert texts == {t for t in seeded if "designer" not in t}

        # Filter by type.
        Select(find(By.ID, "type")).select_by_visible_text("fact")
        find(By.ID, "load").click()
        wait_for(browser, lambda d: len(rows(d)) == 1)
        fact_row = rows(browser)[0]
        assert fact_row.get_attribute("data-id") == seeded["The user is the CTO of StartupCorp."]
        fact_row.find_element(By.CSS_SELECTOR, "button.approve").click()
        wait_for(
            browser, lambda d: rows(d)[0].find_element(By.CLASS_NAME, "status").text == "approved"
        )

        # Reject the preference.
        Select(find(By.ID, "type")).select_by_visible_text("preference")
        find(By.ID, "load").click()
        wait_for(
            browser,
            lambda d: (
                len(rows(d)) == 1
                and rows(d)[0].get_attribute("data-id")
                == seeded["The user prefers Python code examples over pseudocode."]
            ),
        )
        rows(browser)[0].find_element(By.CSS_SELECTOR, "button.reject").click()
        wait_for(
            browser, lambda d: rows(d)[0].find_element(By.CLASS_NAME, "status").text == "rejected"
        )

        # Filter by status: only the approved one, with no buttons left.
        Select(find(By.ID, "type")).select_by_visible_text("any")
        Select(find(By.ID, "status")).select_by_visible_text("approved")
        find(By.ID, "load").click()
        wait_for(
            browser, lambda d: len(rows(d)) == 1 and "CTO" in d.find_element(By.ID, "records").text
        )
        assert rows(browser)[0].find_elements(By.TAG_NAME, "button") == []

        # Another user's text is shown as text, never as markup.
        user = find(By.ID, "user-id")
        user.clear()
        user.send_keys("bob")
        Select(find(By.ID, "status")).select_by_visible_text("pending")
        find(By.ID, "load").click()
        bob = seeded["The user <b>is</b> a designer."]
        wait_for(browser, lambda d: [r.get_attribute("data-id") for r in rows(d)] == [bob])
        assert "The user <b>is</b> a designer." in rows(browser)[0].text
        assert browser.find_elements(By.CSS_SELECTOR, "#records b") == []

    statuses = {text: repo.get(rid).status for text, rid in seeded.items()}  # type: ignore[union-attr]
    assert statuses == {
        "The user prefers Python code examples over pseudocode.": MemoryStatus.REJECTED,
        "The user is the CTO of StartupCorp.": MemoryStatus.APPROVED,
        "The user launches a product next month.": MemoryStatus.PENDING,
        "The user <b>is</b> a designer.": MemoryStatus.PENDING,
    }
    repo.close()


def test_review_page_for_volume_filters_bulk_context_and_keys(tmp_path: Path, browser: Any) -> None:
    """Text and confidence filters (Korean too), bulk approve and reject, the source
    conversation beside a memory, and the keyboard: on one SQLite file holding the chat
    history and the records, as ``chatmem serve`` shows it by default."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from chatmem.core import AssistantMessage, UserMessage
    from chatmem.jdbc import JdbcChatMemoryRepository

    url = f"sqlite:///{tmp_path / 'volume.db'}"
    chat = JdbcChatMemoryRepository(url)
    chat.save_all(
        "conv-min",
        [
            UserMessage(text="안녕하세요."),
            AssistantMessage(text="무엇을 도와드릴까요?"),
            UserMessage(text="코드 예시는 의사코드보다 Python으로 받는 것을 선호합니다."),
            AssistantMessage(text="알겠습니다."),
        ],
    )
    chat.close()
    repo = JdbcMemoryRecordRepository(url)

    def add(user: str, text: str, confidence: float, **source: Any) -> str:
        kind = MemoryType.PREFERENCE if "선호" in text or "prefers" in text else MemoryType.FACT
        candidate = MemoryCandidate(memory_type=kind, content=text, confidence=confidence)
        return repo.add("assistant", user, candidate, **source).record.id

    korean = add(
        "min",
        "사용자는 의사코드보다 Python 코드 예시를 선호함.",
        0.9,
        conversation_id="conv-min",
        message_position=2,
    )
    bulk = [add("ana", f"The user works on project {n}.", 0.6 + n * 0.05) for n in range(6)]
    firm = add("ana", "The user prefers tables.", 0.95)
    with serve(url, env={"CHATMEM_API_KEY": KEY}) as (base, _):
        browser.get(base)
        find = browser.find_element
        find(By.ID, "api-key").send_keys(KEY)

        # Text filter in Korean; the source conversation opens beside the memory.
        find(By.ID, "text").send_keys("Python 코드")
        find(By.ID, "load").click()
        wait_for(browser, lambda d: [r.get_attribute("data-id") for r in rows(d)] == [korean])
        rows(browser)[0].find_element(By.CSS_SELECTOR, "button.show-context").click()
        source = wait_for(
            browser, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.context li.source")
        )
        assert "Python으로 받는 것을 선호합니다" in source[0].text
        listed = browser.find_elements(By.CSS_SELECTOR, "tr.context li .text")
        assert [li.text for li in listed] == [
            "안녕하세요.",
            "무엇을 도와드릴까요?",
            "코드 예시는 의사코드보다 Python으로 받는 것을 선호합니다.",
            "알겠습니다.",
        ]

        # Confidence filter, then bulk: select three with the keyboard, approve them.
        find(By.ID, "text").clear()
        find(By.ID, "user-id").send_keys("ana")
        find(By.ID, "min-confidence").send_keys("0.69")
        find(By.ID, "load").click()
        wanted = [*bulk[2:], firm]
        wait_for(browser, lambda d: [r.get_attribute("data-id") for r in rows(d)] == wanted)
        wait_for(
            browser, lambda d: d.switch_to.active_element.get_attribute("data-id") == wanted[0]
        )
        focused = browser.switch_to.active_element
        focused.send_keys("x")
        focused.send_keys("j")
        browser.switch_to.active_element.send_keys("x")
        browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
        browser.switch_to.active_element.send_keys(" ")
        wait_for(browser, lambda d: d.find_element(By.ID, "selected-count").text == "3 selected")
        find(By.ID, "bulk-approve").click()
        wait_for(browser, lambda d: "3 memories approved" in d.find_element(By.ID, "message").text)
        statuses = [r.find_element(By.CLASS_NAME, "status").text for r in rows(browser)]
        assert statuses == ["approved", "approved", "approved", "pending", "pending"]

        # Select all that are still pending, reject them in bulk; decided rows cannot be picked.
        find(By.ID, "select-all").click()
        wait_for(browser, lambda d: d.find_element(By.ID, "selected-count").text == "2 selected")
        find(By.ID, "bulk-reject").click()
        wait_for(browser, lambda d: "2 memories rejected" in d.find_element(By.ID, "message").text)

        # Keys on a row: "r" rejects the focused pending memory.
        find(By.ID, "min-confidence").clear()
        find(By.ID, "user-id").clear()
        find(By.ID, "load").click()
        wait_for(
            browser, lambda d: [r.get_attribute("data-id") for r in rows(d)] == [korean, *bulk[:2]]
        )
        rows(browser)[1].send_keys("r")
        wait_for(
            browser, lambda d: rows(d)[1].find_element(By.CLASS_NAME, "status").text == "rejected"
        )

        # Edit, then approve: the corrected wording is stored, the proposed one kept.
        rows(browser)[0].send_keys("e")
        area = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "textarea.edit-content"))
        area.clear()
        area.send_keys("사용자는 Python 코드 예시를 선호함.")
        find(By.CSS_SELECTOR, "button.approve-edited").click()
        wait_for(
            browser, lambda d: rows(d)[0].find_element(By.CLASS_NAME, "status").text == "approved"
        )
        memory = rows(browser)[0].find_element(By.CSS_SELECTOR, "td.memory")
        assert (
            memory.find_element(By.CLASS_NAME, "content").text
            == "사용자는 Python 코드 예시를 선호함."
        )
        assert "의사코드보다" in memory.find_element(By.CLASS_NAME, "original").text

        # Agent settings: read the defaults, switch the agent off with a 2-day expiry.
        find(By.CSS_SELECTOR, "#settings summary").click()
        find(By.ID, "settings-agent").send_keys("assistant")
        find(By.ID, "settings-load").click()
        wait_for(
            browser, lambda d: d.find_element(By.ID, "settings-days").get_attribute("value") == "7"
        )
        assert find(By.ID, "settings-enabled").is_selected()
        find(By.ID, "settings-enabled").click()
        days = find(By.ID, "settings-days")
        days.clear()
        days.send_keys("2")
        find(By.ID, "settings-save").click()
        wait_for(browser, lambda d: "long-term memory off" in d.find_element(By.ID, "message").text)

    edited = repo.get(korean)
    assert edited is not None and edited.content == "사용자는 Python 코드 예시를 선호함."
    assert edited.original_content == "사용자는 의사코드보다 Python 코드 예시를 선호함."
    assert get_settings(repo, "assistant") == AgentSettings(
        enabled=False, pending_ttl=timedelta(days=2)
    )
    assert {rid: repo.get(rid).status for rid in [korean, *bulk, firm]} == {  # type: ignore[union-attr]
        korean: MemoryStatus.APPROVED,
        bulk[0]: MemoryStatus.REJECTED,
        bulk[1]: MemoryStatus.PENDING,
        bulk[2]: MemoryStatus.APPROVED,
        bulk[3]: MemoryStatus.APPROVED,
        bulk[4]: MemoryStatus.APPROVED,
        bulk[5]: MemoryStatus.REJECTED,
        firm: MemoryStatus.REJECTED,
    }
    repo.close()
