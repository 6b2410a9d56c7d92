"""`tablectl demo --floor --rounds N` from the command line: simulated tables, the link controller, the floor service
and its console on a private PostgreSQL and mosquitto it starts; it prints the console's URL and exits 0 once the floor
archived every table's N rounds, with the link's reconciliation (issue 17 item 7, issue 15 item 4)."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from tests.tablectl_runs import TABLECTL, tablectl

pytestmark = [pytest.mark.floor, pytest.mark.e2e]
ROOT = Path(__file__).resolve().parents[2]


def test_demo_floor_plays_n_rounds_and_exits_0() -> None:
    """Each linked $5 wager puts 21 % into the meter (655a.12(c)(3) paytable A): whole multiples of $1.05."""
    argv = ["demo", "--floor", "--rounds", "3", "--seed", "3", "--http", "127.0.0.1:0"]
    done = tablectl(*argv, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "tablectl demo --floor: link floor-demo-mega open: ms-1 and ms-2 on one linked progressive" in out
    assert "open http://127.0.0.1:" in out
    assert "every table played 3 round(s); the floor archived them" in out
    # The link's reconciliation (`tablectl link report`): both linked tables fed the one meter, lir-1 did not.
    summary = re.search(
        r"^link floor-demo-mega open: progressive \$([\d,.]+); contributions (.*?); hits (.*)$", out, re.M
    )
    assert summary is not None, out[-3000:]
    contributed = dict(re.findall(r"(\S+) \$([\d,.]+)", summary.group(2)))
    assert set(contributed) == {"ms-1", "ms-2"}
    # Each linked wager is $5 at 21 % (655a.12(c)(3) paytable A): whole multiples of $1.05, at least one a table.
    for dollars in contributed.values():
        cents = round(float(dollars.replace(",", "")) * 100)
        assert cents > 0 and cents % 105 == 0, summary.group(0)
    # Seed 3 puts a progressive wager on a thirteen-hearts deal at both linked tables: each hit was claimed from the
    # link, validated at its table by the simulated floorperson, and reported paid by the table (no signature at the
    # link), so none is left pending on the signs.
    hits = re.findall(r"(ms-[12]) seat \d \$[\d,.]+ \(([^)]*)\)", summary.group(3))
    assert {t for t, _ in hits} == {"ms-1", "ms-2"}, summary.group(0)
    assert all(state == f"paid, validated by demo-floorperson at {t}" for t, state in hits), summary.group(0)
    assert "the link's books balance" in out


def test_http_without_floor_is_a_usage_error() -> None:
    done = tablectl("demo", "--http", "127.0.0.1:9")
    assert done.returncode == 2 and "--http is for the console of `tablectl demo --floor`" in done.stderr


def test_ctrl_c_stops_the_floor_demo_with_no_error_logged() -> None:
    """Ctrl-C at the terminal signals the demo's whole process group. The private mosquitto was in it and died at once,
    so the floor service, still archiving until the demo stopped it, logged `broker connection lost; reconnecting` at
    error level on a clean stop. A real terminal's Ctrl-C: the demo leads its own session, SIGINT to the group, once
    the tables are playing (a round.completed on the demo's broker, where the floor reads it)."""
    demo = subprocess.Popen(
        [*TABLECTL, "demo", "--floor", "--seed", "3", "--http", "127.0.0.1:0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        assert demo.stdout is not None
        broker = ""
        for line in demo.stdout:  # the floor subscribes (naming its broker) before the URL is printed
            lines.append(line)
            if '"subscribed to the tables"' in line:
                broker = json.loads(line)["broker"]
            if "open http://" in line:
                break
        assert broker.startswith("mqtt://127.0.0.1:"), "".join(lines)[-3000:]
        _until_a_round_completes(broker)
        _floor_commands_read_its_archive(lines)
        os.killpg(demo.pid, signal.SIGINT)
        lines += demo.stdout.readlines()
        code = demo.wait(timeout=60)
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
    output = "".join(lines)
    assert code == 0, output[-3000:]
    logged = [json.loads(line) for line in lines if line.startswith("{")]
    assert logged, output[-3000:]
    assert [e for e in logged if e.get("level") in ("error", "critical")] == [], output[-3000:]


def _floor_commands_read_its_archive(lines: list[str]) -> None:
    """docs/floor.md's `tablectl floor --config F status` and `round`, and `tablectl report`, on the demo's archive: the
    demo wrote its floor config nowhere an operator could give them. It is printed before the URL."""
    said = [line for line in lines if "floor config for `tablectl floor` and `tablectl report`: " in line]
    assert said, "".join(lines)[-3000:]
    config = said[0].rsplit(": ", 1)[1].strip()
    checked = tablectl("floor", "--config", config, "check-config", timeout=60)
    assert checked.returncode == 0 and "database reachable" in checked.stdout, checked.stdout + checked.stderr
    status = tablectl("floor", "--config", config, "status", timeout=60)
    assert status.returncode == 0, status.stdout + status.stderr[-2000:]


def _until_a_round_completes(broker: str) -> None:
    host, port = broker.removeprefix("mqtt://").rsplit(":", 1)
    completed: queue.Queue[str] = queue.Queue()
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id="test-demo-floor-ctrl-c")
    client.on_connect = lambda c, *_: c.subscribe("tablectl/+/event", qos=1)
    client.on_message = lambda c, u, m: completed.put(m.topic) if b'"round.completed"' in m.payload else None
    client.connect(host, int(port))
    client.loop_start()
    try:
        completed.get(timeout=120)  # failure bound only: the tables play a round in seconds
    finally:
        client.loop_stop()
        client.disconnect()
