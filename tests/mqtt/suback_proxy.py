"""A TCP proxy between one MQTT client and a real mosquitto that holds the broker's first SUBACK until released: the
late SUBACK of tests/mqtt/test_anchor_late_suback.py and the anchor read that gives up in tests/journal/
test_early_start.py. Shared here, in a helper module, so that neither test module imports the other."""

from __future__ import annotations

import contextlib
import socket
import threading

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
