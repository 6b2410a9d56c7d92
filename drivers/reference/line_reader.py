"""Reading a reference link's line: the bytes a link receives, parsed into frames and handed to what the link does
with them (link.Link._handle), and the line's end reported once (docs/protocol.md sections 2 and 4).

A serial port opened by drivers.serial_port is a PushReader: its chunks are parsed in the transport's read callback,
so a device frame costs the loop one callback (bench/footprint.py --wakeups). Any other reader (the simulators' pty
ends, a test's pipe) is read by a task, as before.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import structlog

from drivers.reference.framing import Frame, FrameParser
from drivers.reference.transport import IDLE_EXPIRY, ByteReader, PushReader
from drivers.tasks import cancel_and_wait, session_task

log = structlog.get_logger(__name__)


class FrameSink(Protocol):
    """The link a LineReader feeds: its parser (read afresh for each chunk), what it does with a batch of frames, and
    how the session ends."""

    parser: FrameParser
    name: str

    def _handle(self, frames: list[Frame]) -> None: ...

    def _finish(self, reason: str) -> None: ...


class LineReader:
    """Feeds `sink` what `reader` receives until the line ends (then sink._finish("end of file" or "read failed: ..."),
    once) or `stop`. A parser or handler error ends the session the same way, logged: never a reader that died
    unnoticed with the link still looking alive."""

    def __init__(self, reader: ByteReader, sink: FrameSink) -> None:
        self._reader = reader
        self._sink = sink
        self._task: asyncio.Task[None] | None = None
        # The push path: whether chunks are still taken, and the timer that drops a partial frame once its line has
        # been silent IDLE_EXPIRY (the read loop's timeout), moved on lazily rather than re-armed for every chunk.
        self._listening = False
        self._idle_timer: asyncio.TimerHandle | None = None
        self._last_bytes = 0.0

    def start(self) -> None:
        if isinstance(self._reader, PushReader):
            # A frame costs one loop callback: parsed, ACKed and handed to its waiter in the read that brought it.
            self._listening = True
            self._reader.attach(self._received, self._ended)
            return
        # The reader ends with the session (the line closed, the device unplugged), which the driver reports.
        self._task = session_task(asyncio.get_running_loop().create_task(self._read_loop(), name=self._sink.name))

    async def stop(self) -> None:
        self._stop_listening()
        await cancel_and_wait(self._task)

    def _received(self, data: bytes) -> None:
        if not self._listening:
            return
        try:
            self._sink._handle(self._sink.parser.feed(data))
        except Exception as exc:
            self._failed(exc)
            return
        if self._sink.parser.pending:
            loop = asyncio.get_running_loop()
            self._last_bytes = loop.time()
            if self._idle_timer is None:
                self._idle_timer = loop.call_at(self._last_bytes + IDLE_EXPIRY, self._idle)

    def _idle(self) -> None:
        self._idle_timer = None
        if not self._listening or not self._sink.parser.pending:
            return
        loop = asyncio.get_running_loop()
        due = self._last_bytes + IDLE_EXPIRY
        if loop.time() < due:
            self._idle_timer = loop.call_at(due, self._idle)
            return
        try:
            self._sink._handle(self._sink.parser.expire())
        except Exception as exc:
            self._failed(exc)

    def _ended(self, error: BaseException | None) -> None:
        if not self._listening:
            return
        if error is not None:
            self._failed(error)
            return
        self._stop_listening()
        self._sink._finish("end of file")

    def _failed(self, error: BaseException) -> None:
        log.warning("link reader stopped", link=self._sink.name, error=str(error))
        self._stop_listening()
        self._sink._finish(f"read failed: {error}")

    def _stop_listening(self) -> None:
        self._listening = False
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    async def _read_loop(self) -> None:
        reason = "end of file"
        try:
            while True:
                if self._sink.parser.pending:
                    try:
                        async with asyncio.timeout(IDLE_EXPIRY):
                            data = await self._reader.read(4096)
                    except TimeoutError:
                        self._sink._handle(self._sink.parser.expire())
                        continue
                else:
                    data = await self._reader.read(4096)
                if not data:
                    break
                self._sink._handle(self._sink.parser.feed(data))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            reason = f"read failed: {exc}"
            log.warning("link reader stopped", link=self._sink.name, error=str(exc))
        self._sink._finish(reason)
