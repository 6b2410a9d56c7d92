"""`tablectl demo --floor` without --rounds, on a mosquitto of the test's: a key enrolled while a table's round is held
for a jackpot validates it (README: "validate it with your key at the winning table"). The demo admits a key by
restarting each table between rounds, and a held round ends only when someone validates it with that very key: the
restart waited for ever, the table kept its old config and every validation came back `unknown_key`. A key enrolled
at the demo's console is a supervisor of the link too.

Both tests read one demo (`demo`, a module fixture on one worker: its start is some 7 s of the CI machine's time), in
this order: the jackpot first, as the demo's seed deals it; the link's supervisor after, whose enrolment restarts the
link and the tables again. The demo's exit on SIGINT (status 0) is checked when the module is done.

Real parts: the demo's own processes (simulated tables on ptys, the link controller, the floor and its console on a
private PostgreSQL), a private mosquitto, the enrolment over the console's HTTP API, the command signed as the
browser signs it. The browser is left out: the console relays the envelope untouched (test_console_browser.py)."""

from __future__ import annotations

import contextlib
import json
import queue
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paho.mqtt.client as paho
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from paho.mqtt.enums import CallbackAPIVersion

from controller.supervisor.envelope import sign_command
from tests.broker import Mosquitto, find_mosquitto
from tests.floor.demo_floor import console_address, enrol, start_demo_floor

# One worker runs the module: its tests share the demo (the module fixture).
pytestmark = [pytest.mark.floor, pytest.mark.e2e, pytest.mark.xdist_group("demo_floor_held")]
ROOT = Path(__file__).resolve().parents[2]
TABLE = "ms-1"  # linked: the demo's sim deals it thirteen hearts at its second shuffle


@dataclass
class Demo:
    """The demo's process, its broker, the console's host:port, and what a client of the test heard of TABLE."""

    process: subprocess.Popen[str]
    broker: Mosquitto
    client: paho.Client
    http: str
    events: queue.Queue[dict[str, Any]]
    replies: queue.Queue[dict[str, Any]]


@pytest.fixture(scope="module")
def demo() -> Iterator[Demo]:
    binary = find_mosquitto()
    assert binary is not None, "mosquitto is not installed: python3 dev.py test installs it"
    broker = Mosquitto.leashed(binary)  # on the leash: gone with this run, however it ends
    broker.start()
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    replies: queue.Queue[dict[str, Any]] = queue.Queue()
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id="test-demo-floor-held")
    client.on_connect = lambda c, *_: c.subscribe([(f"tablectl/{TABLE}/event", 1), (f"tablectl/{TABLE}/cmd/reply", 1)])
    client.on_message = lambda c, u, m: (events if m.topic.endswith("/event") else replies).put(json.loads(m.payload))
    client.connect(broker.host, broker.port)
    client.loop_start()
    process = start_demo_floor(broker.url)
    try:
        yield Demo(process, broker, client, console_address(process), events, replies)
    finally:
        client.loop_stop()
        client.disconnect()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
        broker.close()
    assert code == 0


def test_a_key_enrolled_while_a_jackpot_is_held_validates_it_and_the_table_plays_on(demo: Demo) -> None:
    events = demo.events
    hit = _next_event(events, "progressive.hit")  # the round is held from here until a person validates it
    key = Ed25519PrivateKey.generate()
    enrol(demo.http, key, "late-shift", "floorperson")
    # Restarted at once on its journal, the round still held: before, the table waited for the round to end.
    recovered = _next_event(events, "table.recovered", timeout=90)
    assert recovered["policy"] == "await_jackpot", recovered
    args = {"hit": hit["hit"], "level": hit["level"], "seat": hit["seat"]}
    reply = _until_the_table_answers(demo.client, demo.replies, key, args)
    assert reply["outcome"] == "applied", reply
    paid = _next_event(events, "progressive.paid")
    assert paid["hit"] == hit["hit"], paid
    _next_event(events, "betting.opened")  # the table plays on after the validated round: not closed for good


def _next_event(events: queue.Queue[dict[str, Any]], kind: str, timeout: float = 180) -> dict[str, Any]:
    """The payload of the table's next event of `kind` (failure bound only: a linked hit comes within three rounds)."""
    while True:
        try:
            message = events.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no {kind} from {TABLE} within {timeout} s") from None
        if message.get("type") == kind:
            payload: dict[str, Any] = message["payload"]
            return payload


def _until_the_table_answers(
    client: paho.Client, replies: queue.Queue[dict[str, Any]], key: Ed25519PrivateKey, args: dict[str, Any]
) -> dict[str, Any]:
    """Signs validate_jackpot until the table answers it (a command sent before the restarted table subscribed is not
    heard: each try waits for its reply or 2 s); its reply."""
    for _ in range(30):
        env = sign_command(key, table_id=TABLE, verb="validate_jackpot", key_id="late-shift", args=args)
        client.publish(f"tablectl/{TABLE}/cmd/validate_jackpot", json.dumps(env), qos=1)
        with contextlib.suppress(queue.Empty):
            while (got := replies.get(timeout=2)).get("command_id") != env["command_id"]:
                pass
            return got
    raise AssertionError(f"{TABLE} never answered validate_jackpot")


def test_a_key_enrolled_at_the_demos_console_is_a_supervisor_of_the_link_too(demo: Demo) -> None:
    """The demo admits every key enrolled in its console (loopback only): into the tables' configs and the link's
    [[supervisors]], the link restarted on its database. A command the key signs then reaches the link's verb itself
    (refused there for naming no hit), not `unknown_key`."""
    key = Ed25519PrivateKey.generate()
    enrol(demo.http, key, "night-shift", "supervisor")
    reply = _until_the_link_knows(demo.broker, key)
    assert reply["code"] == "refused", reply
    assert "no claimed progressive hit at ms-1 round none seat 1" in str(reply["reason"])


def _until_the_link_knows(broker: Mosquitto, key: Ed25519PrivateKey) -> dict[str, Any]:
    """Signs validate_jackpot for a hit that does not exist until the restarted link judges it (each try waits for its
    reply or 2 s): its reply."""
    base = "tablectl/link/floor-demo-mega"
    replies: queue.Queue[dict[str, Any]] = queue.Queue()
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id="test-demo-floor-enrol")
    client.on_connect = lambda c, *_: c.subscribe(f"{base}/cmd/reply", qos=1)
    client.on_message = lambda c, u, m: replies.put(json.loads(m.payload))
    client.connect(broker.host, broker.port)
    client.loop_start()
    try:
        last: dict[str, Any] = {}
        for _ in range(60):
            args = {"table_id": "ms-1", "round_id": "none", "seat": 1, "level": "progressive"}
            env = sign_command(
                key, table_id="floor-demo-mega", verb="validate_jackpot", key_id="night-shift", args=args
            )
            client.publish(f"{base}/cmd/validate_jackpot", json.dumps(env), qos=1)
            with contextlib.suppress(queue.Empty):
                while (got := replies.get(timeout=2)).get("command_id") != env["command_id"]:
                    pass
                last = got
                if got["code"] != "unknown_key":
                    return got
        raise AssertionError(f"the link never took the enrolled key: {last}")
    finally:
        client.loop_stop()
        client.disconnect()
