"""Broker drops, stalls and SIGSTOP/SIGCONT are warnings, never error-level tracebacks (issue 12, item 9).

The real daemon (`tablectl demo`, JSON log) plays against its own mosquitto, which the test stops and starts, and
freezes with SIGSTOP past the daemon's keepalive before SIGCONT. Afterwards the log holds no line at error level
and neither of the asyncio reports that used to come with each drop ("_GatheringFuture exception was never
retrieved", "add_writer: bad file descriptor"); each outage is reported as warnings, and the table played on with its
journal intact.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from controller.store.reader import JournalReader
from tests.broker import Mosquitto, Received, Subscriber, find_mosquitto
from tests.e2e.conftest import killed_at_exit, start_demo, stop, table_config

pytestmark = pytest.mark.e2e

PREFIX = "ql"
KEEPALIVE_S = 3  # the table's [mqtt] keepalive_s, so the stall below need not outlast the default 15 s
STALL_SECONDS = 2 * KEEPALIVE_S + 2  # past the keepalive and its ping's wait: given up while the broker is frozen


def _wait_events(sub: Subscriber, table_id: str, after_seq: int, within: float = 60) -> int:
    """Wait for an event newer than any seen so far: the daemon is connected and publishing live again."""
    topic = f"{PREFIX}/{table_id}/event"

    def newest(msgs: list[Received]) -> int:
        return max((int(m.json()["seq"]) for m in msgs if m.topic == topic), default=0)

    sub.wait_until(lambda msgs: newest(msgs) > after_seq, within, f"an event after seq {after_seq}")
    return newest(sub.messages)


def test_broker_drops_and_stalls_log_warnings_only(tmp_path: Path, table_id: str) -> None:
    binary = find_mosquitto()
    assert binary is not None
    broker = Mosquitto.leashed(binary)  # on the leash: gone with this run, however it ends
    broker.start()
    sub = Subscriber(broker.host, broker.port, [f"{PREFIX}/{table_id}/#"])
    log = tmp_path / "daemon.log"
    try:
        sub.wait_subscribed()
        config = table_config(tmp_path, table_id, PREFIX)
        text = config.read_text().replace(
            f'prefix = "{PREFIX}"', f'prefix = "{PREFIX}"\nkeepalive_s = {KEEPALIVE_S}', 1
        )
        config.write_text(text)
        proc = start_demo(config, tmp_path / "j.sqlite", broker.url, log)
        with killed_at_exit(proc):
            n = _wait_events(sub, table_id, 20)
            for _ in range(2):
                n = _wait_events(sub, table_id, n)
            broker.stop()  # a drop
            broker.start()
            sub.wait_subscribed(2)
            n = _wait_events(sub, table_id, n)
            broker.stop(kill=True)  # a crash of the broker
            broker.start()
            sub.wait_subscribed(3)
            n = _wait_events(sub, table_id, n)
            assert broker.proc is not None
            broker.proc.send_signal(signal.SIGSTOP)  # a stall: the TCP connection stays, nothing answers
            time.sleep(STALL_SECONDS)  # the scenario's length, not synchronisation
            before = len(sub.messages)
            broker.proc.send_signal(signal.SIGCONT)
            # What the frozen broker still held arrives first; the daemon's new connection says "online".
            sub.wait_until(
                lambda msgs: any(m.topic.endswith("/status") and m.json()["state"] == "online" for m in msgs[before:]),
                timeout=90,
                what="the daemon connected again after the stall",
            )
            n = _wait_events(sub, table_id, n, within=90)
            assert stop(proc) == 0
        # The journal is intact. (Delivery across a broker that restarts without persistence is not this test's:
        # the broker forgets what it acknowledged but had not yet passed on; tests/e2e/test_kill9_recovery.py
        # and the fault campaign check delivery with a broker that stays up.)
        with JournalReader(tmp_path / "j.sqlite") as reader:
            assert reader.verify().ok
    finally:
        sub.close()
        broker.close()
    lines = log.read_text(errors="replace").splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    others = [line for line in lines if not line.startswith("{")]
    assert len(others) == 1 and others[0].endswith("round(s) played"), others[:5]  # the demo's goodbye alone
    errors = [r for r in records if r.get("level") in ("error", "critical", "exception")]
    assert errors == [], errors[:5]
    text = "\n".join(lines)
    for noise in ("never retrieved", "bad file descriptor", "Traceback"):
        assert noise not in text, noise
    warnings = [r["event"] for r in records if r.get("level") == "warning"]
    assert warnings.count("mqtt connection lost") >= 2, warnings
