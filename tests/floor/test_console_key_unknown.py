"""A browser holding a key this floor has no enrolment of (a new floor's archive, or an enrolment the administrator
rejected) can make a new key and enrol it, and is told to: the log-in said "not approved on this floor: an
administrator approves it with `... console approve`", a command that fails for a key never enrolled, and the page
offered no way to enrol again while it held a key.

Real parts: the console server on a loopback port against a real PostgreSQL (console_keys, the audit), the
administrator's `reject` as `tablectl floor console reject` does it (floor/console/records.py), Debian's headless
Chromium through chromium-driver making its keys with WebCrypto."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from floor.console.records import reject_key
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.console_login import console_in_thread

pytestmark = [pytest.mark.floor, pytest.mark.browser]


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1200,900", {"browser": "ALL"}) as driver:
        yield driver


def test_a_key_the_floor_does_not_know_is_told_to_enrol_again_and_can(browser: Any, floor_dsn: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    wait = waiting(browser, 30)
    with console_in_thread(floor_dsn) as (_, origin):
        browser.get(origin + "/")
        wait.until(ec.visibility_of_element_located((By.ID, "enrol-key-id"))).send_keys("old.key")
        browser.find_element(By.ID, "enrol-button").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "key-state"), "holds key old.key"))
        # Pending: the log-in says an administrator approves it.
        browser.find_element(By.ID, "login-button").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "key-error"), "console approve old.key"))
        with psycopg.connect(floor_dsn) as conn:
            assert reject_key(conn, "old.key", "the test") == "enrolment of old.key rejected"

        browser.find_element(By.ID, "login-button").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "key-error"), "not enrolled on this floor"))
        refusal = browser.find_element(By.ID, "key-error").text
        assert "console approve" not in refusal, refusal
        assert "Make a new key" in refusal, refusal

        browser.find_element(By.ID, "new-key-button").click()
        form = wait.until(ec.visibility_of_element_located((By.ID, "enrol-key-id")))
        form.clear()
        form.send_keys("new.key")
        browser.find_element(By.ID, "enrol-button").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "key-state"), "holds key new.key"))
        assert 'key_id = "new.key"' in browser.find_element(By.ID, "entry").text
        assert browser.find_element(By.ID, "key-error").text == ""
        with psycopg.connect(floor_dsn) as conn:
            rows = conn.execute("SELECT key_id FROM console_keys ORDER BY key_id").fetchall()
        assert rows == [("new.key",)]
        assert page_errors(browser) == []
