"""The console's Reports page (floor/console/reports.py): a logged-in supervisor asks for a gaming day's, a shift's or
a period's report (of a table or a game if asked) and gets `tablectl report`'s own HTML with its charts, or its CSV;
a request it cannot answer is a 400 naming the problem and the fix; the report runs off the event loop, so the live
floor goes on while it waits on the archive. Before, the console offered no report at all (404).

Real parts: the console on a loopback port in a thread of its own (tests/floor/console_login.py), a real PostgreSQL
cluster whose archive holds rounds played on the real engine (tests/engine's pure table) and written by the floor's
real writer; Debian's headless Chromium for the page.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import uuid
from collections.abc import Iterator
from datetime import date
from typing import Any

import aiohttp
import psycopg
import pytest

from floor.console.server import ConsoleServer
from floor.days import day_period, range_period, shift_period
from floor.db import connect
from floor.live import TableLive
from floor.report.build import build
from floor.report.figures import Scope, gather
from floor.report.html import to_html
from floor.report.render import to_csv
from tests.engine.conftest import decide_all
from tests.engine.mississippi_table import make
from tests.floor.archiving import msg, writer
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.conftest import wait_for
from tests.floor.console_login import browser_logged_in, console_in_thread, in_console, log_in
from tests.floor.event_stream import Stream

pytestmark = [pytest.mark.floor]
DAY = date(2026, 11, 21)
SHIFTS = "".join(
    f'[[shifts]]\nname = "{n}"\nstart = "{a}"\nend = "{b}"\n'
    for n, a, b in [("day", "06:00", "14:00"), ("swing", "14:00", "22:00")]
)


async def archive_day(dsn: str) -> None:
    """Three rounds of a Mississippi Stud table from 12:00 UTC of DAY, as the floor archives them."""
    t = make()
    for _ in range(3):
        t.wager(1, "ante", 500)
        t.wager(2, "ante", 1000)
        decide_all(t, t.press("no_more_bets"))
    batch = [
        msg({"event_id": uuid.uuid4().hex, "boot_id": "b1", "seq": seq, "table_id": "ms-1", "round_id": e.round_id,
             "ts": f"{DAY}T12:{seq // 60:02d}:{seq % 60:02d}.000000Z", "type": e.type, "rule": e.rule,
             "payload": dict(e.payload)})
        for seq, e in enumerate(t.events, 1)
    ]  # fmt: skip
    w = await writer(dsn)
    assert (await w.write(batch)).events_new == len(batch)


@pytest.fixture
def console(floor_dsn: str) -> Iterator[tuple[ConsoleServer, str]]:
    asyncio.run(archive_day(floor_dsn))
    with console_in_thread(floor_dsn, SHIFTS) as (server, url):
        live = {"ms-1": TableLive("ms-1", state="online", game="Mississippi Stud", chapter="655a")}
        in_console(server, lambda: server.view.live.update(live))
        yield server, url


def cli_report(server: ConsoleServer, scope: Scope, render: Any) -> str:
    """What `tablectl report` makes of the same scope (floor/cli/report.py), its time of making left out."""
    with connect(server.config.database) as conn:
        return undated(render(build(gather(conn, scope), scope, server.config.name)))


def undated(text: str) -> str:
    """The text less its time of making and the charts' clip-path ids (matplotlib draws new ones at each chart)."""
    text = re.sub(r"(?<=[#\"])[pm][0-9a-f]{10}\b", "id", text)
    return re.sub(r"generated [^<\n.,]*|20[0-9][0-9]-[0-9-]+T[0-9:.+]+(Z|\+00:00)?", "", text)


async def first_floor(url: str, token: str) -> dict[str, Any]:
    """The whole floor the console's stream sends first, as a browser gets it."""
    async with (
        aiohttp.ClientSession(cookies={"tablectl_console": token}) as http,
        http.get(url + "/api/stream") as r,
    ):
        return await Stream(r).next_where("floor", lambda f: True)


