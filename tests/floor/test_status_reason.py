"""Why a table is degraded reaches the floor (docs/floor.md, "The live model"; docs/mqtt.md, `status`): the retained
status's `reason` is archived with it (`statuses.reason`), kept in the live model escaped and bounded, and shown on the
console's tile and table page and by `tablectl floor status` (text and --json); a status without one (the table back
online) clears it everywhere. Before, the floor kept the state alone: a supervisor saw "degraded" and not why. A table
not online (degraded, offline, lost) is also an alert on the console's list with the reason, and among `floor
status`'s alerts, until its next status says online; before, a degraded one raised none.

Real parts: a real mosquitto and PostgreSQL, the floor service with its console in this process, `tablectl floor
status` as the subprocess a person runs, Debian's headless Chromium through chromium-driver with an approved key's
session. The status is the table's own (controller/mqtt/messages.py's status_message, the reason of a birth held back
as too large, controller/mqtt/limits.py), published retained as the table publishes it; a forged table's markup and
ESC ride in the reason, as a publisher's text may.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt
import psycopg
import pytest

from controller.mqtt.contract import TableEvent, TableStatus
from controller.mqtt.limits import stale_reason
from controller.mqtt.messages import status_message
from floor.config import parse_floor_config
from floor.console.alerts import table_alerts
from floor.console.views import FloorView
from floor.live import STATUS_REASON_SHOWN, TableLive, status_reason
from floor.service import FloorService
from tests.broker import Mosquitto, free_port, fresh_id
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.conftest import floor_toml
from tests.floor.console_login import browser_logged_in
from tests.floor.service_running import running, until
from tests.tablectl_runs import tablectl

pytestmark = [pytest.mark.e2e, pytest.mark.floor, pytest.mark.browser]
BOOT = "30a60036e34e4d07894d16be2e379b66"
FORGED = ' <img src="x" onerror="window.pwned = 1">\x1b[2J'
REASON = stale_reason("birth", 70_123, 65_536) + FORGED
SHOWN = REASON.replace("\x1b", "\\x1b")  # as controller/core/shown.py escapes it; the markup stays text


def test_the_reason_is_escaped_bounded_and_cleared_by_the_next_status() -> None:
    live = TableLive("t1")
    live.apply_status(TableStatus.model_validate_json(status_message("degraded", "t1", BOOT, REASON)))
    assert (live.state, live.reason) == ("degraded", SHOWN)
    long = status_message("degraded", "t1", BOOT, "\u202e" + "x" * 5000)
    live.apply_status(TableStatus.model_validate_json(long))
    assert live.reason is not None and len(live.reason) == STATUS_REASON_SHOWN and live.reason.startswith("\\u202e")
    assert live.reason.endswith("x\u2026")
    live.apply_status(TableStatus.model_validate_json(status_message("online", "t1", BOOT)))
    stored = live.to_json()  # as floor_tables.live holds it
    assert (stored["state"], stored["reason"]) == ("online", None)
    assert status_reason("") is None
    # A live model stored before the field reads back with none.
    assert TableLive.from_json({"table_id": "t1", "state": "degraded"}).reason is None


def _status(live: TableLive, state: str, reason: str | None, now: str) -> list[tuple[str, str, str, str]]:
    """The table's alerts after this status, as the console lists them: (kind, key, since, text)."""
    live.apply_status(TableStatus.model_validate_json(status_message(state, "t1", BOOT, reason)), now)
    view = FloorView(live={"t1": live})
    return [(a["kind"], a["key"], a["since"], a["text"]) for a in table_alerts(view.tile("t1", datetime.now(UTC)))]


def test_a_degraded_lost_or_offline_table_is_an_alert_with_its_reason_until_it_is_back_online() -> None:
    live = TableLive("t1")
    opened = {"event_id": "t1-1", "table_id": "t1", "boot_id": BOOT, "seq": 1, "ts": "2026-11-27T01:00:00.000000Z"}
    opened |= {"round_id": None, "type": "table.opened", "rule": "655a.4", "payload": {"chapter": "655a"}}
    live.apply_event(TableEvent.model_validate(opened))
    assert _status(live, "online", None, "2026-11-27T02:00:00.000000Z") == []
    t0, t1, t2 = (f"2026-11-27T02:0{i}:00.000000Z" for i in (1, 2, 3))
    # Timed from the floor's hearing it, not the table's last event (an hour before).
    assert _status(live, "degraded", REASON, t0) == [("degraded", "degraded", t0, f"degraded: {SHOWN}")]
    # Another reason in the same state is the same alert, still timed from the first; the text says the latest why.
    assert _status(live, "degraded", "task ingest down", t1) == [
        ("degraded", "degraded", t0, "degraded: task ingest down")
    ]
    assert _status(live, "online", None, t1) == []
    # The broker's last will (no reason) and a stop by a fault (its reason): the offline kind, as before, with why.
    assert _status(live, "lost", None, t1) == [("offline", "lost", t1, "lost")]
    assert _status(live, "offline", "journal: disk full", t2) == [
        ("offline", "offline", t2, "offline: journal: disk full")
    ]
    assert _status(live, "online", None, t2) == []
    # A live model stored before state_since was kept: the alert is timed from the last event, as the offline one was.
    old = TableLive.from_json({**live.to_json(), "state": "degraded", "state_since": None, "reason": "x"})
    alerts = table_alerts(FloorView(live={"t1": old}).tile("t1", datetime.now(UTC)))
    assert [(a["kind"], a["since"], a["text"], a["rank"], a.get("verb")) for a in alerts] == [
        ("degraded", "2026-11-27T01:00:00.000000Z", "degraded: x", 1, None)
    ]


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1200,900", {"browser": "ALL"}) as driver:
        yield driver


