"""The systemd tests' notification sockets (tests/systemd/notify.py), one on the filesystem and one in the abstract
namespace, and a port nothing listens on."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.systemd.notify import NotifySocket, abstract_socket


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[NotifySocket]:
    """A filesystem notification socket (sun_path is at most 107 bytes, so fall back to /tmp when deep)."""
    path = tmp_path / "notify.sock"
    if len(str(path)) > 100:
        path = Path("/tmp") / f"tablectl-notify-{uuid.uuid4().hex[:8]}.sock"
    s = NotifySocket(str(path))
    yield s
    s.close()


@pytest.fixture
def abstract_notify_socket() -> Iterator[NotifySocket]:
    """An abstract-namespace socket, written '@name' in NOTIFY_SOCKET as systemd does for its own."""
    with abstract_socket("test") as s:
        yield s


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on: a broker outage for the whole test."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