async def get(url: str, token: str, path: str) -> tuple[int, dict[str, str], str]:
    async with aiohttp.ClientSession(cookies={"tablectl_console": token}) as http, http.get(url + path) as r:
        return r.status, dict(r.headers), await r.text()


async def test_a_supervisor_gets_the_reports_html_with_charts_and_its_csv(
    console: tuple[ConsoleServer, str], floor_dsn: str
) -> None:
    server, url = console
    gd = server.config.gaming_day
    token = log_in(url, floor_dsn)
    status, headers, html = await get(url, token, f"/api/reports/report?day={DAY}")
    assert status == 200, html
    assert headers["Content-Type"].startswith("text/html")
    assert undated(html) == cli_report(server, Scope(day_period(DAY, gd)), to_html)  # floor/report's page, not a copy
    assert html.count("<svg") >= 2 and "Rounds" in html
    # Framed by the console, styled by its own sheet; still no script.
    assert "style-src 'unsafe-inline'" in headers["Content-Security-Policy"]
    assert "frame-ancestors 'self'" in headers["Content-Security-Policy"] and "script-src" not in headers[
        "Content-Security-Policy"]  # fmt: skip
    assert headers["X-Frame-Options"] == "SAMEORIGIN"
    _, other, _ = await get(url, token, "/api/reports")
    assert other["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in other["Content-Security-Policy"]

    status, headers, csv = await get(url, token, f"/api/reports/report?day={DAY}&shift=day&table=ms-1&format=csv")
    assert status == 200, csv
    name = server.config.name
    assert headers["Content-Disposition"] == f'attachment; filename="{name}-shift-day-{DAY}-ms-1.csv"'
    shift = Scope(shift_period(DAY, server.config.shift("day"), gd), "ms-1")
    assert undated(csv) == cli_report(server, shift, to_csv)
    status, _, csv = await get(url, token, f"/api/reports/report?from={DAY}&to={DAY}&game=655a&format=csv")
    period = Scope(range_period(DAY, DAY, gd), None, "655a")
    assert status == 200 and undated(csv) == cli_report(server, period, to_csv)
    status, _, choices = await get(url, token, "/api/reports")
    assert status == 200 and '"shifts": ["day", "swing"]' in choices and '"tables": ["ms-1"]' in choices


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("day=2026-13-45", "day '2026-13-45' is not a date: write YYYY-MM-DD, e.g. 2026-11-21"),
        ("day=20261121", "day '20261121' is not a date: write YYYY-MM-DD"),
        ("day=2026-11-21&shift=grave", "no shift named 'grave'; the config's shifts: day, swing: pick one of those"),
        (
            "from=2026-11-21&to=2026-11-20",
            "to 2026-11-20 is before from 2026-11-21: give the earlier gaming day as from",
        ),
        ("from=2026-11-21", "to '' is not a date"),
        ("", "say which period: a day (YYYY-MM-DD), a shift and its day, or from and to"),
        ("day=2026-11-21&table=ms-1&game=655a", "give table or game, not both"),
        ("day=2026-11-21&table=%00x", "is not a table name"),
        ("day=2026-11-21&format=pdf", "format 'pdf' is not one the console gives: html or csv"),
    ],
)
async def test_a_request_it_cannot_answer_is_a_400_naming_the_fix(
    console: tuple[ConsoleServer, str], floor_dsn: str, query: str, said: str
) -> None:
    _, url = console
    token = log_in(url, floor_dsn)
    for path in ("/api/reports/report", "/api/reports/check"):
        status, _, body = await get(url, token, f"{path}?{query}")
        assert status == 400 and said in body, (path, status, body)


async def test_reports_are_a_supervisors(console: tuple[ConsoleServer, str], floor_dsn: str) -> None:
    _, url = console
    token = log_in(url, floor_dsn, key_id="fp", role="floorperson")
    status, _, body = await get(url, token, f"/api/reports/report?day={DAY}")
    assert status == 403 and "reports are a supervisor's; this session is a floorperson" in body, body
    status, _, _ = await get(url, "", f"/api/reports/report?day={DAY}")
    assert status == 401


