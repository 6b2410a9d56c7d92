"""The console's reset_meter (605a.7(a)(5)) and cash_out_account (605a.2(d)(1)) buttons in a real browser: Debian's
headless Chromium through chromium-driver, against `tablectl floor` (its console on a loopback port), a real
PostgreSQL, a real mosquitto and a real table (run_table in a thread of this process: simulated devices on real ptys,
a real journal file), whose supervisor key was made in the browser.

The table offers the progressive (mega, major, minor: 655a.12(c)) and a wager terminal at each seat; nobody deals, so
the table waits in betting, between rounds, where a reset is allowed. A player buys in at seat 2's terminal and the
terminal goes offline: the seat's account holds $75.00 that only an attendant can pay.

The floor, the browser and the table are module fixtures, started once for the tests below (each test leaves the
supervisor logged in).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
import pytest

from controller.config.table import TableConfig, demo_config
from controller.core.events import JournaledEvent
from floor.console.plumbing import COOKIE
from tests.broker import Mosquitto, fresh_id
from tests.commands.conftest import Daemon
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.conftest import console_floor, wait_for
from tests.floor.console_login import log_in, session_known

# One worker runs the module: its tests share one stage (tables, a floor, a console), made once.
pytestmark = [pytest.mark.floor, pytest.mark.e2e, pytest.mark.browser, pytest.mark.xdist_group("console_reset_cashout")]
TABLE = "con-rc-1"
SEAT = 2
BOUGHT = 7_500  # cents: the player's buy-in at seat 2's terminal before it went dark
SUP = "sue.sup"
T = TypeVar("T")


@dataclass
class Stage:
    browser: Any
    origin: str
    dsn: str
    table: Daemon
    loop: asyncio.AbstractEventLoop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` in the table's loop (its thread) and wait for it."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def event(self, kind: str, after: int = 0) -> JournaledEvent:
        return self.run(self.table.wait_for(lambda e: e.type == kind, after, kind))

    def last_seq(self) -> int:
        return self.table.events[-1].seq

    def wait(self) -> Any:

        # The table view is drawn again at each update of its tile: an element found a moment ago may be gone.
        return waiting(self.browser, 60)

    def as_supervisor(self) -> None:
        """The supervisor's own session again (log-in signed with the browser's key), the table's view open."""
        from selenium.webdriver.common.by import By

        # The whoami line names the session once the page knows it (before, it says it is loading).
        self.wait().until(session_known)
        if not self.browser.find_element(By.ID, "whoami").text.startswith(f"{SUP} (supervisor)"):
            self.browser.get(self.origin + "/")
            # A log-out clicked before the page knows its session would carry no CSRF token and be refused.
            self.wait().until(session_known)
            assert self.browser.find_element(By.ID, "logout-button").is_displayed()
            self.browser.execute_script("document.getElementById('logout-button').click();")
            self.wait().until(lambda d: d.find_element(By.ID, "login-button").is_displayed())
            self.browser.find_element(By.ID, "login-button").click()
            self.wait().until(lambda d: d.find_element(By.ID, "whoami").text.startswith(f"{SUP} (supervisor)"))
        self.open_table()

    def open_table(self) -> None:
        from selenium.webdriver.common.by import By

        if self.browser.find_element(By.ID, "table-view").is_displayed():
            self.browser.find_element(By.ID, "tv-close").click()
        self.wait().until(
            lambda d: d.execute_script(
                "const t = document.querySelector(arguments[0]); if (!t) return false; t.click(); return true;",
                f'.tile[data-table="{TABLE}"]',
            )
        )
        self.wait().until(lambda d: d.find_element(By.ID, "tv-title").text == TABLE)
        # The actions are drawn once the table's view has arrived from the server.
        self.wait().until(lambda d: d.find_elements(By.CSS_SELECTOR, "#tv-actions button"))

    def press(self, row: str, values: dict[str, str]) -> None:
        """Fill the action row's fields and press its button, in one step: an update of the tile between the two
        would draw the row again, empty."""
        self.wait().until(
            lambda d: d.execute_script(
                "const row = document.querySelector(arguments[0]); if (!row) return false;"
                " for (const [k, v] of Object.entries(arguments[1])) row.querySelector(`[name=${k}]`).value = v;"
                " row.querySelector('button').click(); return true;",
                row,
                values,
            ),
            f"no action row {row}",
        )

    def reply(self, outcome: str) -> str:
        from selenium.webdriver.common.by import By

        self.wait().until(lambda d: d.find_element(By.ID, "reply").get_attribute("data-outcome") == outcome)
        return str(self.browser.find_element(By.ID, "reply").text)

    def confirm(self, rule: str) -> str:
        from selenium.webdriver.common.by import By

        assert self.browser.find_element(By.ID, "confirm-rule").text == rule
        text = str(self.browser.find_element(By.ID, "confirm-text").text)
        # The previous reply's outcome is cleared, so the wait below sees this command's.
        self.browser.execute_script("document.getElementById('reply').removeAttribute('data-outcome');")
        self.browser.find_element(By.ID, "confirm-ok").click()
        return text


