"""Link layer of the reference protocol: ACK/NAK, retransmission and duplicate suppression (one peer).

Used unchanged by the host drivers and by the simulators, so both ends of every test run the same code.
A multi-drop line's host end is bus_link.BusLink.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import structlog

from drivers.reference.framing import (
    BROADCAST_ADDRESS,
    COMPACT_VERSIONS,
    GROUP_ANSWERS,
    HOST_ADDRESS,
    VERSION,
    VERSION_2,
    VERSION_3,
    VERSIONS,
    Frame,
    FrameParser,
    Kind,
    ProtocolError,
    bare_code,
    decode_message,
    encode_frame,
    encode_message,
    slot_confirmation,
)
from drivers.tasks import cancel_and_wait

log = structlog.get_logger(__name__)

DEFAULT_ACK_TIMEOUT = 0.1
DEFAULT_RETRIES = 3
# A UART sender emits a frame back to back; a gap this long inside a frame means it is dead.
IDLE_EXPIRY = 0.05


class ByteReader(Protocol):
    async def read(self, n: int = -1) -> bytes: ...


class ByteWriter(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class LinkError(Exception):
    pass


class LinkTimeout(LinkError):
    """The peer did not ACK a DATA frame after all retransmissions."""


class LinkClosed(LinkError):
    """The transport closed (EOF or read error): for a serial device, an unplug."""


class Link:
    """One end of a point-to-point reference-protocol link.

    `on_data` gets each DATA payload once, in order; `on_noise(discarded_bytes, bad_frames)` gets the
    running totals whenever garbage was seen; `on_closed(reason)` is called once when the transport
    ends. Callbacks are synchronous and must not block; exceptions they raise are logged, not fatal.
    """

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
        versions: frozenset[int] = VERSIONS,
    ) -> None:
        self._reader = reader
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
        self._last_broadcast: tuple[int, bytes] | None = None
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
        self._reader_task: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()
        self.close_reason = ""
        self._noise_reported = (0, 0)
        # Seconds to hold back each ACK/NAK we send: a simulator's "slow reply" fault. Held back in a
        # task of its own so the reader keeps reading (and retransmissions keep being answered).
        self.control_delay = 0.0
        self._delayed: set[asyncio.Task[None]] = set()
        # v3 (device end): the host frame being delivered to on_data, which `answer` may answer at once with a REPLY,
        # the answer given, and the frame that answered the last delivered frame (repeated if the host retransmits).
        self._answering: int | None = None
        self._answer: bytes | None = None
        self._last_response: bytes | None = None
        # v3 GROUP (device end): while a GROUP frame naming this station is delivered, (its command code, this
        # station's slot); whether the station confirmed in it; and who writes the confirmation at the slot's time
        # (slot_writer(slot, two bytes): a simulator paces it; without one it is written at once).
        self._group: tuple[int, int] | None = None
        self._slot_confirmed = False
        self.slot_writer: Callable[[int, bytes], None] | None = None

    def start(self) -> None:
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop(), name=self.name)

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
        self, frame: bytes, register: Callable[[asyncio.Future[Kind]], None], release: Callable[[], None], what: str
    ) -> None:
        """Write a DATA frame until its ACK arrives: again after a timeout, at once after a NAK, at most
        retries + 1 times; then LinkClosed or LinkTimeout. The caller says how its pending ACK is kept."""
        self._fresh_retries = False
        kept = self.keep_undelivered
        try:
            attempt = 0
            while attempt <= self.retries:
                future: asyncio.Future[Kind] = asyncio.get_running_loop().create_future()
                register(future)
                await self._write(frame)
                attempt += 1
                try:
                    # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation.
                    async with asyncio.timeout(self.ack_timeout):
                        kind = await future
                except TimeoutError:
                    kind = Kind.NAK
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
        await cancel_and_wait(self._reader_task)
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

    async def _read_loop(self) -> None:
        reason = "end of file"
        try:
            while True:
                if self.parser.pending:
                    try:
                        async with asyncio.timeout(IDLE_EXPIRY):
                            data = await self._reader.read(4096)
                    except TimeoutError:
                        await self._handle(self.parser.expire())
                        continue
                else:
                    data = await self._reader.read(4096)
                if not data:
                    break
                await self._handle(self.parser.feed(data))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            reason = f"read failed: {exc}"
            log.warning("link reader stopped", link=self.name, error=str(exc))
        self._finish(reason)

    async def _handle(self, frames: list[Frame]) -> None:
        for corrupt in self.parser.take_corrupt():
            if corrupt.kind == Kind.DATA and corrupt.destination == self.local_address:
                await self._send_control(Kind.NAK, corrupt.seq, version=corrupt.version)
        for frame in frames:
            if frame.destination == BROADCAST_ADDRESS and self.local_address != HOST_ADDRESS:
                self._broadcast(frame)
                continue
            if frame.destination != self.local_address:
                continue  # for another device on the bus
            if self.follow_peer and frame.kind == Kind.DATA:
                # The host's commands set the version, not its ACKs: an ACK of a frame kept from before the host
                # restarted comes in that frame's version, and must not make the answer to a v1 `identify` v3.
                self.version = frame.version
            if frame.kind == Kind.REPLY:
                self._replied(frame)
            elif frame.kind == Kind.DATA and frame.version == VERSION_3 and self.local_address != HOST_ADDRESS:
                await self._answer_v3(frame)
            elif frame.kind == Kind.DATA:
                self.data_versions[frame.version] += 1
                await self._send_control(Kind.ACK, frame.seq, version=frame.version)
                if self._last_delivered == (frame.seq, frame.payload):
                    continue  # our ACK was lost and the peer retransmitted
                self._last_delivered = (frame.seq, frame.payload)
                self._call(self._on_data, frame.payload)
            elif self._awaiting is not None and self._awaiting[0] == frame.seq and not self._awaiting[1].done():
                self._awaiting[1].set_result(frame.kind)
        self._report_noise()

    def _replied(self, frame: Frame) -> None:
        """v3, host end: a device's REPLY is the ACK of our outstanding frame with its SEQ and the device's answer in
        one. One that matches nothing outstanding repeats an answer already taken (its first copy was late, not
        lost): dropped, so the answer is delivered once."""
        awaiting = self._awaiting
        if awaiting is None or awaiting[0] != frame.seq or awaiting[1].done():
            return
        awaiting[1].set_result(Kind.ACK)
        self.data_versions[frame.version] += 1
        self._call(self._on_data, frame.payload)

    async def _answer_v3(self, frame: Frame) -> None:
        """v3, device end: deliver the host's frame first, so a bare answer given meanwhile (`answer`) goes back as
        the REPLY that also ACKs it; otherwise an ACK as in v1. A retransmission gets the same response again."""
        self.data_versions[frame.version] += 1
        if self._last_delivered == (frame.seq, frame.payload) and self._last_response is not None:
            await self._send_control_frame(self._last_response)
            return
        self._last_delivered = (frame.seq, frame.payload)
        self._answering, self._answer = frame.seq, None
        try:
            self._call(self._on_data, frame.payload)
        finally:
            self._answering = None
        if self._answer is not None:
            response = self._encode(self.peer_address, frame.seq, Kind.REPLY, self._answer, VERSION_3)
        else:
            response = self._encode(self.peer_address, frame.seq, Kind.ACK, b"", VERSION_3)
        self._last_response = response
        await self._send_control_frame(response)

    def answer(self, message: Mapping[str, Any]) -> bool:
        """Answer the v3 host frame now being delivered with `message` in its REPLY (no ACK frame, no DATA frame of its
        own): only a bare event ({"evt": name} of the v2 table), only while that frame is delivered, and only when
        nothing this end sent earlier is still unacknowledged (the answer must not overtake it). False otherwise:
        send it the usual way. While a GROUP frame is delivered, the answer that confirms it goes in this station's
        slot instead (docs/protocol.md section 13), on the same conditions."""
        if self._group is not None:
            return self._confirm_in_slot(message)
        if self._answering is None or self._answer is not None or self._unacknowledged():
            return False
        try:
            payload = encode_message(message, VERSION_3)
        except ValueError:
            return False
        code = bare_code(payload)
        if code is None or code[0] != 1:
            return False
        self._answer = payload
        return True

    def _unacknowledged(self) -> bool:
        """Whether a frame this end sent still waits for its ACK. An ACK that arrived in the bytes just read counts
        (the sender has not resumed yet, but the peer has the frame): an answer after it overtakes nothing."""
        return self._awaiting is not None and not self._awaiting[1].done()

    def _confirm_in_slot(self, message: Mapping[str, Any]) -> bool:
        assert self._group is not None
        if self._slot_confirmed or self._unacknowledged():
            return False
        try:
            code = bare_code(encode_message(message, VERSION_3))
        except ValueError:
            return False
        if code is None or code[0] != 1 or GROUP_ANSWERS.get(self._group[0]) != code[1]:
            return False
        self._slot_confirmed = True
        return True

    def _group_frame(self, frame: Frame) -> None:
        """v3, device end: a GROUP frame. A station it names acts on the command, and confirms in its slot when the
        answer is the bare event the command expects and nothing it sent earlier is unacknowledged; otherwise it
        sends the answer the usual way after the slots, and the host, not having heard it in its slot, locks it on
        its own. The same GROUP heard again (same SEQ and payload) is not acted on twice."""
        try:
            message = decode_message(frame.payload)
        except ProtocolError:
            return
        stations = message.get("stations")
        cmd = frame.payload[2] if frame.payload[2] < 0x18 else frame.payload[3]  # group_payload: A2 00 <code> ...
        if not isinstance(stations, list) or self.local_address not in stations or cmd not in GROUP_ANSWERS:
            return  # not named, or a command this version does not know: ignored entirely, as on a real line
        if self.follow_peer:
            self.version = VERSION_3
        if self._last_broadcast == (frame.seq, frame.payload):
            return
        self._last_broadcast = (frame.seq, frame.payload)
        self._group, self._slot_confirmed = (cmd, stations.index(self.local_address)), False
        try:
            self._call(self._on_data, frame.payload)
        finally:
            slot = self._group[1]
            self._group = None
        if self._slot_confirmed:
            data = slot_confirmation(self.local_address, frame.seq)
            if self.slot_writer is not None:
                self.slot_writer(slot, data)
            else:
                self._writer.write(data)

    async def _send_control_frame(self, frame: bytes) -> None:
        if self.control_delay > 0:
            task = asyncio.get_running_loop().create_task(self._send_control_later(frame, self.control_delay))
            self._delayed.add(task)
            task.add_done_callback(self._delayed.discard)
            return
        await self._send_control_now(frame)

    def _broadcast(self, frame: Frame) -> None:
        """A host frame to every station on the line: never ACKed (the stations would collide); the station
        answers it, if it names the station, with an event of its own (docs/protocol.md, "Broadcast lock")."""
        if frame.kind == Kind.GROUP:
            self._group_frame(frame)
            return
        if frame.kind != Kind.DATA or frame.version != VERSION_2:
            return
        if self.follow_peer:
            self.version = VERSION_2
        if self._last_broadcast == (frame.seq, frame.payload):
            return
        self._last_broadcast = (frame.seq, frame.payload)
        self._call(self._on_data, frame.payload)

    def _report_noise(self) -> None:
        noise = (self.parser.discarded_bytes, self.parser.bad_frames)
        if noise != self._noise_reported:
            self._noise_reported = noise
            if self._on_noise is not None:
                self._call(self._on_noise, *noise)

    async def _send_control(self, kind: Kind, seq: int, address: int | None = None, *, version: int = VERSION) -> None:
        """An ACK or NAK, in the version of the frame it answers."""
        await self._send_control_frame(
            self._encode(self.peer_address if address is None else address, seq, kind, b"", version)
        )

    async def _send_control_later(self, frame: bytes, delay: float) -> None:
        await asyncio.sleep(delay)
        if not self.closed.is_set():
            await self._send_control_now(frame)

    async def _send_control_now(self, frame: bytes) -> None:
        # On failure the read loop sees the same dead transport and reports it.
        with contextlib.suppress(LinkClosed):
            await self._write(frame)
