"""A step's events onto the wire at once: every PUBLISH packet queued in paho, then one write, then one wait.

aiomqtt's `publish` is one coroutine per message, each run as a task of its own with its own PUBACK wait (and a
second task inside `asyncio.wait_for`): a batch of ten costs some thirty tasks, the packets are written only when
the loop next polls the socket for writing, and on a busy loop the later events of a step wait behind the earlier
ones' bookkeeping (issue 19, bench/event_latency.py). Here the packets are queued in paho in the caller's own call,
written to the socket before it returns (TCP_CORK around the write, so they go as few segments as the kernel can
make, TCP_NODELAY staying on) and one future says when the last PUBACK is in.

QoS 1 stays whole: paho numbers the packets and keeps them in flight (resent by the publisher after a reconnect,
from the journal's outbox), aiomqtt's PUBACK callback releases each one (`_pending_publishes`, the registry its own
`publish` uses: aiomqtt 2.x, pinned in pyproject.toml), and the order on the connection is the order of the batch.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence

import aiomqtt
import paho.mqtt.client as paho

# Linux only; elsewhere the packets go as paho writes them (TCP_NODELAY: one segment each).
_CORK: int | None = getattr(socket, "TCP_CORK", None)


class _Acks(asyncio.Event):
    """Stands in aiomqtt's registry for one packet of a batch: its PUBACK counts down the batch's `done`."""

    def __init__(self, batch: Batch) -> None:
        super().__init__()
        self._batch = batch

    def set(self) -> None:
        super().set()
        self._batch.acked()


class Batch:
    """The PUBACKs of one batch of QoS 1 publishes; `wait()` returns once every one is in."""

    def __init__(self, count: int) -> None:
        self._left = count
        self.mids: list[int] = []  # paho's packet ids of those still awaited
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if count == 0:
            self.done.set_result(None)

    def acked(self) -> None:
        self._left -= 1
        if self._left == 0 and not self.done.done():
            self.done.set_result(None)


def send(client: aiomqtt.Client, topic: str, bodies: Sequence[str]) -> Batch:
    """Queue every body as a QoS 1 PUBLISH on `topic`, in order, and write them to the socket now.

    Raises aiomqtt.MqttCodeError when paho refuses a packet (the connection is gone): the packets queued before it
    are then lost with the connection, and the caller publishes the batch again from the outbox after reconnecting.
    """
    inner = client._client  # the paho client aiomqtt wraps (module docstring)
    pending = client._pending_publishes
    batch = Batch(len(bodies))
    mids = batch.mids
    sock = inner.socket()
    register = inner.on_socket_register_write
    # Without a register-write callback paho writes each packet in its publish call, instead of asking aiomqtt to
    # poll the socket for writing on a later turn of the loop (which also leaves a stale writer behind, when the
    # packets were written meanwhile, or one on a closed socket when the broker went away meanwhile).
    inner.on_socket_register_write = None
    corked = _cork(sock, 1)
    try:
        for body in bodies:
            info = inner.publish(topic, body, qos=1)
            if info.rc != paho.MQTT_ERR_SUCCESS:
                raise aiomqtt.MqttCodeError(info.rc, "Could not publish message")
            if info.is_published():  # acknowledged already (cannot happen before a read, but paho allows it)
                batch.acked()
                continue
            pending[info.mid] = _Acks(batch)
            mids.append(info.mid)
    except BaseException:
        forget(client, mids)
        raise
    finally:
        inner.on_socket_register_write = register
        if corked:
            _cork(sock, 0)
        if inner.want_write() and register is not None and sock is not None and inner.socket() is sock:
            # The socket took less than the batch (its buffer is full): aiomqtt's loop writes the rest when it can.
            register(inner, None, sock)
        _settle(client, sock)
    return batch


def forget(client: aiomqtt.Client, mids: Sequence[int]) -> None:
    """Drop a batch's packets from aiomqtt's registry (a batch abandoned with its connection)."""
    pending = client._pending_publishes
    for mid in mids:
        pending.pop(mid, None)


def _cork(sock: object, on: int) -> bool:
    """TCP_CORK on or off: while on, the kernel holds the batch's small writes and sends them in full segments."""
    if _CORK is None or not isinstance(sock, socket.socket):
        return False
    try:
        sock.setsockopt(socket.IPPROTO_TCP, _CORK, on)
    except OSError:
        return False
    return True


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