async def test_the_floor_goes_on_while_a_report_waits_on_the_archive(
    console: tuple[ConsoleServer, str], floor_dsn: str
) -> None:
    """The report is held on a lock of the archive's events (a long report on a busy day, certain here); meanwhile
    the console answers and streams as ever. Made on the event loop, the report would hold everything else up."""
    _, url = console
    token = log_in(url, floor_dsn)
    waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
    with psycopg.connect(floor_dsn) as holder, psycopg.connect(floor_dsn, autocommit=True) as watcher:
        holder.execute("LOCK TABLE events IN ACCESS EXCLUSIVE MODE")
        report = asyncio.create_task(get(url, token, f"/api/reports/report?day={DAY}"))
        await asyncio.to_thread(wait_for, lambda: watcher.execute(waiting).fetchone() == (1,), 30, "the report's wait")
        async with asyncio.timeout(10):
            status, _, floor = await get(url, token, "/api/floor")
            streamed = await first_floor(url, token)
        assert status == 200 and '"ms-1"' in floor
        assert [t["table_id"] for t in streamed["tiles"]] == ["ms-1"]
        assert not report.done()
        holder.rollback()
    status, _, html = await asyncio.wait_for(report, 60)
    assert status == 200 and "<svg" in html


async def test_a_report_failing_after_its_check_is_a_readable_page_naming_the_problem_and_the_fix(
    console: tuple[ConsoleServer, str], floor_dsn: str
) -> None:
    """The archive gone between the page's check and the report (the report's connection refused, as a database
    host down refuses it): the frame gets a page saying so and what to do. Before, it got the error's JSON, shown
    raw in the frame, with status 400 (http_error knew no 503)."""
    server, url = console
    token = log_in(url, floor_dsn)
    with socket.create_server(("127.0.0.1", 0)) as s:
        gone = int(s.getsockname()[1])  # nothing listens once closed: each connect is refused
    down = server.config.database.model_copy(update={"dsn": f"host=127.0.0.1 port={gone} dbname=floor user=floor"})
    server.records.database = down  # the console's archive reads and writes, the report's among them
    status, _, body = await get(url, token, f"/api/reports/check?day={DAY}")
    assert status == 200, body
    for fmt in ("html", "csv"):
        status, headers, page = await get(url, token, f"/api/reports/report?day={DAY}&format={fmt}")
        assert status == 503, page
        assert headers["Content-Type"].startswith("text/html") and "Content-Disposition" not in headers
        assert f"<h1>The report day-{DAY} could not be made</h1>" in page, page
        assert re.search(f'class="problem">Problem: [^<]*port {gone}[^<]*refused', page), page
        assert "Fix: check that the floor&#x27;s archive (its PostgreSQL) is up and reachable" in page, page
        assert '{"error"' not in page
    # The console's other archive reads say the same as JSON (a round's recall): before, a 500 "the console failed".
    status, _, body = await get(url, token, "/api/rounds/ms-1-r1")
    assert status == 503, body
    problem = json.loads(body)["error"]
    assert problem.startswith("the floor's archive could not be reached (connection failed: ") and str(gone) in problem
    assert problem.endswith(
        "check that the floor's PostgreSQL is up and reachable (the floor's log says), then ask again"
    )


