"""Wire time for the simulators: each direction of a simulated line carries its bytes at the baud rate.

A pseudo-terminal has no baud rate: a frame written to it is readable at once, so a benchmark over ptys sees
none of the time a real 115200-baud line takes (about 87 us a byte at 8N1). A paced line gives each write
(one frame: the link writes a frame at a time) the time a UART needs to send it, after the frame before it
and the idle gap a sender leaves between frames, and delivers it when its last byte would have arrived. Both
directions are paced by the simulator's end: what it sends reaches the pty late, what the host wrote reaches
the simulated device late.

Deliveries are timed by a Linux timerfd in the event loop (the loop's own timers keep to whole milliseconds); a
delivery errs late, never early.
TABLECTL_SIM_PACING=off turns pacing off for fast tests (tests/conftest.py); TABLECTL_SIM_BAUD sets the rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import heapq
import itertools
import math
import os
import time
import weakref
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
    # ASCII whitespace only (drivers.sim.script.ASCII_SPACE): str.strip() took "\u3000115200" for 115200 baud
    pacing = os.environ.get("TABLECTL_SIM_PACING", "on").strip(" \t\n\r\f\v").lower()
    baud_text = os.environ.get("TABLECTL_SIM_BAUD", str(DEFAULT_BAUD)).strip(" \t\n\r\f\v")
    try:
        if not baud_text.isascii():  # int() reads other scripts' digits too (Arabic-Indic 19200)
            raise ValueError(baud_text)
        baud = int(baud_text)
    except ValueError:
        raise ValueError(f"TABLECTL_SIM_BAUD={baud_text!r} is not a whole number of baud, e.g. 115200") from None
    return LineTiming(baud=baud, paced=pacing not in ("off", "0", "false", "no"))


class _TimerSpec(ctypes.Structure):
    _fields_ = [
        ("interval_s", ctypes.c_long),
        ("interval_ns", ctypes.c_long),
        ("value_s", ctypes.c_long),
        ("value_ns", ctypes.c_long),
    ]


class _Pacer:
    """Runs callbacks in one event loop at (not before) their monotonic deadlines, to about 0.1 ms.

    The event loop's own timers wait in epoll, which rounds every wait up to a whole millisecond: a frame of
    0.8 ms would arrive after 1 or 2. A Linux timerfd armed for the earliest deadline wakes the same epoll at
    the right instant instead (no thread: a second wake-up per frame would cost more than the frame on a
    loaded machine). Where timerfd is missing, the loop's timers do, late by up to a millisecond.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._armed = math.inf
        self._fd = fd = _timerfd()
        if fd is not None:
            loop.add_reader(fd, self._fire, fd)
            weakref.finalize(loop, os.close, fd)

    def at(self, deadline: float, callback: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (deadline, next(self._order), callback))
        if self._fd is None:
            self._loop.call_at(self._loop.time() + max(deadline - time.monotonic(), 0), self._run_due)
        elif deadline < self._armed:
            self._arm(self._fd, deadline)

    def _arm(self, fd: int, deadline: float) -> None:
        self._armed = deadline
        seconds = max(deadline, 1e-9)  # zero would disarm the timer
        spec = _TimerSpec(0, 0, int(seconds), int((seconds % 1) * 1e9))
        _LIBC.timerfd_settime(fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None)

    def _fire(self, fd: int) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(fd, 8)
        self._armed = math.inf
        self._run_due()
        if self._heap:
            self._arm(fd, self._heap[0][0])

    def _run_due(self) -> None:
        now = time.monotonic()
        while self._heap and self._heap[0][0] <= now:
            _deadline, _n, callback = heapq.heappop(self._heap)
            callback()


_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_CLOCK_MONOTONIC = 1  # the clock of time.monotonic() on Linux
_TFD_NONBLOCK, _TFD_CLOEXEC, _TFD_TIMER_ABSTIME = 0o4000, 0o2000000, 1


def _timerfd() -> int | None:
    create = getattr(_LIBC, "timerfd_create", None)
    if create is None:
        return None
    fd = create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
    return int(fd) if fd >= 0 else None


_PACERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pacer] = weakref.WeakKeyDictionary()


def _pacer() -> _Pacer:
    loop = asyncio.get_running_loop()
    pacer = _PACERS.get(loop)
    if pacer is None:
        pacer = _PACERS[loop] = _Pacer(loop)
    return pacer


def at_time(deadline: float, callback: Callable[[], None]) -> None:
    """Run `callback` in this event loop at (not before) the monotonic `deadline`, to about 0.1 ms: what a simulated
    station uses to start its slot confirmation on time (docs/protocol.md section 13)."""
    _pacer().at(deadline, callback)


class PacedDirection:
    """One direction of a line: `send(data)` hands `data` to `deliver` when a UART would have finished
    sending it, after everything sent before it plus the idle gap. Order is kept."""

    def __init__(self, timing: LineTiming, deliver: Callable[[bytes], None]) -> None:
        self._timing = timing
        self._deliver = deliver
        self._pacer = _pacer() if timing.paced else None
        self._free_at = 0.0
        self._queue: list[tuple[float, bytes]] = []
        # When the last byte of the latest delivery arrived on the wire (monotonic): what a receiver's UART would time
        # from, however late this event loop got round to delivering it.
        self.delivered_at = 0.0
        self.bytes_sent = 0
        # What a UART at the line's rate needs for everything sent: each write's bytes and the idle gap before it
        # (bench/footprint.py --timeline: the wire's own share of a round), paced or not.
        self.line_seconds = 0.0
        self.closed = False

    @property
    def paced(self) -> bool:
        return self._timing.paced

    def send(self, data: bytes, *, gap: bool = True) -> None:
        """`gap=False`: no idle before these bytes beyond what already passed (a slot confirmation, sent at its
        slot's start: the slot's guard time is its gap)."""
        if self.closed or not data:
            return
        self.bytes_sent += len(data)
        idle = self._timing.frame_time(1) * self._timing.gap_bytes if gap else 0.0
        self.line_seconds += idle + self._timing.frame_time(len(data))
        pacer = self._pacer  # there is one exactly when the line is paced
        if pacer is None:
            self.delivered_at = time.monotonic()
            self._deliver(data)
            return
        now = time.monotonic()
        start = max(now, self._free_at + idle)
        self._free_at = start + self._timing.frame_time(len(data))
        self._queue.append((self._free_at, data))
        pacer.at(self._free_at, self._release)

    def due_bytes(self) -> int:
        """Bytes whose time on the wire is over but which wait for the pacer to hand them over (an event loop held up
        past their deadline): already arrived, as far as the receiver's UART is concerned."""
        now = time.monotonic()
        return sum(len(data) for deadline, data in self._queue if deadline <= now)

    def after(self, callback: Callable[[], None]) -> None:
        """Run `callback` once everything sent so far has been delivered (an end of file follows the bytes)."""
        if self._pacer is None or self._free_at <= time.monotonic():
            callback()
            return
        self._pacer.at(self._free_at, callback)

    def _release(self) -> None:
        # Deadlines of one direction increase, so the pacer releases its frames in the order they were sent.
        if self._queue and not self.closed:
            self.delivered_at, data = self._queue.pop(0)
            self._deliver(data)
