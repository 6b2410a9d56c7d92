"""A real systemd notification socket: a unix datagram socket the test binds, as systemd would for a
Type=notify service, and reads what the daemon sends. Readers wait on the socket with a deadline, never sleep.
Shared by the controller's systemd tests (tests/systemd/conftest.py's fixtures) and the floor's and the link's task
and refusal tests, which each had a copy of the fixture."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Notification:
    """One datagram, parsed as sd_notify(3) KEY=value lines."""

    at: float  # time.monotonic() when received
    fields: dict[str, str]

    def get(self, key: str, default: str = "") -> str:
        return self.fields.get(key, default)


class NotifySocket:
    def __init__(self, address: str) -> None:
        self.address = address  # what goes in NOTIFY_SOCKET: a path or @abstract
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.sock.setblocking(False)
        self.received: list[Notification] = []

    def _take(self, data: bytes) -> Notification:
        fields = dict(line.split("=", 1) for line in data.decode("utf-8").splitlines() if "=" in line)
        n = Notification(time.monotonic(), fields)
        self.received.append(n)
        return n

    def next(self, timeout: float) -> Notification | None:
        """The next datagram, or None when none came within `timeout` seconds."""
        ready, _, _ = select.select([self.sock], [], [], max(timeout, 0.0))
        return self._take(self.sock.recv(65536)) if ready else None

    def wait_for(self, predicate: Callable[[Notification], bool], timeout: float, what: str) -> Notification:
        deadline = time.monotonic() + timeout
        while True:
            n = self.next(deadline - time.monotonic())
            if n is None:
                raise AssertionError(f"no {what} within {timeout} s; received: {self.tail()}")
            if predicate(n):
                return n

    async def anext(self, within: float) -> Notification | None:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(within):
                return self._take(await loop.sock_recv(self.sock, 65536))
        except TimeoutError:
            return None

    async def await_for(self, predicate: Callable[[Notification], bool], within: float, what: str) -> Notification:
        deadline = time.monotonic() + within
        while True:
            n = await self.anext(deadline - time.monotonic())
            if n is None:
                raise AssertionError(f"no {what} within {within} s; received: {self.tail()}")
            if predicate(n):
                return n

    def tail(self, n: int = 8) -> list[dict[str, str]]:
        return [m.fields for m in self.received[-n:]]

    def close(self) -> None:
        self.sock.close()
        if not self.address.startswith("@"):
            with contextlib.suppress(OSError):
                os.unlink(self.address)


@contextlib.contextmanager
def abstract_socket(label: str) -> Iterator[NotifySocket]:
    """A socket in the abstract namespace, written '@name' in NOTIFY_SOCKET as systemd does for its own: nothing on
    disk to clean up and no sun_path length to mind; `label` names the test in it (`ss -x` shows it)."""
    s = NotifySocket(f"@tablectl-{label}-{uuid.uuid4().hex}")
    try:
        yield s
    finally:
        s.close()