@pytest.mark.browser
def test_the_reports_page_frames_the_report_and_says_what_is_wrong(
    console: tuple[ConsoleServer, str], floor_dsn: str, tmp_path: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _, url = console
    with chromium("1400,1000", {"browser": "ALL"}) as browser:
        browser_logged_in(browser, url, floor_dsn)
        wait = waiting(browser, 60)
        browser.get(url + "/")
        wait.until(lambda d: d.find_element(By.ID, "reports-button").is_displayed())
        browser.find_element(By.ID, "reports-button").click()
        wait.until(lambda d: d.find_element(By.ID, "reports").is_displayed())
        assert not browser.find_element(By.ID, "floor").is_displayed()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rp-table option")) == 2)

        # A shift that ends before it starts is not asked: a range whose end is before its start is, and refused.
        Select(browser.find_element(By.ID, "rp-kind")).select_by_value("period")
        browser.execute_script(
            "document.getElementById('rp-from').value = '2026-11-21'; document.getElementById('rp-to').value = "
            "'2026-11-20';"
        )
        browser.find_element(By.ID, "rp-run").click()
        error = wait.until(
            lambda d: d.find_element(By.ID, "rp-error").is_displayed() and d.find_element(By.ID, "rp-error")
        )
        assert "to 2026-11-20 is before from 2026-11-21" in error.text, error.text
        assert not browser.find_element(By.ID, "rp-frame").is_displayed()

        Select(browser.find_element(By.ID, "rp-kind")).select_by_value("shift")
        browser.execute_script(f"document.getElementById('rp-day').value = '{DAY}';")
        Select(browser.find_element(By.ID, "rp-shift")).select_by_value("day")
        Select(browser.find_element(By.ID, "rp-table")).select_by_value("ms-1")
        browser.find_element(By.ID, "rp-run").click()
        wait.until(lambda d: d.find_element(By.ID, "rp-frame").is_displayed())
        assert not browser.find_element(By.ID, "rp-error").is_displayed()
        csv = browser.find_element(By.ID, "rp-csv").get_attribute("href")
        assert csv == f"{url}/api/reports/report?day={DAY}&shift=day&table=ms-1&format=csv"
        browser.switch_to.frame(browser.find_element(By.ID, "rp-frame"))
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "figure svg"))
        heading = browser.find_element(By.TAG_NAME, "h1").text
        assert "ms-1" in heading and "day" in heading, heading
        # Styled by its own sheet (the frame's CSP lets it): the report's h2 rule, not the browser's default.
        assert browser.find_element(By.TAG_NAME, "h2").value_of_css_property("border-bottom-style") == "solid"
        browser.switch_to.default_content()
        browser.save_screenshot(str(tmp_path / "reports.png"))
        browser.find_element(By.ID, "rp-close").click()
        wait.until(lambda d: d.find_element(By.ID, "floor").is_displayed())
        assert page_errors(browser) == []


async def test_each_report_served_is_a_row_of_the_console_audit(
    console: tuple[ConsoleServer, str], floor_dsn: str
) -> None:
    """Who made which report, of what period and scope, in which format and when, beside the log-ins and commands.
    Before, only the floor's log had it."""
    server, url = console
    token = log_in(url, floor_dsn, key_id="ann.sup")
    for query in (f"day={DAY}&shift=day&table=ms-1&format=csv", f"from={DAY}&to={DAY}&game=655a"):
        status, _, body = await get(url, token, f"/api/reports/report?{query}")
        assert status == 200, body
    with psycopg.connect(floor_dsn) as conn:
        rows = conn.execute(
            "SELECT key_id, role, table_id, outcome, reason, reply, at <= now() FROM console_audit"
            " WHERE action = 'report' ORDER BY id"
        ).fetchall()
    assert [r[:4] for r in rows] == [
        ("ann.sup", "supervisor", "ms-1", "served"),
        ("ann.sup", "supervisor", None, "served"),
    ]
    shift = shift_period(DAY, server.config.shift("day"), server.config.gaming_day)
    first, second = rows[0][5], rows[1][5]
    assert first["report"] == f"shift-day-{DAY}-ms-1" and first["format"] == "csv" and first["table"] == "ms-1"
    assert first["period"]["start"] == shift.start.isoformat() and first["period"]["end"] == shift.end.isoformat()
    assert second["game"] == "655a" and second["format"] == "html" and second["period"]["first_day"] == str(DAY)
    assert rows[0][4].startswith("csv report of the table ms-1, ") and rows[1][4].startswith(
        "html report of the game 655a"
    )
    assert all(r[6] for r in rows)
