"""What the link controller refuses is counted by kind where an operator looks: systemd's status line
(`systemctl status tablectl-link`, docs/linked-progressives.md "Refusals"), said at once after a refusal, with or
without a watchdog. Real parts: the link service in the test's loop on a real PostgreSQL primary with a synchronous
standby and a real mosquitto, tables' requests and signed commands over MQTT v5, systemd's notify socket a real
datagram socket. Before, each refusal was logged and answered, and the status line said only `link closed: seq N`.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from typing import Any

import paho.mqtt.client as paho
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from structlog.testing import capture_logs

from floor.config import IngestSection
from floor.refusal_log import SUMMARY
from floor.sdnotify import Notifier
from link.config import parse_link_config
from link.refusals import Refusals
from link.service import LinkService
from link.signs import REFUSALS_EVERY_S
from tests.broker import Mosquitto, Received, Subscribe, fresh_id
from tests.link.conftest import LinkTable, command, link_toml
from tests.systemd.notify import NotifySocket, abstract_socket

pytestmark = [pytest.mark.e2e, pytest.mark.floor]


@pytest.fixture
def notify_socket() -> Iterator[NotifySocket]:
    with abstract_socket("link-refusals") as s:
        yield s


@pytest.fixture
async def link(
    mosquitto: Mosquitto, link_db: str, notify_socket: NotifySocket, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[LinkService, str]]:
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)  # no watchdog: the status line must come all the same
    prefix = fresh_id("lrefused")
    service = LinkService(parse_link_config(link_toml(link_db, mosquitto.url, prefix)), Notifier(notify_socket.address))
    run = asyncio.create_task(service.run())
    try:
        await notify_socket.await_for(lambda n: n.get("READY") == "1", 60, "READY")
        yield service, prefix
    finally:
        service.stop()
        await asyncio.wait({run}, timeout=30)


def raw(client: paho.Client, topic: str, payload: bytes, response_topic: str) -> None:
    props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    props.ResponseTopic = response_topic
    props.CorrelationData = uuid.uuid4().bytes
    client.publish(topic, payload, qos=1, properties=props).wait_for_publish(10)


async def test_refusals_are_counted_by_kind_in_the_status_line(
    link: tuple[LinkService, str], mosquitto: Mosquitto, notify_socket: NotifySocket
) -> None:
    service, prefix = link
    one = LinkTable("ms-01", mosquitto.host, mosquitto.port, prefix)
    try:
        await asyncio.to_thread(one.until_acked, {"kind": "heartbeat"}, 60)  # the link listens and answers
        base = one.base
        raw(one.client, f"{base}/request/ms-01", b"not json", one.response_topic)
        raw(one.client, f"{base}/request/ms-01", b"[1, 2]", one.response_topic)
        # A request over the link's size bound cannot pass the suite's broker, which refuses packets over the same
        # 64 KiB (controller.config.broker.MAX_PACKET_SIZE); tests/link/test_hostile_link.py has the link refuse
        # one on a broker without the limit.
        raw(one.client, f"{base}/request/ms-01", b'{"kind": "heartbeat"}', f"{base}/response/ms-02")  # forged
        raw(one.client, f"{base}/request/zz-99", b'{"kind": "heartbeat"}', f"{base}/response/zz-99")
        # No response topic at all (an MQTT 3.1.1 client, a probe): nowhere to answer, counted under its own kind.
        one.client.publish(f"{base}/request/ms-01", b'{"kind": "heartbeat"}', qos=1).wait_for_publish(10)
        raw(one.client, f"{base}/cmd/close_link", b"[" * 1000, "")
        raw(one.client, f"{base}/cmd/close_link", b"{}", "")
        replayed = command("close_link", {}).encode()
        raw(one.client, f"{base}/cmd/close_link", replayed, "")
        raw(one.client, f"{base}/cmd/close_link", replayed, "")  # the same command again: a replay
        want = (
            "9 refused (command malformed 2, request_malformed 2, command refused 1, command replayed 1, "
            "no_response_topic 1, response_topic 1, table_not_on_link 1): journalctl -u tablectl-link"
        )
        said = await notify_socket.await_for(lambda n: want in n.get("STATUS", ""), 30, "the refusals counted")
        assert said.fields["STATUS"].startswith("link closed: seq ")
        assert service.status_line().endswith(want)
    finally:
        one.close()


def test_the_counts_read_commonest_first_and_nothing_while_none() -> None:
    r = Refusals(clock=lambda: "2026-11-26T12:00:00+00:00")
    assert (r.text(), r.total, r.last_kind) == ("", 0, None)
    r.note("claim")
    r.note("command", "bad_signature", topic="p/link/mega/cmd/open_link", reason="bad signature")
    r.note("command", "bad_signature", topic="p/link/mega/cmd/\x1b[2J", reason="<b>x</b>\u202e" + "y" * 1000)
    assert r.text() == "3 refused (command bad_signature 2, claim 1)"
    # The latest, for the link's state: its words a publisher's, escaped as a terminal is shown them, and cut short.
    assert (r.last_kind, r.last_at, r.last_topic) == (
        "command bad_signature", "2026-11-26T12:00:00+00:00", "p/link/mega/cmd/\\x1b[2J"
    )  # fmt: skip
    assert r.last_reason is not None and r.last_reason.startswith("<b>x</b>\\u202eyyy") and len(r.last_reason) == 300


def _states(got: list[Received], topic: str) -> list[dict[str, Any]]:
    return [json.loads(m.payload) for m in got if m.topic == topic]


def _total(state: dict[str, Any]) -> int:
    refusals = state.get("refusals")
    return int(refusals["total"]) if isinstance(refusals, dict) else 0


async def test_a_flood_of_junk_is_counted_in_the_retained_state_in_a_bounded_number_of_publishes(
    link: tuple[LinkService, str], mosquitto: Mosquitto, subscribe: Subscribe
) -> None:
    """The link's retained state carries its refusal counts (what the floor console's link panel shows), published
    when they change but a change of the counts alone at most once a REFUSALS_EVERY_S (1 s): 1,000 junk requests
    are a handful of state publishes (at most one per second of the flood, and one for each other change: the
    heartbeat's lease lapsing), never one per message, and the last state, retained, counts all 1,000. Before, the
    counts were only in the systemd status line."""
    service, prefix = link
    flood = 1000
    one = LinkTable("ms-01", mosquitto.host, mosquitto.port, prefix)
    topic = f"{one.base}/state"
    sub = subscribe(topic)
    try:
        await asyncio.to_thread(one.until_acked, {"kind": "heartbeat"}, 60)
        await sub.await_until(lambda got: bool(_states(got, topic)), 30, "the link's state")
        assert all("refusals" not in s for s in _states(sub.on(topic), topic))  # nothing refused: the field left out
        before = len(sub.on(topic))
        started = time.monotonic()

        def junk() -> None:
            props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
            props.ResponseTopic = one.response_topic
            sent = [
                one.client.publish(f"{one.base}/request/ms-01", b"junk <%d>" % i, qos=1, properties=props)
                for i in range(flood)
            ]
            for info in sent:
                info.wait_for_publish(30)

        await asyncio.to_thread(junk)
        await sub.await_until(lambda got: any(_total(s) == flood for s in _states(got, topic)), 60, "all counted")
        elapsed = time.monotonic() - started
        assert service.refusals.total == flood  # the status line's count and the state's are one
        during = _states(sub.on(topic)[before:], topic)
        last = during[-1]["refusals"]
        assert last == {
            "total": flood,
            "counts": {"request_malformed": flood},
            "last_kind": "request_malformed",
            "last_at": last["last_at"],
            "last_topic": f"{one.base}/request/ms-01",
            "last_reason": last["last_reason"],
        }
        assert datetime.fromisoformat(last["last_at"]).tzinfo is not None
        assert last["last_reason"].startswith("Invalid JSON")  # the parser's words, by kind; not the junk's
        totals = [_total(s) for s in during]
        print(f"{flood} junk requests: {len(during)} state publishes in {elapsed:.2f} s, totals {totals}")
        assert totals == sorted(totals)  # the counts only grow
        # Not the module's constant: a change that publishes faster than once a second fails here, whatever it sets.
        assert REFUSALS_EVERY_S >= 1.0 and len(during) <= 3 + elapsed, (len(during), round(elapsed, 2), totals)
        # A console that connects later is handed the last counts by the broker (retained).
        late = subscribe(topic)
        await late.await_until(lambda got: bool(got), 30, "the retained state")
        assert late.messages[-1].retain and _total(late.messages[-1].json()) == flood
    finally:
        one.close()


async def test_a_flood_of_refused_requests_is_logged_in_bounded_lines_that_count_every_one(
    link: tuple[LinkService, str], mosquitto: Mosquitto
) -> None:
    """Before, each refused request was a warning of its own (journald's rate limit then dropped the link's other
    lines with the flood's): now the first 60 of a topic in a minute, then one summary line (floor/refusal_log.py)
    said here at the stop, whose count adds up with them to every request sent."""
    service, prefix = link
    flood = 400
    one = LinkTable("ms-01", mosquitto.host, mosquitto.port, prefix)
    try:
        with capture_logs() as logs:
            await asyncio.to_thread(one.until_acked, {"kind": "heartbeat"}, 60)
            for i in range(flood):
                raw(one.client, f"{one.base}/request/ms-01", b"junk %d" % i, one.response_topic)
            async with asyncio.timeout(60):
                while service.refusals.total < flood:  # noqa: ASYNC110 (the service has no event for it)
                    await asyncio.sleep(0.05)
            service.stop()
            async with asyncio.timeout(30):
                while not [e for e in logs if e["event"] == SUMMARY]:  # noqa: ASYNC110 (said at the stop)
                    await asyncio.sleep(0.05)
        lines = [e for e in logs if e["event"] == "a table's request refused"]
        summaries = [e for e in logs if e["event"] == SUMMARY]
        assert len(lines) == IngestSection().refused_rows_per_topic
        assert [(s["topic"], s["count"]) for s in summaries] == [(f"{one.base}/request/ms-01", flood - len(lines))]
        assert summaries[0]["reason"] and summaries[0]["bytes"] == sum(
            len(b"junk %d" % i) for i in range(len(lines), flood)
        )
    finally:
        one.close()
