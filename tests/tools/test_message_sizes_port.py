"""tools/message_sizes.py's private mosquitto takes a fresh port when another process bound the one it picked before
the broker did, and otherwise stops naming the ports tried and the fix (it may not use the project's
floor/ports.py: tools/ do not import the project).

Real parts: Debian's mosquitto, a real listening socket holding the port. The race is made deterministic by handing
the tool's port picker the held port."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools import message_sizes

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


@pytest.fixture
def held() -> Iterator[int]:
    """A loopback port another process (this test) listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def test_a_taken_port_is_replaced_by_a_fresh_one(held: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    picked: list[int] = []
    real = message_sizes.free_port

    def picker() -> int:
        picked.append(held if not picked else real())
        return picked[-1]

    monkeypatch.setattr(message_sizes, "free_port", picker)
    broker, port = message_sizes.start_broker(tmp_path, MOSQUITTO)
    try:
        assert picked[0] == held and port == picked[1] != held
        assert "Address already in use" in (tmp_path / f"mosquitto-{held}.log").read_text()
        # The broker answers on its port: an MQTT CONNECT gets a CONNACK accepting it.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.sendall(bytes([0x10, 12, 0, 4]) + b"MQTT" + bytes([4, 2, 0, 10, 0, 0]))
            assert c.recv(4) == bytes([0x20, 2, 0, 0])
    finally:
        broker.terminate()
        broker.wait()


def test_a_port_taken_every_time_stops_naming_the_ports_and_the_fix(
    held: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    picked: list[int] = []

    def picker() -> int:
        picked.append(held)
        return held

    monkeypatch.setattr(message_sizes, "free_port", picker)
    with pytest.raises(SystemExit) as stopped:
        message_sizes.start_broker(tmp_path, MOSQUITTO)
    assert len(picked) == message_sizes.PORT_ATTEMPTS
    message = str(stopped.value)
    assert f"({', '.join([str(held)] * message_sizes.PORT_ATTEMPTS)})" in message and "ss -ltnp" in message
    assert "Address already in use" in message
