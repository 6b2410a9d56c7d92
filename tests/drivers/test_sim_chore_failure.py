"""A simulator's scripted `fault_cleared` is sent from a task of its own (drivers/sim/base.py, SimDevice._chore): one
that fails, its pty closed before the host ACKed it, is said in a warning line instead of lost with its task, and the
simulator goes on (plugged back in, it answers the host as before).

The host end is the pty's slave opened raw as a port is; the test plays the host, writing a v1 `ping` and reading what
the simulated shoe answers, and never ACKs, so the clear waits for an ACK when the cable is pulled.
"""

from __future__ import annotations

import asyncio
import os
import select
import tty
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from structlog.testing import capture_logs

from drivers.reference.framing import FrameParser, Kind, decode_message, encode_frame, encode_message
from drivers.sim.shoe import ShoeSim

BOUND = 5.0  # failure bound only


@contextmanager
def host_end(port: str) -> Iterator[int]:
    fd = os.open(port, os.O_RDWR | os.O_NOCTTY)
    try:
        tty.setraw(fd)
        yield fd
    finally:
        os.close(fd)


def read_until(fd: int, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The first DATA message from the device that `wanted` accepts (blocking: run it off the loop)."""
    parser = FrameParser()
    while True:
        readable, _, _ = select.select([fd], [], [], BOUND)
        assert readable, "the simulator sent nothing more"
        for frame in parser.feed(os.read(fd, 256)):
            if frame.kind == Kind.DATA and wanted(message := decode_message(frame.payload)):
                return message


def ping(fd: int, seq: int) -> None:
    os.write(fd, encode_frame(1, seq, Kind.DATA, encode_message({"cmd": "ping"})))


async def test_a_scripted_clear_whose_line_closes_is_logged_and_the_simulator_goes_on() -> None:
    shoe = ShoeSim("shoe")
    await shoe.start()
    try:
        # At the host's identify: a clear's "ping n" counts only the heartbeats after a fault report.
        await shoe.clear_at("jam", "identify 1", "taken out by hand")
        with capture_logs() as logs, host_end(shoe.port) as fd:
            os.write(fd, encode_frame(1, 7, Kind.DATA, encode_message({"cmd": "identify"})))
            cleared = await asyncio.to_thread(read_until, fd, lambda m: m.get("evt") == "fault_cleared")
            assert cleared["code"] == "jam"
            chores = set(shoe._chores)  # the clear, written and waiting for the ACK the host never sends
            assert len(chores) == 1
            await shoe.unplug()
            # Each chore's own done callback (the warning) was added before asyncio.wait's, so it has run by now.
            done, _ = await asyncio.wait(chores, timeout=BOUND)
            assert done == chores and not shoe._chores
        failed = [e for e in logs if e["event"] == "simulator chore failed"]
        assert len(failed) == 1, logs
        assert failed[0]["log_level"] == "warning" and failed[0]["device"] == "shoe"
        assert "LinkClosed" in failed[0]["error"]
        await shoe.replug()
        with host_end(shoe.port) as fd:
            ping(fd, 8)
            pong = await asyncio.to_thread(read_until, fd, lambda m: m.get("evt") == "pong")
        assert pong["evt"] == "pong"
    finally:
        await shoe.stop()
