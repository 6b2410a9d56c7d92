"""drivers/serial_port.py on real pseudo-terminals: the one-syscall read gives the bytes as the peer wrote them, the
link's writes reach the peer, a peer that goes away ends the reader with an error (an unplug), and a pyserial URL is
still opened by pyserial's own handler."""

from __future__ import annotations

import asyncio
import os
import threading
import tomllib
from pathlib import Path

import pytest
import serial
import serial_asyncio_fast

from drivers.serial_port import _fixed_upstream, _Port, open_serial


async def test_bytes_arrive_as_written_both_ways() -> None:
    master, slave = os.openpty()
    try:
        reader, writer = await open_serial(os.ttyname(slave))
        try:
            os.write(master, b"\x7e\x01frame one")
            async with asyncio.timeout(5):
                assert await reader.readexactly(11) == b"\x7e\x01frame one"
            os.write(master, bytes(range(256)))  # every byte value, raw (no line discipline)
            async with asyncio.timeout(5):
                assert await reader.readexactly(256) == bytes(range(256))
            writer.write(b"\x7e\x02ack")
            await writer.drain()
            got = b""
            loop = asyncio.get_running_loop()
            async with asyncio.timeout(5):
                while len(got) < 5:
                    got += await loop.run_in_executor(None, os.read, master, 64)
            assert got == b"\x7e\x02ack"
        finally:
            writer.close()
            await writer.wait_closed()
    finally:
        os.close(master)
        os.close(slave)


async def test_the_peer_going_away_ends_the_reader_with_an_error() -> None:
    master, slave = os.openpty()
    reader, writer = await open_serial(os.ttyname(slave))
    os.close(slave)  # only the port's own descriptor is left on this side
    try:
        os.close(master)  # the device's end closes: the port reads as disconnected, as pyserial says it
        async with asyncio.timeout(5):
            with pytest.raises(serial.SerialException, match=r"read failed|returned no data"):
                while await reader.read(4096):
                    pass
    finally:
        writer.close()


def test_a_blocking_read_is_pyserials_own() -> None:
    master, slave = os.openpty()
    try:
        port = _Port(os.ttyname(slave), 115200, timeout=1)
        try:
            os.write(master, b"abc")
            assert port.read(3) == b"abc"  # timeout 1: pyserial's select loop, reading until 3 bytes came
        finally:
            port.close()
    finally:
        os.close(master)
        os.close(slave)


async def test_a_pyserial_url_is_opened_by_pyserial() -> None:
    async def echo(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(await r.readexactly(6))
        await w.drain()
        w.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)  # a serial-over-TCP converter, as socket:// reaches one
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await open_serial(f"socket://127.0.0.1:{port}")
        try:
            writer.write(b"\x7e\x03echo")
            await writer.drain()
            async with asyncio.timeout(5):
                assert await reader.readexactly(6) == b"\x7e\x03echo"
        finally:
            writer.close()
    finally:
        server.close()
        await server.wait_closed()


async def test_a_drained_write_leaves_the_loop_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """serial_asyncio_fast 0.16 left its write callback registered once a partial write's remainder drained: every
    loop turn then called it and the loop logged an AssertionError (pyserial-asyncio-fast PR #36). 200 KB is more
    than a pty's kernel buffer holds, so the first write is partial and the rest goes through the callback."""
    master, slave = os.openpty()
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    try:
        _reader, writer = await open_serial(os.ttyname(slave))
        transport = writer.transport
        assert isinstance(transport, serial_asyncio_fast.SerialTransport)
        calls = 0
        write_ready = transport._write_ready

        def counted() -> None:
            nonlocal calls
            calls += 1
            write_ready()

        monkeypatch.setattr(
            transport, "_write_ready", counted
        )  # the loop registers the bound attribute when the write turns partial
        payload = bytes(range(256)) * 800
        try:
            writer.write(payload)
            assert transport.get_write_buffer_size() > 0  # the kernel took part of it: the callback is registered

            def read_all() -> bytes:
                got = b""
                while len(got) < len(payload):
                    got += os.read(master, 65536)
                return got

            async with asyncio.timeout(10):
                assert await loop.run_in_executor(None, read_all) == payload
                await writer.drain()
            assert transport.get_write_buffer_size() == 0
            drained_at = calls
            assert drained_at > 0
            for _ in range(50):  # fifty loop turns with the port writable and nothing to write
                await asyncio.sleep(0)
            assert calls - drained_at <= 1  # at most the one call that finds the buffer empty and unregisters
            assert errors == []
        finally:
            writer.close()
            await writer.wait_closed()
    finally:
        loop.set_exception_handler(None)
        os.close(master)
        os.close(slave)


def test_a_write_to_a_full_port_returns_at_once() -> None:
    """pyserial's non-blocking write retries EAGAIN until the OS takes the bytes: with the kernel's buffer full it
    spins, and in the transport's direct write that holds the event loop (PR #36's second fault). The port says it
    would block, so the transport buffers the bytes and waits for the loop to report the port writable."""
    master, slave = os.openpty()
    port = _Port(os.ttyname(slave), 115200, timeout=0, write_timeout=0)
    outcome: list[object] = []
    give_up = threading.Event()
    try:

        def write_more() -> None:
            try:
                while not give_up.is_set():  # nothing reads the other end: the buffer fills, then the port says so
                    outcome.append(port.write(b"y" * 512))
            except BlockingIOError as err:
                outcome.append(err)

        worker = threading.Thread(target=write_more)
        worker.start()
        worker.join(timeout=10)  # a failure detector, not a pace: the write must not wait for the reader at all
        stuck = worker.is_alive()
        if stuck:  # release the spinning write so the thread ends
            give_up.set()
            while worker.is_alive():
                os.read(master, 65536)
                worker.join(timeout=0.1)
        assert not stuck
        assert isinstance(outcome[-1], BlockingIOError)
        assert all(isinstance(written, int) and 0 < written <= 512 for written in outcome[:-1])
    finally:
        port.close()
        os.close(master)
        os.close(slave)


def test_the_pin_and_the_version_gate_agree() -> None:
    """pyproject.toml allows pyserial-asyncio-fast from 0.16, the last release without PR #36's fix (still open; no
    later release by 2026-11-28): the transport's workaround is kept for 0.16 and its patch releases, and left to the
    library from the next minor release on, which the pin allows up to 1.0 (test_a_drained_write_leaves_the_loop_alone
    then says whether that release really has the fix)."""
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    pins = [d for d in project["dependencies"] if d.startswith("pyserial-asyncio-fast")]
    assert pins == ["pyserial-asyncio-fast>=0.16,<1"]
    assert not _fixed_upstream("0.16") and not _fixed_upstream("0.16.1")
    assert _fixed_upstream("0.17") and _fixed_upstream("0.17.0") and _fixed_upstream("0.100")
    assert not _fixed_upstream("unknown")
