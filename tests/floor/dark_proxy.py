"""A TCP proxy in front of a real PostgreSQL that goes dark after its first connections: those are relayed to the
server both ways; every later one is accepted by the kernel and never answered (a database host gone dark after the
service connected, or a firewall that started dropping the replies). Tests use it to stop a real `tablectl floor`
while a connect of a later step (the console's first load, the older days' work) waits on the dark host."""

from __future__ import annotations

import selectors
import socket
import threading
from typing import cast

from psycopg.conninfo import make_conninfo


class DarkAfter:
    """Relays the first `relayed` connections to `port`, holds every later one unanswered; `held` is set at the first
    held one, and `taken` counts every connection accepted. A thread of the test's, stopped by `close()`."""

    def __init__(self, port: int, relayed: int) -> None:
        self.upstream = port
        self.relayed = relayed
        self.held = threading.Event()
        self.taken = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.listener, selectors.EVENT_READ, None)
        self._socks: list[socket.socket] = [self.listener]
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dark-proxy", daemon=True)
        self._thread.start()

    def dsn(self, dsn: str, connect_timeout_s: int) -> str:
        """`dsn` (the server's) through this proxy, bounded by `connect_timeout_s` alone: libpq's own merge, each key
        once, where editing the DSN's text could leave the server's bound beside this one."""
        return make_conninfo(dsn, port=self.port, connect_timeout=connect_timeout_s)

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        self.taken += 1
        self._socks.append(conn)
        if self.relayed <= 0:
            self.held.set()  # taken and never read: the client waits for an answer that never comes
            return
        self.relayed -= 1
        up = socket.create_connection(("127.0.0.1", self.upstream))
        self._socks.append(up)
        self._sel.register(conn, selectors.EVENT_READ, up)
        self._sel.register(up, selectors.EVENT_READ, conn)

    def _run(self) -> None:
        while not self._closing.is_set():
            for key, _ in self._sel.select(timeout=0.1):
                if key.data is None:
                    self._accept()
                elif (src := cast(socket.socket, key.fileobj)).fileno() != -1:  # not closed by its peer this turn
                    self._relay(src, key.data)

    def _relay(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            data = src.recv(65536)
            if data:
                dst.sendall(data)
                return
        except OSError:
            pass
        for s in (src, dst):  # one side closed: both go
            self._sel.unregister(s)
            s.close()

    def close(self) -> None:
        self._closing.set()
        self._thread.join(timeout=5)
        for s in self._socks:
            s.close()
        self._sel.close()
