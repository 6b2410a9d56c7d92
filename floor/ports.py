"""Starting a server on a port someone picked: the port a picker names (free_port()) was free a moment ago, and
nothing holds it until the server binds, so another process (the other xdist worker's broker, another demo) may bind
it first. The server then exits with "Address already in use"; the starter takes a fresh port and starts again, a few
times, since several taken ports in a row are something else than a race.

Used by the demo's private mosquitto (floor.cli.private), the benches' broker (bench/benchlib.py) and the suite's
(tests/broker.py), and PostgreSQL's (floor.pgcluster.PgCluster.start): one retry loop for all of them.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# How many ports a starter tries before it gives up: a taken port is a rare race, several in a row is something else.
PORT_ATTEMPTS = 5
ADDRESS_IN_USE = "Address already in use"  # the words for EADDRINUSE in mosquitto's and PostgreSQL's logs


def free_port(host: str = "127.0.0.1") -> int:
    """A port free a moment ago. Nothing holds it until the server binds, so another process may take it first: a
    starter that picked it (on_a_free_port, PgCluster.start) then moves to a fresh one."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class PortTaken(Exception):
    """A server exited while starting because another process holds its port; `log` is what it said."""

    def __init__(self, port: int, log: str) -> None:
        super().__init__(f"port {port} is taken: {log}")
        self.port = port
        self.log = log


class PortsTaken(Exception):
    """Every port tried was taken; `ports` in the order tried, `log` the last server's words."""

    def __init__(self, ports: list[int], log: str) -> None:
        tried = ", ".join(map(str, ports))
        super().__init__(
            f"another process held each port tried ({tried}): find it with `ss -ltnp`, or name a broker/port of your "
            f"own; the last attempt said:\n{log}"
        )
        self.ports = ports
        self.log = log


def on_a_free_port(
    start: Callable[[int], T], ports: Callable[[], int], *, first: int | None = None, attempts: int = PORT_ATTEMPTS
) -> T:
    """start(port) with a port from `ports` (or `first`, when the caller has numbered it already); should start raise
    PortTaken, again with a fresh port from `ports`, up to `attempts` starts in all. What start returns; PortsTaken
    when every port was taken. Any other failure of start is its caller's to see at once (no retry)."""
    tried: list[int] = []
    port = ports() if first is None else first
    while True:
        tried.append(port)
        try:
            return start(port)
        except PortTaken as taken:
            if len(tried) >= attempts:
                raise PortsTaken(tried, taken.log) from None
        port = ports()
