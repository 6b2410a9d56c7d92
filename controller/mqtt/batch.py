"""A step's events onto the wire at once: every PUBLISH packet queued in paho, then one write, then one wait.

aiomqtt's `publish` is one coroutine per message, each run as a task of its own with its own PUBACK wait (and a
second task inside `asyncio.wait_for`): a batch of ten costs some thirty tasks, the packets are written only when
the loop next polls the socket for writing, and on a busy loop the later events of a step wait behind the earlier
ones' bookkeeping (issue 19, bench/event_latency.py). Here the packets are queued in paho in the caller's own call,
each written to the socket as soon as paho has built it (TCP_NODELAY: a segment each), and one future says when the
last PUBACK is in.

Each body is built as its packet is queued (`send` takes the bodies lazily), not all before the first is written:
in the daemon an event's JSON and its paho packet cost some 50 us of the loop each, so a settlement's 12-14 events
held in one corked write (as this module once did) left the broker nothing for 0.4-0.7 ms, and then all at once,
for it and the subscriber to work through one by one. Written as they are built, the broker and the subscriber
take the first events on the other core while the loop builds the rest.

QoS 1 stays whole: paho numbers the packets and keeps them in flight (resent by the publisher after a reconnect,
from the journal's outbox), aiomqtt's PUBACK callback releases each one (`_pending_publishes`, the registry its own
`publish` uses: aiomqtt 2.x, pinned in pyproject.toml), and the order on the connection is the order of the batch.

`fast_pubacks` spares paho's decoding of the common PUBACK. MQTT 5.0 section 3.4.2.1: a PUBACK whose Reason Code is
0x00 (Success) and that has no properties may omit both, a Remaining Length of 2 holding only the Packet Identifier
(section 3.4.2); mosquitto acknowledges every accepted QoS 1 PUBLISH so. paho builds a ReasonCode and a Properties
object for each (about half its CPU per acknowledged event, bench/publish_cpu.py); such a PUBACK is handed to paho's
own completion (`_do_on_publish`) with one shared Success code and empty properties instead. Any other PUBACK (a
reason code, properties, a PUBCOMP) goes through paho's handler unchanged. What this leans on in paho 2.x is checked
by tests/mqtt/test_batch.py, which fails when paho changes under it.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections.abc import Callable, Iterable, Iterator, Sequence

import aiomqtt
import paho.mqtt.client as paho
from paho.mqtt.enums import MQTTErrorCode
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode


class _Acks(asyncio.Event):
    """Stands in aiomqtt's registry for one packet of a batch: its PUBACK counts down the batch's `done`."""

    def __init__(self, batch: Batch) -> None:
        super().__init__()
        self._batch = batch

    def set(self) -> None:
        super().set()
        self._batch.acked()


class Batch:
    """The PUBACKs of one batch of QoS 1 publishes; `complete` once every one is in, `done` resolved then (or when
    `settled` stops waiting: a lost connection, no PUBACK in time)."""

    def __init__(self) -> None:
        self._left = 0
        self._sealed = False
        self.mids: list[int] = []  # paho's packet ids of those still awaited
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @property
    def complete(self) -> bool:
        """Every packet queued and every PUBACK in."""
        return self._sealed and self._left == 0

    def awaits(self, mid: int) -> None:
        """One more packet whose PUBACK the batch waits for."""
        self._left += 1
        self.mids.append(mid)

    def seal(self) -> None:
        """Every packet is queued: `done` once the PUBACKs counted so far are all in (at once when none is awaited)."""
        self._sealed = True
        self._check()

    def acked(self) -> None:
        self._left -= 1
        self._check()

    def _check(self) -> None:
        if self.complete and not self.done.done():
            self.done.set_result(None)


Then = tuple[str, str] | Callable[[], tuple[str, str] | None] | None


def send(client: aiomqtt.Client, topic: str, bodies: Iterable[str], then: Then = None) -> Batch:
    """Queue every body as a QoS 1 PUBLISH on `topic`, in order, and `then` (topic, body) retained behind them (the
    anchor), each written to the socket as soon as it is queued. `bodies` may be a generator: each body is taken
    when its turn comes, so the first leaves before the last is built (module docstring). `then` may be a function,
    called once the last body was taken (the anchor names the last event the generator actually gave).

    Raises aiomqtt.MqttCodeError when paho refuses a packet (the connection is gone): the packets queued before it
    are then lost with the connection, and the caller publishes the batch again from the outbox after reconnecting.
    """
    messages: Iterable[tuple[str, str, bool]] = ((topic, body, False) for body in bodies)
    if then is not None:
        messages = itertools.chain(messages, _behind(then))
    return write(client, messages)


def _behind(then: tuple[str, str] | Callable[[], tuple[str, str] | None]) -> Iterator[tuple[str, str, bool]]:
    last = then() if callable(then) else then
    if last is not None:
        yield (last[0], last[1], True)


def retain(client: aiomqtt.Client, topic: str, body: str) -> Batch:
    """One retained QoS 1 PUBLISH (status, birth, device, meter, anchor), written now like a batch."""
    return write(client, [(topic, body, True)])


def write(client: aiomqtt.Client, messages: Iterable[tuple[str, str, bool]]) -> Batch:
    """`send` for (topic, body, retained) triples, taken one at a time."""
    inner = client._client  # the paho client aiomqtt wraps (module docstring)
    pending = client._pending_publishes
    batch = Batch()
    mids = batch.mids
    sock = inner.socket()
    register = inner.on_socket_register_write
    # Without a register-write callback paho writes each packet in its publish call, instead of asking aiomqtt to
    # poll the socket for writing on a later turn of the loop (which also leaves a stale writer behind, when the
    # packets were written meanwhile, or one on a closed socket when the broker went away meanwhile).
    inner.on_socket_register_write = None
    try:
        for topic, body, retained in messages:
            info = inner.publish(topic, body, qos=1, retain=retained)
            if info.rc != paho.MQTT_ERR_SUCCESS:
                raise aiomqtt.MqttCodeError(info.rc, "Could not publish message")
            if info.is_published():  # acknowledged already (cannot happen before a read, but paho allows it)
                continue
            pending[info.mid] = _Acks(batch)
            batch.awaits(info.mid)
    except BaseException:
        forget(client, mids)
        raise
    finally:
        inner.on_socket_register_write = register
        if inner.want_write() and register is not None and sock is not None and inner.socket() is sock:
            # The socket took less than the batch (its buffer is full): aiomqtt's loop writes the rest when it can.
            register(inner, None, sock)
        _settle(client, sock)
    batch.seal()
    return batch


async def settled(batch: Batch, lost: asyncio.Future[None], within: float) -> None:
    """Return once every PUBACK of `batch` is in; raise the MqttError that ended the connection (`lost`) or, after
    `within` seconds, an MqttError saying none came. The task awaits the batch's own future, which the last PUBACK,
    `lost` or the timer resolves: the task runs on the turn after the last PUBACK is read, where asyncio.wait on the
    two futures took one more turn (its completion callback, then the waiter's) and a set, a waiter and two
    callbacks of its own each batch, some 30 batches a round (issue 19, bench/footprint.py --wakeups)."""
    done = batch.done
    if not done.done():
        loop = asyncio.get_running_loop()

        def stop_waiting(_: object = None) -> None:
            if not done.done():
                done.set_result(None)

        lost.add_done_callback(stop_waiting)
        timer = loop.call_later(within, stop_waiting)
        try:
            await done
        finally:
            lost.remove_done_callback(stop_waiting)
            timer.cancel()
    if batch.complete:
        return
    if lost.done():
        lost.result()  # raises the MqttError that ended the connection
        raise aiomqtt.MqttError("disconnected")
    raise aiomqtt.MqttError(f"no PUBACK for {len(batch.mids)} message(s) within {within:g} s")


# The Success code and the empty properties every short PUBACK stands for (MQTT 5.0 section 3.4.2.1); shared, never
# changed: aiomqtt's on_publish callback does not read them.
_SUCCESS = ReasonCode(PacketTypes.PUBACK, identifier=0)
_NO_PROPERTIES = Properties(PacketTypes.PUBACK)  # type: ignore[no-untyped-call]


def fast_pubacks(client: aiomqtt.Client) -> None:
    """Handle the connection's short PUBACKs (module docstring) without paho's per-packet decoding; call it once per
    client, before it connects."""
    short_pubacks(client._client)


def short_pubacks(inner: paho.Client) -> None:
    """fast_pubacks on the paho client itself."""
    slow = inner._handle_pubackcomp
    done = paho.MQTT_ERR_SUCCESS

    def handle(cmd: str) -> MQTTErrorCode:
        packet = inner._in_packet["packet"]
        if cmd != "PUBACK" or len(packet) != 2:
            return slow(cmd)  # type: ignore[arg-type]
        mid = (packet[0] << 8) | packet[1]  # section 3.4.2: the Packet Identifier, big-endian (section 1.5.2)
        with inner._out_message_mutex:
            if mid in inner._out_messages:
                return inner._do_on_publish(mid, _SUCCESS, _NO_PROPERTIES)
        return done

    inner._handle_pubackcomp = handle  # type: ignore[method-assign]


def forget(client: aiomqtt.Client, mids: Sequence[int]) -> None:
    """Drop a batch's packets from aiomqtt's registry (a batch abandoned with its connection)."""
    pending = client._pending_publishes
    for mid in mids:
        pending.pop(mid, None)


def _settle(client: aiomqtt.Client, sock: object) -> None:
    """A writer aiomqtt scheduled earlier in this turn of the loop (a PINGREQ queued by its housekeeping task) is added
    only after the batch wrote that packet too; paho then believes no writer is registered and would never remove
    it, and the loop would call it on every turn. Removed once it is in, unless something is left to write."""
    if not isinstance(sock, socket.socket):
        return
    fd = sock.fileno()
    inner = client._client
    loop = asyncio.get_running_loop()

    def settle() -> None:
        if fd >= 0 and inner.socket() is sock and not inner.want_write():
            loop.remove_writer(fd)

    loop.call_soon(settle)
