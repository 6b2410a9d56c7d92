"""controller.mqtt.batch leans on aiomqtt and paho internals (its docstring): these tests fail when either changes
under it. The short-PUBACK path is held against paho's own handler for every packet identifier hypothesis draws,
and for the PUBACKs it must leave to paho (a reason code, properties). The broker side, a batch killed mid-flight and
published again after the restart, is tests/mqtt/test_offer.py against a real mosquitto."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Iterator

import aiomqtt
import paho.mqtt.client as paho
from hypothesis import example, given
from hypothesis import strategies as st
from paho.mqtt.enums import CallbackAPIVersion

from controller.mqtt import batch
from tests.broker import Mosquitto, Received, Subscribe

# The internals batch.py reads or replaces, by the object that holds them.
PAHO_INTERNALS = ("_handle_pubackcomp", "_in_packet", "_out_messages", "_out_message_mutex", "_do_on_publish")
AIOMQTT_INTERNALS = ("_client", "_pending_publishes")


async def test_the_internals_batch_relies_on_are_there() -> None:
    client = aiomqtt.Client("127.0.0.1")
    for name in AIOMQTT_INTERNALS:
        assert hasattr(client, name), f"aiomqtt.Client has no {name}: controller/mqtt/batch.py needs another way"
    inner = client._client
    assert isinstance(inner, paho.Client)
    for name in PAHO_INTERNALS:
        assert hasattr(inner, name), f"paho.Client has no {name}: controller/mqtt/batch.py needs another way"
    assert isinstance(client._pending_publishes, dict)
    assert "packet" in inner._in_packet


class Recorder:
    """A paho client (MQTT 5, as aiomqtt's default) with `count` QoS 1 messages queued, recording on_publish."""

    def __init__(self, count: int, fast: bool) -> None:
        self.acked: list[tuple[int, int, bool]] = []
        self.client = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.client.on_publish = self._on_publish
        self.infos = [self.client.publish("t/event", f"body {n}", qos=1) for n in range(count)]
        if fast:
            batch.short_pubacks(self.client)  # what fast_pubacks installs on the paho client aiomqtt wraps

    def _on_publish(self, client: paho.Client, userdata: object, mid: int, rc: object, props: object) -> None:
        self.acked.append((mid, int(getattr(rc, "value", -1)), bool(getattr(props, "json", lambda: {})())))

    def receive(self, packet: bytes) -> object:
        self.client._in_packet["packet"] = bytearray(packet)
        return self.client._handle_pubackcomp("PUBACK")

    def state(self) -> tuple[list[tuple[int, int, bool]], list[int], list[bool]]:
        return (
            self.acked,
            sorted(self.client._out_messages),
            [i._published for i in self.infos],
        )  # set by paho's completion, whatever the rc


@given(mids=st.lists(st.integers(min_value=0, max_value=0xFFFF), max_size=12))
@example(mids=[1, 5, 3, 0, 2, 4, 9, 1])  # every queued one, out of order, one unknown, one twice
def test_short_pubacks_complete_as_pahos_own_handler_does(mids: list[int]) -> None:
    # MQTT 5.0 section 3.4.2.1: Remaining Length 2, the Packet Identifier alone, means Success without properties.
    # Identifiers queued (1..5) and not (0, the rest): both handlers complete the same messages the same way.
    slow, fast = Recorder(5, fast=False), Recorder(5, fast=True)
    for mid in mids:
        packet = struct.pack("!H", mid)
        assert slow.receive(packet) == fast.receive(packet)
    assert slow.state() == fast.state()


@given(
    mid=st.integers(min_value=1, max_value=3),
    reason=st.sampled_from([0x00, 0x10, 0x80, 0x83, 0x87, 0x97]),
    with_properties=st.booleans(),
)
def test_longer_pubacks_are_left_to_paho(mid: int, reason: int, with_properties: bool) -> None:
    # Section 3.4.2.1-3.4.2.2: a reason code, then a property length (and properties: a Reason String, 0x1F).
    packet = struct.pack("!HB", mid, reason)
    if with_properties:
        text = b"quota"
        packet += bytes([3 + len(text), 0x1F]) + struct.pack("!H", len(text)) + text
    slow, fast = Recorder(3, fast=False), Recorder(3, fast=True)
    assert slow.receive(packet) == fast.receive(packet)
    assert slow.state() == fast.state()
    assert [m for m, _, _ in fast.acked] == [mid]
    assert fast.acked[0][1] == reason  # paho's decoded reason code reached the callback, not the shared Success


async def test_the_broker_has_each_event_before_the_next_body_is_built(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str
) -> None:
    """A settlement's first events leave while the loop still builds the rest (docs/mqtt.md, "Latency"): before
    `send` takes body n+1, a subscriber in another thread has received event n through the real broker (a write
    held back until the batch's end, as a corked one was, times this out). Every PUBACK, the anchor's too, counts."""
    topic = f"t/{unique_id}/event"
    sub = subscribe(topic)
    client = aiomqtt.Client(mosquitto.host, mosquitto.port, identifier=f"lazy-{unique_id}", max_inflight_messages=100)
    batch.fast_pubacks(client)

    def at_least(n: int) -> Callable[[list[Received]], bool]:
        return lambda m: len(m) >= n

    def bodies() -> Iterator[str]:
        for n in range(12):
            if n:  # blocks the loop on purpose: only the kernel, the broker and the subscriber's thread may move
                sub.wait_until(at_least(n), timeout=5.0, what=f"event {n} before body {n + 1} is built")
            yield f'{{"seq":{n + 1}}}'

    async with client:
        lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        sent = batch.send(client, topic, bodies(), (f"t/{unique_id}/anchor", '{"seq":12}'))
        assert len(sent.mids) == 13 and not sent.done.done()
        await batch.settled(sent, lost, 3.0)
        batch.forget(client, sent.mids)
    # The last PUBACK says the broker has event 12, not that the subscriber's thread has it yet (under load it had not).
    await sub.await_until(at_least(12), what="event 12")
    assert [m.payload for m in sub.messages] == [f'{{"seq":{n}}}'.encode() for n in range(1, 13)]
