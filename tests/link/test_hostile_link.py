"""Hostile and broken MQTT input to the link controller, a real `tablectl link` process on a real PostgreSQL primary
with a synchronous standby and a real mosquitto: requests and signed commands of every fault class are answered
`ok: false` (or a refused reply) with the reason and a log line, write nothing, and the controller goes on serving
the good requests after them; a duplicate contribution is counted once (605a.8 / 5321.18's stand-in: keyed by table,
round, seat and wager); an answer goes only to the requesting table's own response topic.

Before the fixes, a claim whose rule held a NUL, or a command whose args held one (even unsigned), failed its
transaction with a DataError that stopped the whole controller, and 200,000 "[" on a command topic killed it with a
RecursionError; a contribution of `"cents": true` was counted as 1 cent and `"cents": "500"` as 500.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.config.broker import MAX_PACKET_SIZE
from controller.supervisor.envelope import sign_command
from link.protocol import MAX_REQUEST_BYTES
from tests.broker import Mosquitto, Subscribe, Subscriber, find_mosquitto
from tests.floor.conftest import wait_for
from tests.link.conftest import SUPERVISOR, TABLES, LinkProcess, LinkTable, command, link_on, rows

pytestmark = [pytest.mark.floor, pytest.mark.e2e]


def contribute(round_id: str, *rows_: tuple[Any, Any, Any]) -> dict[str, Any]:
    return {
        "kind": "contribute",
        "round_id": round_id,
        "contributions": [{"seat": s, "wager": w, "cents": c} for s, w, c in rows_],
    }


CLAIM = {"seat": 2, "level": "mega", "percent": 100, "rule": "655a.11(i)(1)(iv)"}
# (request as bytes, what the refusal must say)
BAD_REQUESTS: list[tuple[bytes, str]] = [
    (b"not json", "Invalid JSON"),
    (b"[1, 2]", "Input should be an object"),
    (json.dumps(contribute("r1", (1, "progressive", "500"))).encode(), "contributions.0.cents"),
    (json.dumps(contribute("r1", (1, "progressive", True))).encode(), "contributions.0.cents"),
    (json.dumps(contribute("r1", (1, "progressive", 500.0))).encode(), "contributions.0.cents"),
    (json.dumps(contribute("r1", (1, "progressive", "\uff15\uff10\uff10"))).encode(), "contributions.0.cents"),
    (json.dumps(contribute("r1", ("\u0661", "progressive", 500))).encode(), "contributions.0.seat"),
    (json.dumps(contribute("r1", (1, "progressive", -500))).encode(), "contributions.0.cents"),
    (json.dumps(contribute("r1", (1, "progressive", 2**70))).encode(), "contributions.0.cents"),
    (json.dumps(contribute("r1", (1, "progressive", 500), (1, "progressive", 900))).encode(), "seat 1 twice"),
    (json.dumps({"kind": "contribute", "round_id": "r1", "table_id": "ms-02"}).encode(), "table_id"),
    (json.dumps({"kind": "claim", "round_id": "r1", "claim": {**CLAIM, "rule": "655a\u0000"}}).encode(), "NUL"),
    (json.dumps({"kind": "claim", "round_id": "r1", "claim": {**CLAIM, "rule": "\ud800"}}).encode(), "Invalid JSON"),
    (
        json.dumps({"kind": "paid", "round_id": "r1", "paid": {**CLAIM, "amount_cents": 2**70, "by": "x"}}).encode(),
        "paid",
    ),
    # The broker (the shipped max_packet_size, tests/broker.py) refuses anything over 64 KiB before the link sees
    # it: the largest it passes.
    (json.dumps({"kind": "heartbeat", "pad": "x" * (MAX_PACKET_SIZE - 1024)}).encode(), "pad"),
    (b"[" * (MAX_PACKET_SIZE - 1024), "recursion limit"),
]


@pytest.fixture
def link(mosquitto: Mosquitto, link_db: str, tmp_path: Path, unique_id: str) -> Iterator[tuple[LinkProcess, str]]:
    with link_on(mosquitto, link_db, tmp_path, unique_id) as process:
        yield process, unique_id


def ask_raw(table: LinkTable, payload: bytes, response_topic: str | None = None) -> dict[str, Any] | None:
    """A request as bytes, answered (or not) like LinkTable.ask."""
    corr = uuid.uuid4().bytes
    props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    props.ResponseTopic = table.response_topic if response_topic is None else response_topic
    props.CorrelationData = corr
    table.client.publish(f"{table.base}/request/{table.table_id}", payload, qos=1, properties=props)
    with table.cond:
        table.cond.wait_for(lambda: corr in table.answers, timeout=5)
        return table.answers.pop(corr, None)


def test_bad_requests_and_commands_are_refused_and_the_link_serves_the_good_ones(
    link: tuple[LinkProcess, str], mosquitto: Mosquitto, subscribe: Subscribe, link_db: str
) -> None:
    process, prefix = link
    tables = {t: LinkTable(t, "127.0.0.1", mosquitto.port, prefix) for t in TABLES[:2]}
    one, two = tables["ms-01"], tables["ms-02"]
    try:
        one.until_acked({"kind": "heartbeat"}, within=60)
        for payload, says in BAD_REQUESTS:
            answer = ask_raw(one, payload)
            assert answer is not None and answer["ok"] is False and says in answer["error"], (payload[:80], answer)
        # An answer goes to the requester's own response topic only, never where its ResponseTopic points.
        # An answer goes to the requester's own response topic only, never where its ResponseTopic points: there
        # the link refuses the request, saying why.
        for elsewhere in (two.response_topic, f"{one.base}/state", f"{one.base}/#", ""):
            answer = ask_raw(one, json.dumps({"kind": "heartbeat"}).encode(), elsewhere)
            assert answer is not None and answer["ok"] is False and "the response topic must be" in answer["error"]
        assert not two.answers
        replies = subscribe(f"{prefix}/link/mega/cmd/reply")
        unsigned = sign_command(SUPERVISOR, table_id="mega", verb="close_link", key_id="manager", args={})
        junk_commands = [
            b"[" * (MAX_PACKET_SIZE - 1024),
            json.dumps({**unsigned, "args": {"note": "a\u0000b"}}).encode(),
            json.dumps({**unsigned, "command_id": uuid.uuid4().hex, "args": {"note": "\udc00"}}).encode(),
        ]
        for junk in junk_commands:
            one.client.publish(f"{prefix}/link/mega/cmd/close_link", junk, qos=1)
        replies.wait_until(lambda got: len(got) >= len(junk_commands), 20, "a reply to every bad command")
        assert [m.json()["accepted"] for m in replies.messages] == [False] * len(junk_commands)
        assert all(m.json()["code"] == "malformed" for m in replies.messages), [m.json() for m in replies.messages]
        # (A command over the link's 65536 bytes no longer reaches it: the broker's max_packet_size refuses it first;
        # test_the_links_own_bound_holds_behind_a_broker_without_the_limit checks that bound.)
        # The controller is still up and serves the good requests after the bad ones.
        opened = command("open_link", {})
        one.client.publish(f"{prefix}/link/mega/cmd/open_link", opened, qos=1)
        wait_for(lambda: (one.ask({"kind": "heartbeat"}) or {}).get("lease_ms") == 2000, 20, "a lease")
        good = contribute("ms-01-r1", (1, "progressive", 500), (2, "progressive", 500))
        first = one.until_acked(good)
        again = one.until_acked(good)
        assert (first["new"], first["duplicates"], again["new"], again["duplicates"]) == (2, 0, 0, 2)
        assert first["display"] == again["display"]
        assert rows(link_db, "SELECT table_id, seat, cents FROM link_contribution ORDER BY seat") == [
            ("ms-01", 1, 500),
            ("ms-01", 2, 500),
        ]
        assert rows(link_db, "SELECT count(*) FROM link_hit") == [(0,)]
        assert process.proc is not None and process.proc.poll() is None, process.log()
        log = "".join(p.read_text() for p in process.logs.glob("link-*.log"))  # whole, not log()'s tail
        assert log.count("a table's request refused") >= len(BAD_REQUESTS)
        assert "a request's response topic refused" in log
    finally:
        for t in tables.values():
            t.close()


def padded(body: bytes, size: int) -> bytes:
    """`body` (a JSON object) with spaces after it to `size` bytes: the same JSON, as long as wanted."""
    assert len(body) <= size
    return body + b" " * (size - len(body))


@pytest.fixture
def unlimited_broker() -> Iterator[Mosquitto]:
    """A broker configured without the shipped packet limit (mosquitto's own default, 256 MB): the broker the link's
    own bound is there for (defence in depth), since the shipped limit refuses such a packet before the link sees it."""
    binary = find_mosquitto()
    assert binary is not None, "mosquitto is not installed (python3 dev.py test installs it)"
    broker = Mosquitto.leashed(binary)
    shipped = broker.config.read_text()
    broker.config.write_text(shipped.replace(f"max_packet_size {MAX_PACKET_SIZE}\n", ""))
    assert "max_packet_size" not in broker.config.read_text()
    try:
        broker.start()
        yield broker
    finally:
        broker.close()


def test_the_links_own_bound_holds_behind_a_broker_without_the_limit(
    unlimited_broker: Mosquitto, link_db: str, tmp_path: Path, unique_id: str
) -> None:
    """link/protocol.py's MAX_REQUEST_BYTES, on both of the link's inputs: a request or a command one byte over it is
    refused unread, saying its size; one of exactly that size is served. Each oversize message is otherwise good (a
    heartbeat, a signed open_link padded with spaces), so without the bound it would be served: this fails."""
    prefix = unique_id
    with link_on(unlimited_broker, link_db, tmp_path, prefix) as process:
        one = LinkTable("ms-01", "127.0.0.1", unlimited_broker.port, prefix)
        replies = Subscriber(unlimited_broker.host, unlimited_broker.port, [f"{prefix}/link/mega/cmd/reply"])
        try:
            replies.wait_subscribed()
            one.until_acked({"kind": "heartbeat"}, within=60)
            heartbeat = json.dumps({"kind": "heartbeat"}).encode()
            over = ask_raw(one, padded(heartbeat, MAX_REQUEST_BYTES + 1))
            assert over is not None and over["ok"] is False, over
            assert f"request of {MAX_REQUEST_BYTES + 1} bytes, over the {MAX_REQUEST_BYTES}" in over["error"], over
            at = ask_raw(one, padded(heartbeat, MAX_REQUEST_BYTES))
            assert at is not None and at["ok"] is True, at
            opened = command("open_link", {}).encode()
            one.client.publish(f"{prefix}/link/mega/cmd/open_link", padded(opened, MAX_REQUEST_BYTES + 1), qos=1)
            replies.wait_until(lambda got: len(got) >= 1, 20, "the reply to the oversize command")
            refused = replies.messages[0].json()
            assert (refused["accepted"], refused["code"]) == (False, "malformed"), refused
            assert (
                f"{MAX_REQUEST_BYTES + 1} bytes, over the {MAX_REQUEST_BYTES} a command may have" in refused["reason"]
            )
            # Not decoded, so not journaled: the same command at the bound is its first sight, and carried out.
            one.client.publish(f"{prefix}/link/mega/cmd/open_link", padded(opened, MAX_REQUEST_BYTES), qos=1)
            replies.wait_until(lambda got: len(got) >= 2, 20, "the reply to the command at the bound")
            accepted = replies.messages[1].json()
            assert (accepted["accepted"], accepted["verb"]) == (True, "open_link"), accepted
            assert process.proc is not None and process.proc.poll() is None, process.log()
        finally:
            replies.close()
            one.close()


def test_the_links_bound_is_at_most_the_shipped_brokers_packet_limit() -> None:
    """link/protocol.py says why: the link decodes no more than the shipped broker passes."""
    assert MAX_REQUEST_BYTES <= MAX_PACKET_SIZE
