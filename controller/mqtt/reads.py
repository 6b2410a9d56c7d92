"""The connection's incoming packets taken from one socket read per wake-up, not three or four reads a packet.

paho reads a packet in pieces, each a recv() of its own: the fixed header's first byte, each byte of the Remaining
Length, then the rest (`_packet_read`), and a last recv() that finds the socket empty (EAGAIN, raised and caught)
ends each wake-up. A seven-seat round's ~90 PUBACKs cost the event loop some 370 recv() calls a round (issue 19,
bench/footprint.py --profile): a system call, a bytes object and, for the last, an exception each. Here paho's
recv() (`_sock_recv`, which also turns TLS's want-read into BlockingIOError) is asked for up to READ_SIZE bytes at
once and what paho did not ask for yet is held and handed out to its next calls, so the PUBACKs that arrived together
are read in one call.

What is held is read before the loop polls again: aiomqtt reads when the socket is readable, and bytes held here do
not make it so, so `loop_read` goes on while any are held (each call takes at least one byte of them). Held bytes
belong to one socket: a new connection starts with nothing held. Nothing changes in what paho decodes, in which
order, or in how it sees the end of the stream (an empty read) or a broken connection (the exception recv raised).

Leans on paho 2.x's `_sock_recv` and `_sock` (pinned in pyproject.toml); tests/mqtt/test_reads.py fails when they
change under it.
"""

from __future__ import annotations

import aiomqtt
import paho.mqtt.client as paho
from paho.mqtt.enums import MQTTErrorCode

# One read takes what a wake-up usually finds (a 4-byte PUBACK each, a few dozen at most) and more.
READ_SIZE = 65536


def fewer_reads(client: aiomqtt.Client) -> None:
    """buffered_reads on the paho client aiomqtt wraps; call it once per client, before it connects."""
    buffered_reads(client._client)


def buffered_reads(inner: paho.Client) -> None:
    """Install the held reads (module docstring) on a paho client; call it once, before it connects."""
    recv = inner._sock_recv
    read = inner.loop_read
    held = bytearray()  # read from the socket, not yet taken by paho
    source: list[object] = [None]  # the socket `held` was read from

    def take(bufsize: int) -> bytes:
        sock = inner._sock
        if source[0] is not sock:  # reconnected (or gone): what was held belonged to the old connection
            held.clear()
            source[0] = sock
        if not held:
            data = recv(READ_SIZE)  # raises as paho's own read would; b"" at the end of the stream
            if len(data) <= bufsize:
                return data
            held.extend(data)
        out = bytes(held[:bufsize])
        del held[:bufsize]
        return out

    def loop_read(max_packets: int = 1) -> MQTTErrorCode:
        rc = read(max_packets)
        # paho stops after as many packets as it has messages in flight; what is still held would wait for the next
        # bytes on the socket, so it is read now.
        while held and rc == MQTTErrorCode.MQTT_ERR_SUCCESS and inner._sock is source[0]:
            rc = read(max_packets)
        return rc

    inner._sock_recv = take  # type: ignore[method-assign]
    inner.loop_read = loop_read  # type: ignore[method-assign]
