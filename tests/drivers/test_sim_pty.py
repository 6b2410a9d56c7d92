"""The simulator's end of a real pty: writes that outrun the reader wait for it, in order, and stop waiting after."""

from __future__ import annotations

import asyncio
import os
import random
import selectors

from drivers.sim.pty import PtyEndpoint

FAILURE_BOUND = 20.0  # failure bound only


def _writer_registered(loop: asyncio.AbstractEventLoop, fd: int) -> bool:
    # The selector is private to asyncio's selector event loop, the one the tests run on.
    selector: selectors.BaseSelector | None = getattr(loop, "_selector", None)
    assert selector is not None
    try:
        key = selector.get_key(fd)
    except KeyError:
        return False
    return key.data[1] is not None  # (reader handle, writer handle)


async def test_a_write_larger_than_the_pty_buffer_arrives_whole_once_the_driver_reads() -> None:
    loop = asyncio.get_running_loop()
    endpoint = PtyEndpoint()
    try:
        data = random.Random(7).randbytes(1 << 20)  # far beyond the kernel's pty buffer
        endpoint.write(data)
        # Nobody read the slave yet, so the rest waits for the line to drain.
        assert _writer_registered(loop, endpoint.master_fd)
        os.set_blocking(endpoint.slave_fd, False)
        got = bytearray()
        readable = asyncio.Event()
        loop.add_reader(endpoint.slave_fd, readable.set)
        try:
            async with asyncio.timeout(FAILURE_BOUND):
                while len(got) < len(data):
                    await readable.wait()
                    readable.clear()
                    try:
                        got += os.read(endpoint.slave_fd, 1 << 16)
                    except BlockingIOError:
                        continue
        finally:
            loop.remove_reader(endpoint.slave_fd)
        assert bytes(got) == data
        # Drained: the endpoint no longer asks to be told the line is writable.
        assert not _writer_registered(loop, endpoint.master_fd)
        endpoint.write(b"\xa5more")
        assert os.read(endpoint.slave_fd, 16) == b"\xa5more"
        assert not _writer_registered(loop, endpoint.master_fd)
    finally:
        endpoint.close()


async def test_writes_after_close_are_dropped() -> None:
    endpoint = PtyEndpoint()
    endpoint.close()
    endpoint.write(b"after the unplug")  # no error: an unplugged device's bytes go nowhere
