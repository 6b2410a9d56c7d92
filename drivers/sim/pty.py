"""The simulator's end of a pseudo-terminal, driven from the event loop without threads, and its stable name."""

from __future__ import annotations

import array
import asyncio
import contextlib
import fcntl
import os
import termios
import tty
from collections.abc import Callable
from pathlib import Path

from drivers.reference.framing import SOF
from drivers.sim import scratch
from drivers.sim.line import UNPACED, LineTiming, PacedDirection


class PtyEndpoint:
    """Owns a pty pair: the master is the simulated device, the slave path is what a driver opens.

    The slave fd stays open for the endpoint's lifetime so the master never reads EIO merely because
    no driver has the port open yet (or a driver closed it to reconnect). With a paced `timing` both
    directions take the wire time of a real line (drivers/sim/line.py); unpaced, bytes pass at once.
    """

    def __init__(self, timing: LineTiming = UNPACED) -> None:
        self.master_fd, self.slave_fd = os.openpty()
        # Raw at once: the line discipline must neither echo our frames back nor translate CR/LF.
        tty.setraw(self.slave_fd)
        os.set_blocking(self.master_fd, False)
        self.path = os.ttyname(self.slave_fd)
        self._loop = asyncio.get_running_loop()
        self._reader = asyncio.StreamReader()
        self._pending = bytearray()
        self._waiting_to_write = False
        self._closed = False
        # Bytes handed to the device's reader, and bytes it read: their difference is part of what `unread` counts.
        self._fed = 0
        self._taken = 0
        # What the host wrote reaches the device, and what the device writes reaches the host, a line's time later.
        self.inbound = PacedDirection(timing, self._arrived)
        self.outbound = PacedDirection(timing, self._write_now)
        # tap(from_host, data): every delivery on the line, both ways, as it happens (a test reads the frame order).
        self.tap: Callable[[bool, bytes], None] | None = None
        self._loop.add_reader(self.master_fd, self._read_ready)

    def _read_ready(self) -> None:
        try:
            data = os.read(self.master_fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._loop.remove_reader(self.master_fd)
            self.inbound.after(self._reader.feed_eof)
            return
        if not self.inbound.paced or data.find(SOF, 1) < 0:
            self.inbound.send(data)
            return
        # Several frames in one read (a multi-drop host writes an identify to each of seven stations at once): each is
        # delivered when its own last byte would have arrived, as a UART hands them over, not all with the last one's.
        # A 0xA5 inside a payload only cuts a frame in two, delivered back to back with no gap: the same bytes, as
        # soon. Station 1 heard its identify 40 ms late at every start of a seven-station line.
        start = 0
        while (cut := data.find(SOF, start + 1)) >= 0:
            self.inbound.send(data[start:cut], gap=start == 0)
            start = cut
        self.inbound.send(data[start:], gap=False)

    def _arrived(self, data: bytes) -> None:
        if self.tap is not None:
            self.tap(True, data)
        self._fed += len(data)
        self._reader.feed_data(data)

    async def read(self, n: int = -1) -> bytes:
        data = await self._reader.read(n)
        self._taken += len(data)
        return data

    def unread(self) -> int:
        """Bytes the host sent that have reached the device and that it has not read yet: in the pty, due on the paced
        line, or handed over to its reader. What the simulator's link reads before it resends on an ACK timeout (the
        host's `in_waiting`, drivers/serial_port.py): a simulator whose loop stalled (the machine under load) takes the
        host's ACK that came in time rather than sending its event again. OSError once closed."""
        count = array.array("i", [0])
        fcntl.ioctl(self.master_fd, termios.FIONREAD, count)
        return count[0] + self.inbound.due_bytes() + self._fed - self._taken

    def write(self, data: bytes) -> None:
        self.outbound.send(data)

    def _write_now(self, data: bytes) -> None:
        if self._closed:
            return
        if self.tap is not None:
            self.tap(False, data)
        self._pending += data
        self._flush()

    def _flush(self) -> None:
        while self._pending and not self._closed:
            try:
                written = os.write(self.master_fd, self._pending)
            except BlockingIOError:
                # The slave's input queue is full (nobody reading yet): resume when it drains.
                self._loop.add_writer(self.master_fd, self._flush)
                self._waiting_to_write = True
                return
            except OSError:
                self._pending.clear()
                return
            del self._pending[:written]
        # Only when a writer was added: asking the selector to drop one it never had costs a failed lookup on
        # every frame, a measurable share of a fast table's time (bench/table_rounds.py).
        if self._waiting_to_write:
            self._waiting_to_write = False
            with contextlib.suppress(Exception):
                self._loop.remove_writer(self.master_fd)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        """Close both ends: to a driver holding the slave this is an unplug."""
        if self._closed:
            return
        self._closed = True
        self.inbound.closed = self.outbound.closed = True
        self._loop.remove_reader(self.master_fd)
        self._loop.remove_writer(self.master_fd)
        self._reader.feed_eof()
        for fd in (self.master_fd, self.slave_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


class StableName:
    """Where a simulated device is found, as a udev rule names a real one: a symlink in a private dir (leased from the
    process's one temp dir, drivers/sim/scratch.py) that points at the device's current pty while it is plugged in
    and is gone while it is not, so a driver reconnects after a replug under the same name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._dir: Path | None = None

    @property
    def path(self) -> str:
        if self._dir is None:
            raise RuntimeError(f"simulator {self.name} is not started")
        return str(self._dir / self.name)

    def create(self) -> None:
        # Once: a second start without a stop keeps the name (and leaks no dir).
        if self._dir is None:
            self._dir = scratch.lease(self.name)

    def point(self, target: str | None) -> None:
        """Point the name at `target` (a pty's slave), or remove it (None): the device was unplugged."""
        if self._dir is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        if target is not None:
            os.symlink(target, self.path)

    def remove(self) -> None:
        if self._dir is not None:
            leased, self._dir = self._dir, None
            scratch.release(leased)
