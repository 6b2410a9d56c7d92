"""A device fault the table has recovered from leaves the console. A table restarted between a shuffle and its deal
(a kill during betting) found its automated shoe empty (the simulated shoe keeps no cards across a restart), voided
the round (655a.13(f)), reshuffled and dealt on; but the shoe's status keeps its fault until the device comes back
online (controller/mqtt/device_status.py), and a shoe that never went offline never does: `shoe: empty` stayed on the
console, on the tile and in `floor status` for as long as the table ran, its state saying online.

The first test is the floor's live model fed the contract's messages as that table published them (pure); the second
is the table itself: a real `tablectl demo` on simulated devices over ptys, killed during betting and started again on
its journal, through a private mosquitto, archived by `tablectl floor`'s service on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller.mqtt.contract import DeviceStatus, TableEvent
from floor.config import parse_floor_config
from floor.console.alerts import table_alerts
from floor.console.views import FloorView
from floor.live import TableLive
from floor.service import FloorService
from tests.broker import fresh_id, own_mosquitto
from tests.floor.conftest import TableProcess, table_config
from tests.floor.service_running import running

pytestmark = [pytest.mark.floor]
NOW = "2026-11-27T12:00:00.000000Z"


def status(state: str = "online", **fault: Any) -> DeviceStatus:
    return DeviceStatus.model_validate(
        {"table_id": "t1", "boot_id": "b2", "device_id": "shoe", "online": True, "state": state, "since": NOW, **fault}
    )


def completed(seq: int, ts: str) -> TableEvent:
    return TableEvent.model_validate(
        {
            "event_id": f"t1-{seq}",
            "boot_id": "b2",
            "seq": seq,
            "ts": ts,
            "table_id": "t1",
            "round_id": f"t1-r{seq}",
            "type": "round.completed",
            "rule": "655a.7(f)",
            "payload": {},
        }
    )


def device_alerts(live: TableLive) -> list[str]:
    view = FloorView(live={"t1": live})
    return [
        a["text"]
        for a in table_alerts(view.tile("t1", datetime(2026, 11, 27, 12, 5, tzinfo=UTC)))
        if a["kind"] == "device"
    ]


def test_a_fault_passes_once_the_table_completes_a_round_with_the_device_in_service() -> None:
    live = TableLive("t1")
    empty = {
        "fault_code": "empty",
        "fault_detail": "asked for 2 cards, 0 left",
        "fault_at": "2026-11-27T12:00:01.000000Z",
    }
    live.apply_device(status(**empty))
    assert live.faults == {"shoe": "empty"} and device_alerts(live) == ["shoe: empty"]
    live.apply_event(completed(75, "2026-11-27T12:00:40.000000Z"))  # reshuffled and dealt a whole round since
    assert live.faults == {} and device_alerts(live) == []
    # A round completed before a new fault does not pass it; one the engine stopped using stays an alert by state.
    live.apply_device(status(**{**empty, "fault_at": "2026-11-27T12:01:00.000000Z"}))
    assert live.faults == {"shoe": "empty"}
    live.apply_device(status("unusable", **{**empty, "fault_at": "2026-11-27T12:00:02.000000Z"}))
    assert live.faults == {"shoe": "empty"}
    assert TableLive.from_json(live.to_json()).faults == {"shoe": "empty"}  # kept with the live model


def journal(path: Path) -> list[tuple[int, str, str, str]]:
    if not path.exists():
        return []
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return [tuple(r) for r in db.execute("SELECT seq, boot_id, type, payload FROM events ORDER BY seq")]
    except sqlite3.OperationalError:  # its schema not written yet
        return []


@pytest.mark.e2e
async def test_a_table_restarted_during_betting_shows_no_lingering_shoe_fault(floor_dsn: str, tmp_path: Path) -> None:
    table, prefix = fresh_id("t"), fresh_id("shoe")
    with own_mosquitto() as broker:
        config = parse_floor_config(
            f'[database]\ndsn = "{floor_dsn}"\n[mqtt]\nbroker = "{broker.url}"\nprefix = "{prefix}"\n'
            f'client_id = "{fresh_id("floor")}"\n'
        )
        t = TableProcess(
            table, table_config(table, "mississippi-stud.toml", prefix, tmp_path), tmp_path / "j.sqlite", tmp_path,
            broker.url, 50,
        )  # fmt: skip
        # Paced, betting stays open a fifth of a second a round, and 50 rounds give the poll 50 chances: at pace 0 a
        # boot played its 5 rounds in half a second and a stalled CI machine's poll never saw betting open (a CI run).
        t.pace = "0.2"
        async with running(FloorService(config)):
            t.start(1)
            async with asyncio.timeout(60):  # the journal is the only thing to watch: polled
                while not any(r[2] == "betting.opened" for r in journal(t.journal)[-1:]):  # noqa: ASYNC110
                    await asyncio.sleep(0.005)
            assert t.proc is not None
            t.proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(t.proc.wait, 30)
            t.rounds_per_boot, t.pace = 2, "0"
            t.start(2)
            assert await asyncio.to_thread(t.proc.wait, 120) == 0
            rows = journal(t.journal)
            boot = rows[-1][1]
            faults = [r for r in rows if r[1] == boot and r[2] == "device.fault"]
            assert faults and '"code":"empty"' in faults[0][3], "the restarted table's shoe did not run empty"
            last = rows[-1][0]
            async with asyncio.timeout(60):
                while True:
                    with psycopg.connect(floor_dsn) as conn:
                        row = conn.execute("SELECT live FROM floor_tables WHERE table_id = %s", (table,)).fetchone()
                    if row is not None and TableLive.from_json(row[0]).last_seq == last:
                        break
                    await asyncio.sleep(0.05)
        live = TableLive.from_json(row[0])
        assert live.devices["shoe"]["fault_code"] == "empty" and live.devices["shoe"]["state"] == "online"
        assert live.rounds_completed >= 1 and live.faults == {}, live.devices["shoe"]