def table_config(prefix: str, entry: dict[str, str]) -> TableConfig:
    """The demo table (the progressive on paytable C) with a wager terminal at each seat (655a.7(d)(5)), obeying
    the key the browser made."""
    data = demo_config().model_dump()
    data["table_id"] = TABLE
    data["mqtt"]["prefix"] = prefix
    data["game"].update(five_card_hand_bonus=True, five_card_hand_bonus_wager_cents=100)
    data["devices"]["wager_terminals"] = [
        {"driver": "reference-wager-terminal", "port": "simulated", "seat": n}
        for n in range(1, data["game"]["seats"] + 1)
    ]
    data["supervisors"] = [entry]
    return TableConfig.model_validate(data)


async def fund_then_unplug(table: Daemon) -> None:
    """A player buys in at seat 2's terminal, the dealer confirms, the terminal goes dark (605a.2(d)(1)'s case)."""
    await table.wait_for(lambda e: e.type == "betting.opened", what="betting open")
    assert table.sims is not None
    terminal = table.sims.terminals[SEAT]
    await terminal.buy_in(BOUGHT, "cash")
    await table.wait_for(lambda e: e.type == "account.requested", what="the buy-in asked for")
    await terminal.dealer_confirm("buy_in")
    bought = await table.wait_for(lambda e: e.type == "account.bought_in", what="the buy-in")
    assert bought.payload["balance"] == BOUGHT
    await terminal.unplug()
    await table.wait_for(
        lambda e: e.type == "device.offline" and e.payload["device_id"] == f"wager_terminal_{SEAT}",
        bought.seq,
        "the terminal offline",
    )


