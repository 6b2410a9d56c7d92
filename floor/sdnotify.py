"""sd_notify(3) for the floor service: READY, STATUS, WATCHDOG and STOPPING datagrams to $NOTIFY_SOCKET.

The table daemon has the same few lines in controller/shell/sdnotify.py; the floor may not import the controller's
shell (pyproject.toml's layer contracts), and the protocol is one datagram, so it is written again here rather than
moved into the controller's pure core, which does no I/O.
"""

from __future__ import annotations

import os
import socket

import structlog

from controller.core.digits import is_ascii_digits

log = structlog.get_logger("tablectl.floor.systemd")


class Notifier:
    """Sends never raise: a lost notification must not take the service down (systemd acts on its absence)."""

    def __init__(self, address: str | None) -> None:
        self.address = address or None
        self._sock: socket.socket | None = None
        if self.address and self.address.startswith(("/", "@")):
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.setblocking(False)

    @classmethod
    def from_environment(cls) -> Notifier:
        return cls(os.environ.get("NOTIFY_SOCKET"))

    @property
    def watchdog_interval(self) -> float | None:
        """Half the watchdog period systemd asked for (WATCHDOG_USEC), in seconds; None without a watchdog."""
        usec = os.environ.get("WATCHDOG_USEC", "")
        return int(usec) / 2_000_000 if is_ascii_digits(usec) and int(usec) > 0 else None

    def send(self, **fields: str | int) -> None:
        if self._sock is None or self.address is None:
            return
        target = "\0" + self.address[1:] if self.address.startswith("@") else self.address
        text = "\n".join(f"{k}={str(v).replace(chr(10), ' ')}" for k, v in fields.items())
        try:
            self._sock.sendto(text.encode(), target)
        except OSError as err:
            log.warning("cannot notify systemd", error=str(err))