def floor_status(config: Path, *json_flag: str) -> str:
    done = tablectl("floor", "--config", config, "status", *json_flag)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_a_degraded_tables_reason_reaches_the_archive_the_console_and_floor_status(
    mosquitto: Mosquitto, floor_dsn: str, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    prefix = fresh_id("reason")
    client_id = f"floor-{free_port()}"
    text = floor_toml(floor_dsn, mosquitto.url, prefix, client_id, '[console]\nlisten = "127.0.0.1:0"\n')
    config = tmp_path / "floor.toml"
    config.write_text(text)
    service = FloorService(parse_floor_config(text, str(config)))
    wait = waiting(browser, 60)

    async def publish(state: str, reason: str | None = None) -> None:
        async with aiomqtt.Client("127.0.0.1", mosquitto.port) as mqtt:
            body = status_message(state, "t1", BOOT, reason)
            await mqtt.publish(f"{prefix}/t1/status", body, qos=1, retain=True)
        await until(floor_dsn, f"SELECT count(*) FROM statuses WHERE state = '{state}'", 1, f"the {state} status")

    def tile_reason() -> list[str]:
        return [e.text for e in browser.find_elements(By.CSS_SELECTOR, '.tile[data-table="t1"] .reason')]

    def alerts() -> list[tuple[str | None, str | None, str]]:
        # textContent: the list is drawn (and kept live) while the table's page hides it.
        found = browser.find_elements(By.CSS_SELECTOR, "#alerts li.alert")
        return [
            (a.get_attribute("data-kind"), a.get_attribute("data-table"), str(a.get_attribute("textContent")))
            for a in found
        ]

    def field(name: str) -> str:
        return str(browser.find_element(By.CSS_SELECTOR, f'#tv-now dd[data-field="{name}"]').text)

    async with running(service, console=True):
        assert service.console is not None
        origin = service.console.url.rstrip("/")
        await publish("degraded", REASON)
        with psycopg.connect(floor_dsn) as conn:
            row = conn.execute("SELECT state, reason FROM statuses WHERE table_id = 't1'").fetchone()
        assert row == ("degraded", REASON)  # the archive keeps it as received

        text_out = await asyncio.to_thread(floor_status, config)
        [line] = [x for x in text_out.splitlines() if x.startswith("t1 ")]
        assert line.endswith(f" degraded: {SHOWN}") and "\x1b" not in text_out  # the alerts column: the state, why
        [tile] = json.loads(await asyncio.to_thread(floor_status, config, "--json"))
        assert (tile["state"], tile["reason"]) == ("degraded", SHOWN) and tile["state_since"]

        await asyncio.to_thread(browser_logged_in, browser, origin, floor_dsn)
        await asyncio.to_thread(browser.get, origin + "/")
        await asyncio.to_thread(wait.until, lambda d: tile_reason() == [SHOWN])
        # The alert list says it too, with why: the only alert of the floor, a supervisor not on the tile sees it.
        [(kind, table, said)] = alerts()
        assert (kind, table) == ("degraded", "t1") and f"degraded: {SHOWN}" in said and "\x1b" not in said
        assert browser.find_elements(By.CSS_SELECTOR, "#alerts img") == []
        node = browser.find_element(By.CSS_SELECTOR, '.tile[data-table="t1"]')
        assert "degraded" in str(node.get_attribute("class")) and node.find_elements(By.CSS_SELECTOR, "img") == []
        await asyncio.to_thread(node.click)
        await asyncio.to_thread(wait.until, lambda d: field("reason") == SHOWN)
        assert field("state") == "degraded"

        # Back online: the status carries no reason, and every place drops the last one's, live on the open page.
        await publish("online")
        await asyncio.to_thread(wait.until, lambda d: field("state") == "online")
        assert field("reason") == "-"
        await asyncio.to_thread(wait.until, lambda d: alerts() == [])  # cleared live, by the same update
        await asyncio.to_thread(browser.get, origin + "/")
        await asyncio.to_thread(wait.until, lambda d: d.find_elements(By.CSS_SELECTOR, '.tile[data-table="t1"]'))
        assert tile_reason() == []
        [line] = [x for x in (await asyncio.to_thread(floor_status, config)).splitlines() if x.startswith("t1 ")]
        assert "online" in line and "degraded" not in line and line.endswith(" ok")
        [tile] = json.loads(await asyncio.to_thread(floor_status, config, "--json"))
        assert (tile["state"], tile["reason"]) == ("online", None)

        # The broker's last will (lost, no reason): an alert of the offline kind, live on the open page, and in
        # `floor status`'s alerts.
        await publish("lost")
        await asyncio.to_thread(wait.until, lambda d: [(k, t) for k, t, _ in alerts()] == [("offline", "t1")])
        [line] = [x for x in (await asyncio.to_thread(floor_status, config)).splitlines() if x.startswith("t1 ")]
        assert line.endswith(" lost") and alerts()[0][2].startswith("t1lost")
        assert browser.execute_script("return window.pwned === undefined") is True
        assert page_errors(browser) == []
