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
import contextlib
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
    try:
        for body in bodies:
            info = inner.publish(topic, body, qos=1)
            if info.rc != paho.MQTT_ERR_SUCCESS:
                raise aiomqtt.MqttCodeError(info.rc, "Could not publish message")
            if info.is_published():  # acknowledged already (cannot happen before a write, but paho allows it)
                batch.acked()
                continue
            pending[info.mid] = _Acks(batch)
            mids.append(info.mid)
        _write_now(inner)
    except BaseException:
        forget(client, mids)
        raise
    return batch


def forget(client: aiomqtt.Client, mids: Sequence[int]) -> None:
    """Drop a batch's packets from aiomqtt's registry (a batch abandoned with its connection)."""
    pending = client._pending_publishes
    for mid in mids:
        pending.pop(mid, None)


def _write_now(inner: paho.Client) -> None:
    sock = inner.socket()
    cork = _CORK if isinstance(sock, socket.socket) else None
    corked = False
    if cork is not None and isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, cork, 1)
            corked = True
    try:
        # What the socket does not take now stays queued in paho, which asks aiomqtt's loop to write it when it can.
        inner.loop_write()
    finally:
        if corked and cork is not None and isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, cork, 0)
