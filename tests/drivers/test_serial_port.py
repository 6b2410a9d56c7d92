"""drivers/serial_port.py on real pseudo-terminals: the one-syscall read gives the bytes as the peer wrote them, the
link's writes reach the peer, a peer that goes away ends the reader with an error (an unplug), and a pyserial URL is
still opened by pyserial's own handler."""

from __future__ import annotations

import asyncio
import os

import pytest
import serial

from drivers.serial_port import _Port, open_serial


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
