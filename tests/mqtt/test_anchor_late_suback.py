"""The retained-anchor read at start gives up after its bounded wait (docs/journal.md, "The anchor"; docs/mqtt.md,
`anchor`); a SUBACK the broker sends just after that must not put an error-level traceback in the operator's log
(aiomqtt's `Unexpected message ID "1" in on_subscribe callback`, aiomqtt issue #356).

A real mosquitto on loopback behind a tiny TCP proxy that holds the broker's SUBACK past the read's timeout. The
client's socket is closed once its DISCONNECT is written, so a late SUBACK is read only when it lands in the loop
turns between the timeout and that write: a window a busy start hits by chance. The test puts it there on purpose:
the client registers the DISCONNECT's writer through `loop.add_writer`, and the hook there lets the held SUBACK go
and waits until the client's socket can read it. Nothing is faked: the broker, the client and the sockets are real.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import select
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controller.config.table import MqttSettings
from controller.mqtt.anchor import read_retained_anchor
from tests.conftest import Mosquitto

SUBACK = 9  # MQTT control packet type (MQTT 3.1.1 section 2.2.1)


def _read_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _read_packet(sock: socket.socket) -> bytes:
    """One whole MQTT packet: fixed header, the remaining length (a variable byte integer), the rest."""
    head = _read_exact(sock, 1)
    length, shift, more = 0, 0, True
    while more:
        byte = _read_exact(sock, 1)
        head += byte
        length |= (byte[0] & 0x7F) << shift
        shift, more = shift + 7, bool(byte[0] & 0x80)
    return head + _read_exact(sock, length)


class SubackHoldingProxy:
    """Forwards one client connection to the broker and back; holds the broker's first SUBACK until `release`."""

    def __init__(self, broker_port: int) -> None:
        self.broker_port = broker_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.held = threading.Event()
        self.release = threading.Event()
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, name="suback-proxy", daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError, EOFError):  # either side closed: the test is over
            client, _ = self.listener.accept()
            broker = socket.create_connection(("127.0.0.1", self.broker_port))
            self.sockets += [client, broker]
            threading.Thread(target=self._upstream, args=(client, broker), daemon=True).start()
            self._downstream(broker, client)

    @staticmethod
    def _upstream(client: socket.socket, broker: socket.socket) -> None:
        with contextlib.suppress(OSError, EOFError):  # either side closed: the test is over
            while data := client.recv(4096):
                broker.sendall(data)

    def _downstream(self, broker: socket.socket, client: socket.socket) -> None:
        while True:  # ends with EOFError/OSError when a side closes
            packet = _read_packet(broker)
            if packet[0] >> 4 == SUBACK and not self.held.is_set():
                self.held.set()
                self.release.wait()
            client.sendall(packet)

    def close(self) -> None:
        self.release.set()
        for s in self.sockets:
            s.close()


@pytest.fixture
def proxy(mosquitto: Mosquitto) -> Iterator[SubackHoldingProxy]:
    p = SubackHoldingProxy(mosquitto.port)
    try:
        yield p
    finally:
        p.close()


def _late_suback_hook(loop: asyncio.AbstractEventLoop, proxy: SubackHoldingProxy) -> Callable[..., Any]:
    """loop.add_writer, but the writer registered once the SUBACK is held (the DISCONNECT's: the read has timed
    out) first lets the SUBACK go and waits until the client's socket has it to read."""
    add_writer = loop.add_writer

    def hooked(fd: int, callback: Callable[..., object], *args: object) -> None:
        if proxy.held.is_set() and not proxy.release.is_set():
            proxy.release.set()
            readable, _, _ = select.select([fd], [], [], 10.0)
            assert readable, "the released SUBACK never reached the client's socket"
        add_writer(fd, callback, *args)

    return hooked


async def test_a_suback_after_the_reads_timeout_leaves_no_traceback(
    proxy: SubackHoldingProxy, unique_id: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()
    monkeypatch.setattr(loop, "add_writer", _late_suback_hook(loop, proxy))
    caplog.set_level(logging.DEBUG)
    settings = MqttSettings(broker=f"mqtt://127.0.0.1:{proxy.port}", prefix="an")

    # The bounded wait as documented: no anchor read, the start goes on against the anchor file alone.
    assert await read_retained_anchor(settings, unique_id, within=2.0) is None

    assert proxy.held.is_set() and proxy.release.is_set(), "the broker's SUBACK was never held past the timeout"
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("mqtt")]
    assert not loud, [f"{r.levelname} {r.name}: {r.getMessage()}" for r in loud]
    assert not [r for r in caplog.records if r.exc_info], "a traceback reached the log"
    late = [r for r in caplog.records if "SUBACK" in r.getMessage() and r.name.startswith("mqtt")]
    assert late, "the late SUBACK did not reach the client: the race this test stages did not happen"