@pytest.fixture(scope="module")
def stage(mosquitto: Mosquitto, pg_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stage]:
    from selenium.webdriver.common.by import By

    tmp = tmp_path_factory.mktemp("reset_cashout")
    prefix = fresh_id("conrc")
    dsn = pg_cluster.create_database("console_reset_cashout")
    floor, port = console_floor(tmp, dsn, mosquitto.url, prefix)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="table", daemon=True)
    thread.start()
    table: Daemon | None = None
    try:
        with chromium("1400,1000", {"browser": "ALL"}) as browser:
            wait_for(lambda: "console at http://" in floor.log(), 60, f"the console; floor log:\n{floor.log()}")
            wait_for(lambda: "subscribed to the tables" in floor.log(), 30, "the floor's subscription")
            origin = f"http://127.0.0.1:{port}"
            browser.get(origin + "/")
            # The supervisor's key is made in this browser; the administrator approves it (as `console approve`
            # does: tests/floor/test_console_browser.py drives the command) and lists it in the table's config.
            from selenium.webdriver.support import expected_conditions as ec

            wait = waiting(browser, 60)
            wait.until(ec.visibility_of_element_located((By.ID, "enrol-key-id"))).send_keys(SUP)
            browser.find_element(By.ID, "enrol-role").send_keys("supervisor")
            browser.find_element(By.ID, "enrol-button").click()
            entry = wait.until(ec.visibility_of_element_located((By.ID, "entry"))).text
            public = re.search(r'public_key = "([A-Za-z0-9+/=]{44})"', entry)
            assert public is not None, entry
            with psycopg.connect(dsn) as conn:
                conn.execute("UPDATE console_keys SET approved_at = now() WHERE key_id = %s", (SUP,))
            browser.find_element(By.ID, "login-button").click()
            wait.until(ec.text_to_be_present_in_element((By.ID, "whoami"), f"{SUP} (supervisor)"))

            made = {"key_id": SUP, "role": "supervisor", "public_key": public.group(1)}

            async def start() -> Daemon:
                d = Daemon(
                    table_config(prefix, made), tmp / "journal.sqlite", mosquitto.url, terminals=True, dealer=False
                )
                await d.__aenter__()
                await fund_then_unplug(d)
                return d

            table = asyncio.run_coroutine_threadsafe(start(), loop).result(120)
            yield Stage(browser, origin, dsn, table, loop)
    finally:
        if table is not None:
            asyncio.run_coroutine_threadsafe(table.__aexit__(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
        floor.stop()
        print(floor.log()[-3000:])


def audit(dsn: str, verb: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT outcome, key_id, reason FROM console_audit WHERE action = 'command' AND verb = %s ORDER BY id",
            (verb,),
        ).fetchall()


def test_reset_meter_from_the_table_view_reaches_the_table_and_shows_its_reply(stage: Stage) -> None:
    from selenium.webdriver.common.by import By

    stage.as_supervisor()
    row = '#tv-actions .action:has(button[data-verb="reset_meter"])'
    before = stage.last_seq()
    stage.press(row, {"level": "major", "reason": "sign replaced; meter test after the repair (ticket PS-7)"})
    assert "Reset the progressive meter" in stage.confirm("605a.7(a)(5)")
    shown = stage.reply("applied")
    assert shown.startswith(f"reset_meter at {TABLE}: applied")

    # The table did it, on the browser's key: the display taken off into the removed meter, the level reseeded.
    reset = stage.event("meter.reset", before)
    assert reset.rule == "605a.7(a)(5)"
    assert reset.payload["level"] == "major" and reset.payload["authorised_by"] == SUP
    assert reset.payload["reason"] == "sign replaced; meter test after the repair (ticket PS-7)"
    stage.event("meter.reseeded", reset.seq)
    accepted = next(e for e in stage.table.events if e.type == "command.accepted" and e.seq > before)
    assert (accepted.payload["verb"], accepted.payload["key_id"]) == ("reset_meter", SUP)
    # The floor archived it and the live log shows it with its rule.
    stage.wait().until(
        lambda d: d.find_elements(By.CSS_SELECTOR, f'#tv-log li[data-seq="{reset.seq}"][data-type="meter.reset"]')
    )
    assert "[605a.7(a)(5)]" in stage.browser.find_element(By.CSS_SELECTOR, f'#tv-log li[data-seq="{reset.seq}"]').text
    assert audit(stage.dsn, "reset_meter")[-1][:2] == ("applied", SUP)
    assert page_errors(stage.browser) == []


def test_a_blank_reason_is_refused_by_the_table_and_the_page_shows_why(stage: Stage) -> None:
    stage.as_supervisor()
    before = stage.last_seq()
    stage.press('#tv-actions .action:has(button[data-verb="reset_meter"])', {"level": "minor", "reason": "   "})
    stage.confirm("605a.7(a)(5)")
    shown = stage.reply("rejected")
    assert "reason is blank" in shown and "why the meter is reset" in shown, shown

    stage.press(f'#tv-actions .action:has(span[data-seat="{SEAT}"])', {"reason": ""})
    stage.confirm("605a.2(d)(1)")
    shown = stage.reply("rejected")
    assert "reason" in shown and "at least 1 character" in shown, shown
    stage.press(f'#tv-actions .action:has(span[data-seat="{SEAT}"])', {"reason": " \t "})
    stage.confirm("605a.2(d)(1)")
    shown = stage.reply("rejected")
    assert "reason is blank" in shown and "terminal cannot cash out" in shown, shown

    # Nothing moved at the table: no reset, no payout (each refusal is journaled as command.rejected).
    assert not [e for e in stage.table.events if e.seq > before and e.type in ("meter.reset", "account.cashed_out")]
    assert [r[0] for r in audit(stage.dsn, "cash_out_account")][-2:] == ["rejected", "rejected"]
    assert audit(stage.dsn, "reset_meter")[-1][0] == "rejected"


def test_cash_out_account_for_the_offline_terminal_pays_the_seat_by_an_attendant(stage: Stage) -> None:
    from selenium.webdriver.common.by import By

    stage.as_supervisor()
    seat = f'#tv-actions .action:has(span[data-seat="{SEAT}"])'

    # The terminal went offline before the tests began; the floor may archive it after the view opened, when the live
    # stream brings it (an open view that put an older tile back once never showed it: test_console_view_race.py).
    stage.wait().until(lambda d: "terminal offline" in d.find_element(By.CSS_SELECTOR, f"{seat} span").text)
    # A button per seat's terminal; the others are online. Read inside the wait, which reads again when the panel
    # re-rendered between finding a span and reading it (a stale element; seen under two xdist workers).
    others = [f"seat {n}: terminal online" for n in (1, 3, 4, 5, 6)]

    def seats(d: Any) -> list[tuple[str, str]]:
        return [
            (s.get_attribute("data-seat"), s.text)
            for s in d.find_elements(By.CSS_SELECTOR, "#tv-actions span[data-seat]")
        ]

    stage.wait().until(lambda d: len(got := seats(d)) == 6 and [t for n, t in got if n != str(SEAT)] == others)
    before = stage.last_seq()
    why = "terminal 2 offline since 21:40 (ticket TR-118)"
    stage.press(seat, {"reason": why})
    assert "Cash out the seat's game account" in stage.confirm("605a.2(d)(1)")
    shown = stage.reply("applied")
    assert shown.startswith(f"cash_out_account at {TABLE}: applied")

    cashed = stage.event("account.cashed_out", before)
    assert cashed.rule == "605a.2(d)(1)"
    assert {k: cashed.payload[k] for k in ("seat", "amount", "balance", "paid_by", "authorised_by", "reason")} == {
        "seat": SEAT,
        "amount": BOUGHT,
        "balance": 0,
        "paid_by": "attendant",
        "authorised_by": SUP,
        "reason": why,
    }
    assert stage.table.service is not None and stage.table.service.state.accounts.balance(SEAT) == 0
    stage.wait().until(
        lambda d: d.find_elements(
            By.CSS_SELECTOR, f'#tv-log li[data-seq="{cashed.seq}"][data-type="account.cashed_out"]'
        )
    )
    # Again: the account is empty now; the table says so and the page shows it.
    stage.press(seat, {"reason": why})
    stage.confirm("605a.2(d)(1)")
    shown = stage.reply("ignored")
    assert "empty" in shown, shown
    assert [r[0] for r in audit(stage.dsn, "cash_out_account")][-2:] == ["applied", "ignored"]
    assert page_errors(stage.browser) == []


@pytest.mark.parametrize(
    ("role", "offered", "absent"),
    [("floorperson", ["cash_out_account"], ["reset_meter"]), ("technician", [], ["reset_meter", "cash_out_account"])],
)
def test_a_role_not_allowed_sees_no_button_and_the_console_refuses_it_with_the_reason(
    stage: Stage, role: str, offered: list[str], absent: list[str]
) -> None:
    from selenium.webdriver.common.by import By

    browser = stage.browser
    token = log_in(stage.origin, stage.dsn, key_id=f"k.{role}", role=role)
    browser.execute_cdp_cmd("Network.setCookie", {"name": COOKIE, "value": token, "url": stage.origin + "/"})
    try:
        browser.get(stage.origin + "/")
        stage.wait().until(lambda d: d.find_element(By.ID, "whoami").text.startswith(f"k.{role} ({role})"))
        stage.open_table()
        stage.wait().until(lambda d: d.find_elements(By.CSS_SELECTOR, "#tv-actions button"))
        verbs = {b.get_attribute("data-verb") for b in browser.find_elements(By.CSS_SELECTOR, "#tv-actions button")}
        assert set(offered) <= verbs and not set(absent) & verbs, verbs
        # Sent anyway (a page of an older build, a hand-made request): the console refuses it and names who may.
        for verb in absent:
            before = stage.last_seq()
            browser.execute_script(
                "document.getElementById('reply').removeAttribute('data-outcome');"
                "import('/static/commands.js').then((m) => { m.confirmAndSend(arguments[0], arguments[1],"
                " {level: 'major', seat: 2, reason: 'hand-made'}); m.sendPending(); });",
                TABLE,
                verb,
            )
            shown = stage.reply("error")
            assert f"a {role} may not send {verb}; it needs one of:" in shown, shown
            assert "supervisor" in shown
            assert not [e for e in stage.table.events if e.seq > before and e.type.startswith("command.")]
            assert audit(stage.dsn, verb)[-1][:2] == ("refused", f"k.{role}")
    finally:
        stage.as_supervisor()
