"""The console's floor page shows the messages the floor refused (docs/console.md, "Refused messages"): how many,
the latest one's topic, reason and time, from rejected_messages at start and live after each batch; the topic and
reason are a publisher's text (attacker-controlled) and appear as text, never as markup. Before, the page showed
nothing of them: a client publishing junk was seen only in `floor status` and the log.

Real parts: the console server on a loopback port against a real PostgreSQL, Debian's headless Chromium through
chromium-driver, a log-in signed with an approved Ed25519 key. The batch the archive committed is handed to the
console as the floor service does after each commit (floor/writing.py, `WriteLoop.loop`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from floor.console.server import ConsoleServer
from floor.links import LinkLive
from floor.live import TableLive
from floor.messages import LinkIncoming, parse, refuse
from link import protocol
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.console_login import browser_logged_in, console_in_thread, in_console

pytestmark = [pytest.mark.floor, pytest.mark.browser]
MARKUP = '<img src="x" onerror="window.pwned = 1"> not JSON'
SCRIPT = "<script>window.pwned = 2</script> breaks the event contract"


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1200,900", {"browser": "ALL"}) as driver:
        yield driver


@pytest.fixture
def console(floor_dsn: str) -> Iterator[tuple[ConsoleServer, str]]:
    with console_in_thread(floor_dsn) as (server, url):
        with psycopg.connect(floor_dsn, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO rejected_messages (topic, payload, reason, size, sha256, bytes, count, last_at) VALUES"
                " ('tablectl/t1/event', 'x', 'not JSON', 1, sha256('x'), 1, 1, now() - interval '1 hour'),"
                " ('tablectl/<b>t1</b>/status', 'y', %s, 1, sha256('y'), 5, 5, now() - interval '90 seconds')",
                (MARKUP,),
            )
            live = {"t1": TableLive("t1", state="online", game="Mississippi Stud", chapter="655a", phase="betting")}
            in_console(server, lambda: server.load(live, conn))
        yield server, url


def _age(when: str) -> int:
    """The seconds of an age the page shows as `93s ago (2026-...Z)`; an age in minutes or hours fails here."""
    shown = re.match(r"([0-9]+)s ago ", when)
    assert shown is not None, when
    return int(shown.group(1))


def test_the_floor_page_shows_the_refused_count_and_the_latest_live_and_as_text(
    browser: Any, console: tuple[ConsoleServer, str], floor_dsn: str
) -> None:
    from selenium.webdriver.common.by import By

    server, origin = console
    browser_logged_in(browser, origin, floor_dsn)
    wait = waiting(browser, 60)

    def shown() -> tuple[str, ...]:
        return tuple(
            browser.find_element(By.ID, i).text
            for i in ("refused-count", "refused-topic", "refused-reason", "refused-when")
        )

    browser.get(origin + "/")
    wait.until(lambda d: d.find_element(By.ID, "conn").text == "live")
    wait.until(lambda d: d.find_element(By.ID, "refused-panel").is_displayed())
    count, topic, reason, when = shown()
    # From the archive at start: 1 + 5 (a flood's coalesced row), the latest row's topic and reason, its age.
    assert (count, topic, reason) == ("(6)", "tablectl/<b>t1</b>/status", MARKUP)
    # The age on the floor's clock when drawn: from the 90 s the row had when the page loaded to its age now (the
    # page's log-in and load took seconds on a stalled machine), rounded to the second.
    with psycopg.connect(floor_dsn) as conn:
        row = conn.execute("SELECT extract(epoch FROM now() - max(last_at)) FROM rejected_messages").fetchone()
    assert row is not None and 90 <= _age(when) <= float(row[0]) + 1, (when, row)

    before = time.monotonic()
    in_console(server, lambda: server.refused(2, refuse("tablectl/t9/event", b"\x00junk", SCRIPT)))
    wait.until(lambda d: shown()[0] == "(8)")
    count, topic, reason, when = shown()
    assert (topic, reason) == ("tablectl/t9/event", SCRIPT)
    assert _age(when) <= time.monotonic() - before + 1, when  # refused since `before`, drawn by now
    panel = browser.find_element(By.ID, "refused-panel")
    assert panel.find_elements(By.CSS_SELECTOR, "img, script, b") == []  # text, never markup
    assert browser.execute_script("return window.pwned === undefined") is True
    assert page_errors(browser) == []


def test_a_link_panel_shows_what_the_link_refused_live_and_as_text(
    browser: Any, console: tuple[ConsoleServer, str], floor_dsn: str
) -> None:
    """The link's retained state carries its refusal counts (link/refusals.py): the link's panel shows how many, by
    kind, and the latest's kind, time, topic and reason, the last two a publisher's words set as text, their control
    characters escaped (controller/core/shown.py). A link too old to send them (the field absent) shows none. Before,
    the counts were only in the link's systemd status line. The state is handed to the console as the floor service
    does after the batch that archived it (floor/writing.py); tests/link/test_link_refusals.py has the link publish it.
    """
    from selenium.webdriver.common.by import By

    server, origin = console
    browser_logged_in(browser, origin, floor_dsn)
    wait = waiting(browser, 60)
    links: dict[str, LinkLive] = {}
    older = protocol.LinkState(
        link_id="mega", status="open", tilt=None, database="up", seq=7,
        tables={"t1": protocol.TableLease(asset_number="A-1", leased=True)},
    )  # fmt: skip

    def publish(state: protocol.LinkState) -> None:
        body = state.model_dump_json(exclude={"refusals"} if state.refusals is None else set()).encode()
        m = parse("tablectl", "tablectl/link/mega/state", body)
        assert isinstance(m, LinkIncoming)
        links.setdefault("mega", LinkLive("mega")).apply(m.model, "2026-11-26T12:00:00Z")
        in_console(server, lambda: server.archived([m], {}, links))

    browser.get(origin + "/")
    wait.until(lambda d: d.find_element(By.ID, "conn").text == "live")
    publish(older)
    panel = '.link-panel[data-link="mega"]'
    wait.until(lambda d: "seq 7" in d.find_element(By.CSS_SELECTOR, panel).text)
    assert browser.find_elements(By.CSS_SELECTOR, f"{panel} .link-refused") == []  # an older link: nothing said
    refusals = protocol.LinkRefusals(
        total=1000, counts={"request_malformed": 998, "command bad_signature": 2}, last_kind="request_malformed",
        last_at="2026-11-26T12:00:01+00:00", last_topic="tablectl/link/mega/request/<b>t1</b>",
        last_reason=MARKUP + "\x1b[2J",  # a forged state's raw ESC: the floor escapes it as the link would have
    )  # fmt: skip
    publish(older.model_copy(update={"seq": 8, "refusals": refusals}))
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"{panel} .link-refused"))

    def said() -> tuple[str, ...]:
        return tuple(
            browser.find_element(By.CSS_SELECTOR, f"{panel} .link-refused{part}").text
            for part in ("-count", "-kind", "-topic", "-reason", "")
        )

    count, kind, topic, reason, whole = said()
    assert (count, kind, topic, reason) == (
        "1000 refused", "request_malformed", "tablectl/link/mega/request/<b>t1</b>", MARKUP + "\\x1b[2J"
    )  # fmt: skip
    assert "(request_malformed 998, command bad_signature 2)" in whole and "2026-11-26T12:00:01+00:00" in whole
    assert browser.find_elements(By.CSS_SELECTOR, f"{panel} img, {panel} script, {panel} b") == []  # text, not markup
    # A page loaded now gets the counts with the whole floor, not only in an update.
    browser.refresh()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"{panel} .link-refused"))
    assert said()[:4] == (count, kind, topic, reason)
    assert browser.execute_script("return window.pwned === undefined") is True
    assert page_errors(browser) == []
