"""Wire time for the simulators: each direction of a simulated line carries its bytes at the baud rate.

A pseudo-terminal has no baud rate: a frame written to it is readable at once, so a benchmark over ptys sees
none of the time a real 115200-baud line takes (about 87 us a byte at 8N1). A paced line gives each write
(one frame: the link writes a frame at a time) the time a UART needs to send it, after the frame before it
and the idle gap a sender leaves between frames, and delivers it when its last byte would have arrived. Both
directions are paced by the simulator's end: what it sends reaches the pty late, what the host wrote reaches
the simulated device late.

Timers come from one thread per process (a timed wait keeps to about 0.1 ms where the event loop's epoll keeps
to whole milliseconds) that hands each delivery to the event loop; it errs late, never early.
TABLECTL_SIM_PACING=off turns pacing off for fast tests (tests/conftest.py); TABLECTL_SIM_BAUD sets the rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_BAUD = 115200
BITS_PER_BYTE = 10  # 8N1: start bit, eight data bits, stop bit
# The idle a sender leaves between two frames: a multi-drop station listens for 2 byte times of silence
# before it talks (docs/protocol.md, "Medium access"), so a UART-driven line shows about that between frames.
DEFAULT_GAP_BYTES = 2.0


@dataclass(frozen=True, slots=True)
class LineTiming:
    """How a simulated line carries bytes: `baud` (8N1) and `gap_bytes` of idle between frames, or not
    paced at all (`paced=False`: bytes arrive at once, as over a bare pty)."""

    baud: int = DEFAULT_BAUD
    gap_bytes: float = DEFAULT_GAP_BYTES
    paced: bool = True

    def __post_init__(self) -> None:
        if self.baud <= 0:
            raise ValueError(f"baud must be positive, got {self.baud}")
        if self.gap_bytes < 0:
            raise ValueError(f"gap_bytes must be 0 or more, got {self.gap_bytes}")

    @property
    def byte_time(self) -> float:
        return BITS_PER_BYTE / self.baud

    def frame_time(self, n_bytes: int) -> float:
        """Seconds the line needs for `n_bytes` sent back to back."""
        return n_bytes * self.byte_time


UNPACED = LineTiming(paced=False)


def default_timing() -> LineTiming:
    """Paced at 115200 baud unless TABLECTL_SIM_PACING is off/0/false/no (TABLECTL_SIM_BAUD sets the rate)."""
    pacing = os.environ.get("TABLECTL_SIM_PACING", "on").strip().lower()
    baud_text = os.environ.get("TABLECTL_SIM_BAUD", str(DEFAULT_BAUD)).strip()
    try:
        baud = int(baud_text)
    except ValueError:
        raise ValueError(f"TABLECTL_SIM_BAUD={baud_text!r} is not a whole number of baud, e.g. 115200") from None
    return LineTiming(baud=baud, paced=pacing not in ("off", "0", "false", "no"))


class _Pacer:
    """The one timer thread: runs each callback in its event loop at (not before) its monotonic deadline."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, asyncio.AbstractEventLoop, Callable[[], None]]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def at(self, deadline: float, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        with self._wake:
            heapq.heappush(self._heap, (deadline, next(self._order), loop, callback))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sim-line-pacer", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while True:
                    if not self._heap:
                        self._wake.wait()
                        continue
                    delay = self._heap[0][0] - time.monotonic()
                    if delay <= 0:
                        break
                    # A timed wait keeps to about 0.1 ms here and wakes at once for a sooner deadline.
                    self._wake.wait(delay)
                _deadline, _n, loop, callback = heapq.heappop(self._heap)
            with contextlib.suppress(RuntimeError):  # the loop closed with bytes still on the line
                loop.call_soon_threadsafe(callback)


_PACER = _Pacer()


class PacedDirection:
    """One direction of a line: `send(data)` hands `data` to `deliver` when a UART would have finished
    sending it, after everything sent before it plus the idle gap. Order is kept."""

    def __init__(self, timing: LineTiming, deliver: Callable[[bytes], None]) -> None:
        self._timing = timing
        self._deliver = deliver
        self._loop = asyncio.get_running_loop()
        self._free_at = 0.0
        self._queue: list[bytes] = []
        self.bytes_sent = 0
        self.closed = False

    def send(self, data: bytes) -> None:
        if self.closed or not data:
            return
        self.bytes_sent += len(data)
        if not self._timing.paced:
            self._deliver(data)
            return
        now = time.monotonic()
        gap = self._timing.frame_time(1) * self._timing.gap_bytes
        start = max(now, self._free_at + gap)
        self._free_at = start + self._timing.frame_time(len(data))
        self._queue.append(data)
        _PACER.at(self._free_at, self._loop, self._release)

    def after(self, callback: Callable[[], None]) -> None:
        """Run `callback` once everything sent so far has been delivered (an end of file follows the bytes)."""
        if not self._timing.paced or self._free_at <= time.monotonic():
            callback()
            return
        _PACER.at(self._free_at, self._loop, callback)

    def _release(self) -> None:
        # Deadlines of one direction increase, so the pacer releases its frames in the order they were sent.
        if self._queue and not self.closed:
            self._deliver(self._queue.pop(0))
