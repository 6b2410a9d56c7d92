"""The console page is honest about its session (docs/console.md, "Log-in and log-out on the page"): until the answer
to GET /api/session has come it says it is loading (not "not logged in", which a logged-in supervisor is not) and
offers neither log-in nor log-out, since a log-out sent then carries no CSRF token; and a log-out the console refuses
says why on the page instead of doing nothing.

Real parts: the console server on loopback against a real PostgreSQL (its keys, sessions and audit), Debian's headless
Chromium through chromium-driver, a supervisor's session from a log-in signed with an approved Ed25519 key. Arranged
in the page, before its own scripts run (CDP Page.addScriptToEvaluateOnNewDocument): a wrapper of window.fetch that
holds the session's answer until the test lets it go, so the page is seen while it waits without waiting on time,
and that drops the X-CSRF-Token of one log-out, as a page that sent it before knowing its session did; the console
itself refuses that log-out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from floor.console.server import ConsoleServer
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.console_login import browser_logged_in, console_in_thread, session_known

pytestmark = [pytest.mark.floor, pytest.mark.browser]

# __asked: each API request the page made (method, path, whether it carried a CSRF token), in order.
# __holding: while true, the session's answer is held until window.__release(); __strip: drop the next log-out's token.
WRAP_FETCH = """
window.__asked = []; window.__held = []; window.__holding = true; window.__strip = false;
const fetched = window.fetch.bind(window);
window.fetch = (url, opts) => {
  const path = String(url);
  const o = Object.assign({}, opts || {});
  o.headers = Object.assign({}, o.headers || {});
  if (path === "/api/logout" && window.__strip) { delete o.headers["X-CSRF-Token"]; window.__strip = false; }
  window.__asked.push([o.method || "GET", path, "X-CSRF-Token" in o.headers]);
  const answer = fetched(url, o);
  if (path !== "/api/session" || !window.__holding) return answer;
  return answer.then((r) => new Promise((resolve) => {
    window.__held.push(r);
    window.__release = () => { window.__holding = false; resolve(r); };
  }));
};
"""
REFUSED = "Log-out refused: missing or wrong X-CSRF-Token: reload the console (HTTP 403)"


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1200,900", {"browser": "ALL"}) as driver:
        yield driver


@pytest.fixture
def console(floor_dsn: str) -> Iterator[tuple[ConsoleServer, str]]:
    with console_in_thread(floor_dsn) as served:
        yield served


def test_the_page_says_it_is_loading_until_it_knows_its_session_and_shows_a_refused_log_out(
    browser: Any, console: tuple[ConsoleServer, str], floor_dsn: str
) -> None:
    from selenium.webdriver.common.by import By

    _, origin = console
    wait = waiting(browser, 30)
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WRAP_FETCH})
    browser_logged_in(browser, origin, floor_dsn)  # a supervisor "sup"'s session cookie, set before the page loads
    browser.get(origin + "/")

    def whoami() -> Any:
        return browser.find_element(By.ID, "whoami")

    def logout() -> Any:
        return browser.find_element(By.ID, "logout-button")

    # The page asked for its session; the answer is held: the page says so and offers no log-in or log-out.
    wait.until(lambda d: d.execute_script("return window.__held.length") == 1)
    assert whoami().text == "loading the session…"
    assert whoami().get_attribute("data-session") == "loading" and not session_known(browser)
    assert logout().get_attribute("disabled") is not None
    assert browser.find_element(By.ID, "login-button").get_attribute("disabled") is not None
    # A click then (a script's, as the hidden button cannot be clicked by hand) sends nothing.
    browser.execute_script("document.getElementById('logout-button').click();")
    assert browser.execute_script("return window.__asked") == [["GET", "/api/session", False]]

    browser.execute_script("window.__release();")
    wait.until(session_known)
    assert whoami().text.startswith("sup (supervisor), session until ")
    assert logout().is_displayed() and logout().get_attribute("disabled") is None
    assert not browser.find_element(By.ID, "session-error").is_displayed()

    # A log-out without its CSRF token: the console refuses it (403) and the page says why; still logged in.
    browser.execute_script("window.__strip = true;")
    logout().click()
    wait.until(lambda d: d.find_element(By.ID, "session-error").is_displayed())
    assert browser.find_element(By.ID, "session-error").text == REFUSED
    wait.until(session_known)  # asked again after the refusal: the same session
    assert whoami().text.startswith("sup (supervisor)")
    assert browser.execute_script("return window.__asked")[1:] == [
        ["POST", "/api/logout", False],
        ["GET", "/api/session", True],
    ]

    # With its token the log-out is taken: the page says so, and the refusal's words are gone.
    logout().click()
    wait.until(lambda d: d.find_element(By.ID, "whoami").text == "not logged in")
    assert session_known(browser) and not logout().is_displayed()
    assert not browser.find_element(By.ID, "session-error").is_displayed()
    assert browser.execute_script("return window.__asked")[3] == ["POST", "/api/logout", True]
    with psycopg.connect(floor_dsn) as conn:
        audit = conn.execute("SELECT action, outcome, key_id FROM console_audit ORDER BY id").fetchall()
    assert audit[-1] == ("logout", "done", "sup"), audit
    assert page_errors(browser) == []
