"""The floor's debug line of each archived batch (floor/write_log.py): the retained messages it took, in the order
they came, each naming its table, topic and what it says, so where a device's status stopped is in the log."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from controller.mqtt.contract import DeviceStatus, TableStatus
from floor.archive import WriteResult
from floor.messages import Incoming, parse
from floor.write_log import RETAINED_NAMED, say_written

PREFIX = "wl"
BOOT = "b007" * 8
pytestmark = pytest.mark.usefixtures("structlog_at_debug")


def device(n: int, state: str, seq: int | None) -> Incoming:
    body = DeviceStatus(
        table_id="t1",
        boot_id=BOOT,
        device_id=f"wager_terminal_{n}",
        online=None if state == "unknown" else state == "online",
        state=state,
        since="2026-11-27T04:00:00.000000Z",
        seq=seq,
    ).model_dump_json()
    m = parse(PREFIX, f"{PREFIX}/t1/device/wager_terminal_{n}", body.encode())
    assert isinstance(m, Incoming), m
    return m


def test_a_batch_names_its_retained_messages_in_order_and_counts_past_the_bound() -> None:
    status = TableStatus(table_id="t1", boot_id=BOOT, state="online", ts="2026-11-27T04:00:00.000000Z")
    online = parse(PREFIX, f"{PREFIX}/t1/status", status.model_dump_json().encode())
    assert isinstance(online, Incoming)
    batch = [online, device(2, "unknown", None), device(2, "online", 13), device(2, "offline", 30)]
    with capture_logs() as logs:
        say_written(WriteResult(events_new=3), list(batch))
    [line] = [e for e in logs if e["event"] == "batch archived"]
    assert line["log_level"] == "debug"
    assert (line["messages"], line["events_new"], line["refused"]) == (4, 3, 0)
    assert line["retained"] == [
        "t1 status online",
        "t1 device/wager_terminal_2 unknown seq None",
        "t1 device/wager_terminal_2 online seq 13",
        "t1 device/wager_terminal_2 offline seq 30",
    ]
    assert line["retained_more"] == 0

    flood = [device(n, "online", n) for n in range(1, RETAINED_NAMED + 6)]
    with capture_logs() as logs:
        say_written(WriteResult(), list(flood))
    [line] = [e for e in logs if e["event"] == "batch archived"]
    assert len(line["retained"]) == RETAINED_NAMED and line["retained_more"] == 5
    assert line["retained"][0] == "t1 device/wager_terminal_1 online seq 1"


def test_without_the_batch_no_debug_line() -> None:
    with capture_logs() as logs:
        say_written(WriteResult())
    assert [e for e in logs if e["event"] == "batch archived"] == []
