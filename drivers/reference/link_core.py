"""The reference link's transport half: sending a DATA frame until its ACK (retries, NAK, a frame kept for a host
that restarts), reading and parsing the line, ACK/NAK writing, closing (docs/protocol.md section 4).

What each received frame means at either end (delivery, duplicates, v3 REPLY, GROUP slots) is link.Link's.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog

from drivers.reference.framing import (
    COMPACT_VERSIONS,
    HOST_ADDRESS,
    PROTOCOLS,
    VERSION,
    Frame,
    FrameParser,
    Kind,
    encode_frame,
    encode_message,
)
from drivers.reference.line_reader import LineReader
from drivers.reference.transport import (
    DEFAULT_ACK_TIMEOUT,
    DEFAULT_RETRIES,
    ByteReader,
    ByteWriter,
    LinkClosed,
    LinkTimeout,
)
from drivers.tasks import cancel_and_wait

log = structlog.get_logger(__name__)

# Turns of the event loop an expired ACK timer (or a closing slot window) may take to read what the line already
# delivered: the serial transport reads 1024 bytes a turn, and 100 ms of a 115200-baud line is 1152 bytes, so a few
# turns do; the bound keeps a line flooded with noise from holding the exchange up.
_CATCH_UP_TURNS = 16


class LinkCore:
    """One end of a point-to-point link, up to the frames: subclasses say what a received frame means (`_handle`)."""

    def __init__(
        self,
        reader: ByteReader,
        writer: ByteWriter,
        *,
        local_address: int,
        peer_address: int,
        on_data: Callable[[bytes], None],
        on_closed: Callable[[str], None] | None = None,
        on_noise: Callable[[int, int], None] | None = None,
        ack_timeout: float = DEFAULT_ACK_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        initial_seq: int | None = None,
        name: str = "link",
        versions: frozenset[int] = PROTOCOLS,
        in_waiting: Callable[[], int] | None = None,
    ) -> None:
        self._writer = writer
        self.local_address = local_address
        self.peer_address = peer_address
        self._on_data = on_data
        self._on_closed = on_closed
        self._on_noise = on_noise
        self.ack_timeout = ack_timeout
        self.retries = retries
        self.name = name
        self.parser = FrameParser(versions)
        # The version this end sends DATA in. A host raises it to 2 once the device offered 2 at identify; a
        # device (follow_peer) sends in the version of the host's last frame to it (docs/protocol.md section 10).
        self.version = VERSION
        self.follow_peer = False
        # DATA frames received for this end, by version: what tests and benches read to see the negotiated version.
        self.data_versions: Counter[int] = Counter()
        # A random first SEQ keeps a peer that survived our reconnect from taking frame one as a repeat.
        self._next_seq = random.randrange(256) if initial_seq is None else initial_seq
        self._send_lock = asyncio.Lock()
        self._awaiting: tuple[int, asyncio.Future[Kind]] | None = None
        # Device end (docs/protocol.md section 4, "A host that restarts"): keep a frame the host never ACKed after all
        # retries instead of failing it, until `peer_restarted` (the host identifies) sends it again with fresh
        # retries. `_parked` is what the kept frame waits on; `_fresh_retries` makes the exchange start its count anew.
        self.keep_undelivered = False
        self._parked: asyncio.Future[None] | None = None
        self.holding = asyncio.Event()  # set while a frame is kept that way
        self._fresh_retries = False
        self._last_delivered: tuple[int, bytes] | None = None
        self._line = LineReader(reader, self)
        self.closed = asyncio.Event()
        self.close_reason = ""
        self._noise_reported = (0, 0)
        # Seconds to hold back each ACK/NAK we send: a simulator's "slow reply" fault. Held back in a
        # task of its own so the reader keeps reading (and retransmissions keep being answered).
        self.control_delay = 0.0
        self._delayed: set[asyncio.Task[None]] = set()
        # Awaited after each DATA frame is written, before its ACK timer starts: a simulated station on a paced shared
        # line returns once the frame has left the line (a station listens before it talks: its frame may queue behind
        # the others'). None: the timer starts once the writer took the frame, as on a serial port.
        self.frame_left: Callable[[], Awaitable[None]] | None = None
        # Received bytes not yet read (drivers.serial_port.unread_input), read when an ACK timer expires; None: unknown
        self._in_waiting = in_waiting

    def start(self) -> None:
        """Start reading the line (line_reader.LineReader: a serial port's frames in its read callback)."""
        self._line.start()

    async def send(self, message: Mapping[str, Any]) -> None:
        """Send one DATA frame and return once the peer ACKed it; LinkTimeout / LinkClosed otherwise."""
        async with self._send_lock:
            if self.closed.is_set():
                raise LinkClosed(self.close_reason or "link closed")
            seq = self._next_seq
            self._next_seq = (seq + 1) % 256
            frame = self.data_frame(self.peer_address, seq, message, self.version)

            def register(future: asyncio.Future[Kind]) -> None:
                self._awaiting = (seq, future)

            def release() -> None:
                self._awaiting = None

            await self._exchange(frame, register, release, f"for {message.get('cmd') or message.get('evt')}")

    def data_frame(self, peer: int, seq: int, message: Mapping[str, Any], version: int) -> bytes:
        """A DATA frame to `peer` in `version`; a message a v2 frame cannot carry (longer than 255 bytes) goes in
        v1, which every v2 receiver reads too."""
        if version in COMPACT_VERSIONS:
            try:
                payload = encode_message(message, version)
            except ValueError:
                payload = b""  # too long, or not carried by v2 (a name that is not text)
            if payload:
                return self._encode(peer, seq, Kind.DATA, payload, version)
        return self._encode(peer, seq, Kind.DATA, encode_message(message), VERSION)

    def _encode(self, peer: int, seq: int, kind: Kind, payload: bytes, version: int) -> bytes:
        # v2 and v3 name the device in ADDR both ways; a device's frames say so with FROM_DEVICE.
        from_device = version in COMPACT_VERSIONS and self.local_address != HOST_ADDRESS
        address = self.local_address if from_device else peer
        return encode_frame(address, seq, kind, payload, version, from_device)

    async def _exchange(
        self,
        frame: bytes,
        register: Callable[[asyncio.Future[Kind]], None],
        release: Callable[[], None],
        what: str,
        write: Callable[[bytes], Awaitable[None]] | None = None,
    ) -> None:
        """Write a DATA frame until its ACK arrives: again after a timeout, at once after a NAK, at most
        retries + 1 times; then LinkClosed or LinkTimeout. The caller says how its pending ACK is kept, and may say how
        each copy is written (a bus holds a frame a station answers while a slot window is open: BusLink.send_to)."""
        write = self._write if write is None else write
        self._fresh_retries = False
        kept = self.keep_undelivered
        try:
            attempt = 0
            while attempt <= self.retries:
                future: asyncio.Future[Kind] = asyncio.get_running_loop().create_future()
                register(future)
                await write(frame)
                if self.frame_left is not None:
                    await self.frame_left()
                attempt += 1
                kind = await self._answer_to(future, register)
                if kind == Kind.ACK:
                    return
                # NAK: the peer saw a damaged copy, so resend at once. A restarted peer never saw the earlier copies:
                # it gets a whole count of retries from now.
                if self._fresh_retries:
                    self._fresh_retries, attempt, kept = False, 0, False
                elif attempt > self.retries and kept and await self._park():
                    kept, attempt = False, 0  # one more round for the host that identified; then give up
        finally:
            release()
        if self.closed.is_set():
            raise LinkClosed(self.close_reason or "link closed")
        raise LinkTimeout(f"no ACK {what} after {self.retries + 1} attempts of {self.ack_timeout:g} s")

    async def _answer_to(self, future: asyncio.Future[Kind], register: Callable[[asyncio.Future[Kind]], None]) -> Kind:
        """The peer's answer (ACK, or NAK: resend) to the frame just written: NAK if none came within the ACK timeout
        and none waits unread on the port then (docs/protocol.md sections 4 and 12).

        After a stall of the event loop (a journal commit, a GC pause) the timer can run in the same turn as, or
        before, the read of an ACK or REPLY that arrived meanwhile: the peer answered in time, yet we would send the
        frame again (and a v3 device would answer it again). So what the port holds is read first, as a bus's slot
        window does (BusLink.await_slots)."""
        # The future itself is awaited, and the timer settles it: the reader that takes the ACK wakes this task at once
        # (asyncio.wait cost a completion callback and one more turn for each frame sent). Not a timeout around
        # `await future`, which would cancel it; nor wait_for: 3.11's can swallow a cancellation.
        expired = False

        def expire() -> None:
            nonlocal expired
            if not future.done():
                expired = True
                future.set_result(Kind.NAK)

        timer = asyncio.get_running_loop().call_later(self.ack_timeout, expire)
        try:
            kind = await future  # LinkClosed if the line closed meanwhile
        finally:
            timer.cancel()
        if not expired or self._in_waiting is None:
            return kind
        # An answer read from here on must still count: a fresh future takes it for the same frame.
        late: asyncio.Future[Kind] = asyncio.get_running_loop().create_future()
        register(late)
        await self.read_arrived()
        if not late.done():
            late.cancel()
            return Kind.NAK
        return late.result()

    async def read_arrived(self) -> None:
        """Return once the reader has handled every byte the OS held for this line when called (or more turns than an
        ACK timeout's bytes need have passed, or the line closed).

        While the OS holds bytes, yield a turn: the loop's selector polls the line and the transport hands them to the
        reader. Once it holds none, everything it delivered was handed over in an earlier turn: parsed there and then
        (a PushReader, start), or waking the read loop before this task, which one more turn lets settle it."""
        for _turn in range(_CATCH_UP_TURNS):
            if self.closed.is_set():
                return
            waiting = self._waiting()
            await asyncio.sleep(0)
            if not waiting:
                return
        log.warning("stopped waiting with bytes still unread", link=self.name, unread=self._waiting())

    def _waiting(self) -> int:
        if self._in_waiting is None:
            return 0
        try:
            return self._in_waiting()
        except OSError:
            return 0  # the line went away: its reader reports that

    async def _park(self) -> bool:
        """Hold the frame no ACK came for until the peer restarts (True) or the link closes (False)."""
        self._parked = asyncio.get_running_loop().create_future()
        self.holding.set()
        try:
            await self._parked
        except LinkClosed:
            return False
        finally:
            self._parked = None
            self.holding.clear()
        self._fresh_retries = False
        return True

    def peer_restarted(self) -> None:
        """Device end: the host identified, so it may be a new host session that never saw the frame we are
        resending (docs/protocol.md section 4): send it again at once, with a whole count of retries, so the answer
        to `identify` that waits behind it is not held up by our retry timer, nor lost with a frame we gave up on."""
        if self._parked is not None and not self._parked.done():
            self._parked.set_result(None)
        elif self._awaiting is not None and not self._awaiting[1].done():
            self._fresh_retries = True
            self._awaiting[1].set_result(Kind.NAK)

    async def close(self, reason: str = "closed locally", *, close_transport: bool = True) -> None:
        """Stop reading and fail any pending send; close_transport=False leaves the line open but deaf."""
        await self._line.stop()
        for task in list(self._delayed):
            await cancel_and_wait(task)
        self._finish(reason)
        if not close_transport:
            return
        with contextlib.suppress(Exception):
            self._writer.close()
        # Stream writers close in the background (pyserial closes in an executor); wait so nothing
        # outlives the caller's event loop.
        wait_closed = getattr(self._writer, "wait_closed", None)
        if wait_closed is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await wait_closed()

    async def _write(self, data: bytes) -> None:
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (OSError, RuntimeError, ConnectionError) as exc:
            self._finish(f"write failed: {exc}")
            raise LinkClosed(self.close_reason) from exc

    def _finish(self, reason: str) -> None:
        if self.closed.is_set():
            return
        self.close_reason = reason
        self.closed.set()
        self._fail_pending(LinkClosed(reason))
        if self._on_closed is not None:
            self._call(self._on_closed, reason)

    def _fail_pending(self, error: LinkClosed) -> None:
        if self._parked is not None and not self._parked.done():
            self._parked.set_exception(error)
        if self._awaiting is not None and not self._awaiting[1].done():
            self._awaiting[1].set_exception(error)
            # Retrieve it now: the sender may already have given up on this future.
            self._awaiting[1].exception()

    def _call(self, callback: Callable[..., None], *args: Any) -> None:
        try:
            callback(*args)
        except Exception:
            log.exception("link callback failed", link=self.name, callback=getattr(callback, "__name__", ""))

    def _send_control_frame(self, frame: bytes) -> None:
        if self.control_delay > 0:
            task = asyncio.get_running_loop().create_task(self._send_control_later(frame, self.control_delay))
            self._delayed.add(task)
            task.add_done_callback(self._delayed.discard)
            return
        self._send_control_now(frame)

    def _report_noise(self) -> None:
        noise = (self.parser.discarded_bytes, self.parser.bad_frames)
        if noise != self._noise_reported:
            self._noise_reported = noise
            if self._on_noise is not None:
                self._call(self._on_noise, *noise)

    def _send_control(self, kind: Kind, seq: int, address: int | None = None, *, version: int = VERSION) -> None:
        """An ACK or NAK, in the version of the frame it answers."""
        self._send_control_frame(
            self._encode(self.peer_address if address is None else address, seq, kind, b"", version)
        )

    async def _send_control_later(self, frame: bytes, delay: float) -> None:
        await asyncio.sleep(delay)
        if not self.closed.is_set():
            self._send_control_now(frame)

    def _send_control_now(self, frame: bytes) -> None:
        # Written, not drained: a control frame is 6 to 9 bytes, answers a frame just read, and is sent from the read
        # callback, which must not wait. A transport that failed ends the session here or in its reader.
        try:
            self._writer.write(frame)
        except (OSError, RuntimeError, ConnectionError) as exc:
            self._finish(f"write failed: {exc}")

    def _handle(self, frames: list[Frame]) -> None:
        raise NotImplementedError
