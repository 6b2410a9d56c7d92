"""`tablectl demo --floor` without --rounds: a key enrolled while a table's round is held for a jackpot validates it
(README: "validate it with your key at the winning table"). The demo admits a key by restarting each table between
rounds, and a held round ends only when someone validates it with that very key: the restart waited for ever, the
table kept its old config and every validation came back `unknown_key`.

Real parts: the demo's own processes (simulated tables on ptys, the link controller, the floor and its console on a
private PostgreSQL), a private mosquitto, the enrolment over the console's HTTP API, the command signed as the
browser signs it. The browser is left out: the console relays the envelope untouched (test_console_browser.py)."""

from __future__ import annotations

import contextlib
import json
import queue
import signal
from pathlib import Path
from typing import Any

import paho.mqtt.client as paho
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from paho.mqtt.enums import CallbackAPIVersion

from controller.supervisor.envelope import sign_command
from tests.broker import Mosquitto, find_mosquitto
from tests.floor.demo_floor import console_address, enrol, start_demo_floor

pytestmark = [pytest.mark.floor, pytest.mark.e2e]
ROOT = Path(__file__).resolve().parents[2]
TABLE = "ms-1"  # linked: the demo's sim deals it thirteen hearts at its second shuffle


def test_a_key_enrolled_while_a_jackpot_is_held_validates_it_and_the_table_plays_on() -> None:
    binary = find_mosquitto()
    assert binary is not None, "mosquitto is not installed: python3 dev.py test installs it"
    broker = Mosquitto.leashed(binary)
    broker.start()
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    replies: queue.Queue[dict[str, Any]] = queue.Queue()
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id="test-demo-floor-held")
    client.on_connect = lambda c, *_: c.subscribe([(f"tablectl/{TABLE}/event", 1), (f"tablectl/{TABLE}/cmd/reply", 1)])
    client.on_message = lambda c, u, m: (events if m.topic.endswith("/event") else replies).put(json.loads(m.payload))
    client.connect(broker.host, broker.port)
    client.loop_start()
    demo = start_demo_floor(broker.url)
    try:
        http = console_address(demo)
        hit = _next_event(events, "progressive.hit")  # the round is held from here until a person validates it
        key = Ed25519PrivateKey.generate()
        enrol(http, key, "late-shift", "floorperson")
        # Restarted at once on its journal, the round still held: before, the table waited for the round to end.
        recovered = _next_event(events, "table.recovered", timeout=90)
        assert recovered["policy"] == "await_jackpot", recovered
        args = {"hit": hit["hit"], "level": hit["level"], "seat": hit["seat"]}
        reply = _until_the_table_answers(client, replies, key, args)
        assert reply["outcome"] == "applied", reply
        paid = _next_event(events, "progressive.paid")
        assert paid["hit"] == hit["hit"], paid
        _next_event(events, "betting.opened")  # the table plays on after the validated round: not closed for good
    finally:
        client.loop_stop()
        client.disconnect()
        demo.send_signal(signal.SIGINT)
        code = demo.wait(timeout=60)
        broker.close()
    assert code == 0


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
