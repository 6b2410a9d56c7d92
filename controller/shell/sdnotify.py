"""The sd_notify(3) protocol: tell systemd we are ready, what we are doing, that we are alive, that we stop.

Hand-written rather than a dependency: the protocol is one datagram of `KEY=value` lines to the unix socket
named by $NOTIFY_SOCKET (a path, or an abstract socket written with a leading '@'), and the PyPI packages
are either unmaintained since 2017 (sdnotify, sd-notify, untyped) or need libsystemd headers to build
(systemd-python, cysystemd), which a table PC's image does not carry.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

import structlog

from controller.core.digits import ascii_int

log = structlog.get_logger("tablectl.systemd")

# The NOTIFY_SOCKET values already refused in this process: the daemon reads it twice (the journal check's progress
# at the open, then the supervisor's), and one warning says all it could not send.
_refused: set[str] = set()


class SdNotify:
    """A connection to the service manager's notification socket. Sending never raises: a lost notification
    must not take the table down (systemd then acts on the missing READY/WATCHDOG, which is the point)."""

    def __init__(self, address: str) -> None:
        if not address or not (address.startswith(("/", "@"))):
            # systemd >= 253 may also hand out vsock: addresses (VMs); a table PC runs it on the host.
            raise ValueError(f"NOTIFY_SOCKET={address!r} is not a unix socket path or @abstract name")
        self.address = address
        # The kernel reads a leading NUL as "abstract namespace"; systemd writes it as '@'.
        self._target = "\0" + address[1:] if address.startswith("@") else address
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        # A full receive queue must not stall the event loop; the message is then lost and logged.
        self._sock.setblocking(False)
        self._failed = False

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> SdNotify | None:
        """The notifier systemd asked for, or None when not started by systemd with Type=notify."""
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        if not address:
            return None
        try:
            return cls(address)
        except ValueError as err:
            if address not in _refused:
                _refused.add(address)
                log.warning(
                    "cannot notify systemd",
                    error=str(err),
                    not_sent="READY=1, STATUS=, the watchdog's pings and the journal check's progress, for this run",
                )
            return None

    def send(self, **fields: str | int) -> bool:
        """Send one datagram, e.g. send(READY=1, STATUS="betting"). True when the socket took it."""
        lines = []
        for key, value in fields.items():
            text = str(value)
            if "\n" in text:  # a newline would start a new assignment inside the value
                text = text.replace("\n", " ")
            lines.append(f"{key}={text}")
        try:
            self._sock.sendto("\n".join(lines).encode("utf-8"), self._target)
        except OSError as err:
            if not self._failed:  # once per outage, not at every watchdog period
                log.warning(
                    "systemd notification not delivered", socket=self.address, error=str(err), fields=sorted(fields)
                )
            self._failed = True
            return False
        if self._failed:
            log.info("systemd notifications delivered again", socket=self.address)
        self._failed = False
        return True

    def close(self) -> None:
        self._sock.close()


def watchdog_interval(environ: Mapping[str, str] | None = None, pid: int | None = None) -> float | None:
    """The watchdog timeout systemd expects pings within, in seconds, or None when the watchdog is off.

    As sd_watchdog_enabled(3): WATCHDOG_USEC is meant for WATCHDOG_PID only (when set), so a child that
    inherited the environment does not ping on its parent's behalf.
    """
    env = os.environ if environ is None else environ
    usec = env.get("WATCHDOG_USEC", "")
    if not usec:
        return None
    target = env.get("WATCHDOG_PID", "")
    if target and target != str(os.getpid() if pid is None else pid):
        return None
    try:
        value = ascii_int(usec)
    except ValueError:
        log.warning("ignoring a WATCHDOG_USEC that is not a number of microseconds", WATCHDOG_USEC=usec)
        return None
    return value / 1_000_000 if value > 0 else None
