"""A real headless Chromium for the console's browser tests (Debian's chromium and chromium-driver, via Selenium).

CI must run these tests, never skip them: without the browser they fail under CI=true and skip elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def browser_or_fail() -> None:
    missing = [p for p in (CHROMIUM, DRIVER) if not Path(p).exists()]
    if not missing:
        return
    why = f"{', '.join(missing)} missing: apt-get install chromium chromium-driver (python3 dev.py test does)"
    if os.environ.get("CI") == "true":
        pytest.fail(why, pytrace=False)  # CI must run the browser test, never skip it
    pytest.skip(why)


@contextlib.contextmanager
def chromium(window: str, logs: dict[str, str]) -> Iterator[Any]:
    """A headless Chromium of `window` size ("1400,1000") keeping the `logs` Selenium asks for (e.g. the page's
    console as "browser", the network as "performance")."""
    browser_or_fail()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={window}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", logs)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def waiting(driver: Any, seconds: float) -> Any:
    """A WebDriverWait that reads a stale element as "not yet": the console redraws its tiles, alerts and rows
    (replaceChildren) on every update, so an element found a moment ago can be gone when the condition reads it; that
    failed test_console_resend_all under a stalled machine (docs/performance-history.md, Part 39). `seconds` bounds a
    failure only."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, ignored_exceptions=[StaleElementReferenceException])


def page_errors(driver: Any) -> list[str]:
    """What the page logged as errors in Chromium's console since last asked: a script or module that failed to load,
    threw, or was refused by the content security policy. A refusal from the API (the tests provoke some: a log-in
    before approval) is the page's answer, shown to the user, not a fault of the page."""
    return [
        f"{e.get('source')}: {e['message']}"
        for e in driver.get_log("browser")
        if e["level"] == "SEVERE" and not (e.get("source") == "network" and "/api/" in e["message"])
    ]
