"""The host's end of a multi-drop reference-protocol line (docs/protocol.md, "Multi-drop lines")."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import structlog

from drivers.reference.bus_window import (
    ANSWER_EVENTS,
    EVENT_ANSWER,
    IDENTITY_ANSWER,
    IDENTITY_BITS,
    SHORT_ANSWER,
    Addressed,
    LineWindow,
    NotWanted,
)
from drivers.reference.framing import (
    BROADCAST_ADDRESS,
    HOST_ADDRESS,
    VERSION,
    VERSION_2,
    VERSION_3,
    Frame,
    Kind,
    ProtocolError,
    decode_message,
    encode_frame,
    encode_group,
    encode_message,
    group_confirms,
)
from drivers.reference.link import (
    DEFAULT_ACK_TIMEOUT,
    DEFAULT_RETRIES,
    ByteReader,
    ByteWriter,
    Link,
    LinkClosed,
    LinkError,
)

log = structlog.get_logger(__name__)


def read_payload(payload: bytes) -> dict[str, Any] | None:
    """A station's DATA payload decoded, or None if it is damaged: read once, for its `src` (v1) and its `evt`."""
    try:
        return decode_message(payload)
    except ProtocolError:
        return None


def source_address(message: Mapping[str, Any] | None) -> int | None:
    """The `src` a bus station puts in each DATA payload (docs/protocol.md, "Multi-drop lines"), if valid."""
    src = None if message is None else message.get("src")
    if isinstance(src, int) and not isinstance(src, bool) and 1 <= src <= 254:
        return src
    return None


def event_name(message: Mapping[str, Any] | None) -> str | None:
    """The `evt` a station's DATA payload names, if any: which answer it is (LineWindow.heard)."""
    evt = None if message is None else message.get("evt")
    return evt if isinstance(evt, str) else None


def _no_single_peer_data(_payload: bytes) -> None:
    pass


def identify_window(baud: int, ack_timeout: float) -> int:
    """How many stations of a line the host identifies at once (docs/protocol.md section 2, "Identify a few stations
    at a time"): as many answers as fit in half the ACK timeout at the line's baud, at least one. At 115200 baud, 2: the
    next identify crosses the host's pair while the last identity crosses the return pair, and an ACK waits behind
    two identities at most (39 ms in v1); at 9600 baud one identity alone is 235 ms, so 1."""
    return max(1, int(ack_timeout / 2 // (IDENTITY_BITS / baud)))


class _Turn:
    """One `identify`'s turn on a bus: taken before the frame is written, given back once the station answered the
    first transmission (ACK, REPLY or NAK) or its ACK timeout passed (the exchange writes the frame again), or when the
    exchange ends. Seven identities queued on the shared return pair kept the last stations' ACKs past the timeout;
    a few at a time (identify_window), only those few identities can be ahead of an ACK, and a station that does not
    answer holds its turn for one ACK timeout only."""

    def __init__(self, lock: asyncio.Semaphore) -> None:
        self._lock = lock
        self._held = False
        self._transmissions = 0

    async def take(self) -> None:
        await self._lock.acquire()
        self._held = True

    def until(self, future: asyncio.Future[Kind]) -> None:
        """Called as each transmission is registered: the first holds the turn until it is answered, a second means
        the first went unanswered for a whole ACK timeout."""
        self._transmissions += 1
        if self._transmissions == 1:
            future.add_done_callback(lambda _done: self.give())
        else:
            self.give()

    def give(self) -> None:
        if self._held:
            self._held = False
            self._lock.release()


class BusLink(Link):
    """The host's end of a multi-drop line: several stations on one transport.

    Each station (peer address) has its own SEQ counter, its own single outstanding frame and its own
    duplicate suppression, so commands to different stations are in flight at once. `on_data(src,
    payload)` gets each station's DATA payloads once, in order, with the sender's address.
    """

    def __init__(
        self,
        reader: ByteReader,
        writer: ByteWriter,
        *,
        peers: Iterable[int],
        on_data: Callable[[int, bytes], None],
        on_closed: Callable[[str], None] | None = None,
        on_noise: Callable[[int, int], None] | None = None,
        ack_timeout: float = DEFAULT_ACK_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        name: str = "bus",
        in_waiting: Callable[[], int] | None = None,
        identifying: int = 1,
        baud: int = 115200,
        on_slot: Callable[[int, int], None] | None = None,
    ) -> None:
        # 0xFF (reserved) as the single peer: a frame that slipped through the single-peer path would reach
        # nobody rather than a wrong station.
        super().__init__(
            reader,
            writer,
            local_address=HOST_ADDRESS,
            peer_address=0xFF,
            on_data=_no_single_peer_data,
            on_closed=on_closed,
            on_noise=on_noise,
            ack_timeout=ack_timeout,
            retries=retries,
            name=name,
            in_waiting=in_waiting,
        )
        self.peers = frozenset(peers)
        if not self.peers or not all(1 <= p <= 254 for p in self.peers):
            raise ValueError(f"bus peers must be addresses 1..254, got {sorted(self.peers)}")
        self._on_bus_data = on_data
        # (address, GROUP command code) of each slot confirmation, before its answer reaches on_data: a station counted
        # as locked by two bytes only is watched for what a locked station cannot send (wager_bus.BusWagerStation).
        self._on_slot = on_slot
        self._slot_code = 0
        self._next_seqs = {peer: random.randrange(256) for peer in self.peers}
        self._peer_locks = {peer: asyncio.Lock() for peer in self.peers}
        # SEQ -> (peer, future): a station's ACK names only the SEQ it answers, so outstanding SEQs are unique.
        self._outstanding: dict[int, tuple[int, asyncio.Future[Kind]]] = {}
        self._delivered: dict[int, tuple[int, bytes]] = {}
        self.stray_frames = 0
        # The version each station was found to speak at identify (docs/protocol.md section 10).
        self.peer_versions: dict[int, int] = {}
        self._broadcast_seq = random.randrange(256)
        # `identifying` stations identify at a time (docs/protocol.md section 2, "Identify a few stations at a time"): a
        # turn is held from an `identify`'s write until the station answered it or its first ACK timeout passed.
        if identifying < 1:
            raise ValueError(f"identifying must be 1 or more, got {identifying}")
        self._identifying = asyncio.Semaphore(identifying)
        # The host's side of the slot window (docs/protocol.md section 13, "What the host writes around a window"): no
        # frame a station answers is written while a GROUP frame waits to go or its window is on the line, and a GROUP
        # frame waits, a bounded time, for the answers already due to the frames written.
        self.window = LineWindow(10 / baud, self.parser.awaits)

    async def send(self, message: Mapping[str, Any]) -> None:
        raise LinkError(f"{self.name}: a bus has no single peer; use send_to(address, message)")

    async def send_to(self, address: int, message: Mapping[str, Any], still: Callable[[], bool] | None = None) -> None:
        """Send one DATA frame to one station and return once it ACKed; LinkTimeout / LinkClosed otherwise.

        Sends to different stations run concurrently; sends to one station queue behind each other. `still`, asked
        just before each copy goes on the line (the station's earlier sends done, and any slot window or GROUP frame it
        waited for past), False: the message is no longer wanted and is not sent, or not sent again (an unlock
        overtaken by a lock, wager_bus.BusWagerStation); the send returns without an answer.
        """
        if address not in self.peers:
            raise ValueError(f"address {address} is not a station on {self.name}")
        encode_message(message)  # a message that cannot be encoded fails here, before it takes a SEQ
        name = message.get("cmd") or message.get("evt")
        async with self._peer_locks[address]:
            turn = _Turn(self._identifying) if name == "identify" else None
            if turn is not None:
                await turn.take()
            try:
                if self.closed.is_set():
                    raise LinkClosed(self.close_reason or "link closed")
                seq = self._take_seq(address)
                frame = self.data_frame(address, seq, message, self.peer_versions.get(address, VERSION))
                # A v1 or v2 station ACKs, then answers in a frame of its own (an identify: its `identity`).
                follows = self.peer_versions.get(address, VERSION) < VERSION_3
                answer = IDENTITY_ANSWER if name == "identify" else EVENT_ANSWER if follows else SHORT_ANSWER
                # A v1 station's `lock` goes even while the broadcast lock waits to go (hold), which waits for its
                # answer: the lock-out's frames in turn, the `lock` not kept until after the slots.
                first = follows and name == "lock"
                expected = ANSWER_EVENTS.get(name) if follows and isinstance(name, str) else None
                addressed = Addressed(
                    address, seq, answer, still, event_follows=follows, ahead_of_group=first, answer_event=expected
                )

                def register(future: asyncio.Future[Kind]) -> None:
                    self._outstanding[seq] = (address, future)
                    if turn is not None:
                        turn.until(future)

                def release() -> None:
                    self._outstanding.pop(seq, None)
                    self.window.released(addressed)

                write = functools.partial(self._write_to, addressed)
                await self._exchange(frame, register, release, f"from address {address} for {name}", write)
            except NotWanted:
                return
            finally:
                if turn is not None:
                    turn.give()

    def forget(self, address: int) -> None:
        """Forget the last frame delivered from `address`: a station that restarted may reuse its SEQs, and may
        have been replaced by one that speaks another version (v1 until it identifies again)."""
        self._delivered.pop(address, None)
        self.peer_versions.pop(address, None)

    async def broadcast(self, message: Mapping[str, Any], answers: Collection[asyncio.Future[None]] = ()) -> None:
        """Write one v2 DATA frame every station hears (ADDR 0xFF); nobody ACKs it. The caller names the stations
        that must act in the message and waits for their answers (docs/protocol.md, "Broadcast lock"), `answers`, one
        for each station named, settled as its answer is read: until then or their slots' line time, no frame a
        station answers goes on the line (LineWindow.broadcast_written)."""
        if self.closed.is_set():
            raise LinkClosed(self.close_reason or "link closed")
        # Its own SEQ counter, distinct from each station's: a station compares a broadcast only with the last
        # broadcast it heard.
        seq = self._broadcast_seq
        self._broadcast_seq = (seq + 1) % 256
        frame = encode_frame(BROADCAST_ADDRESS, seq, Kind.DATA, encode_message(message, VERSION_2), VERSION_2)
        # Counted before the write: an addressed frame whose turn comes while this one drains waits for the slots.
        self.window.broadcast_written(len(frame), answers)
        await self._write(frame)

    def send_group(self, code: int, stations: Iterable[int], on: bool | None = None) -> None:
        """Write one v3 GROUP frame (command `code` to `stations`) at once, without waiting for the transport, and open
        the slot window: each named station's two-byte confirmation then reaches on_data as its bare answer
        (`{"evt":"locked"}`), once. The caller waits for the answers and calls close_slots() (docs/protocol.md
        section 13). LinkClosed if the line is closed or the write fails."""
        if self.closed.is_set():
            raise LinkClosed(self.close_reason or "link closed")
        named = sorted(set(stations))
        unknown = [a for a in named if a not in self.peers]
        if unknown:
            raise ValueError(f"addresses {unknown} are not stations on {self.name}")
        seq = self._broadcast_seq
        self._broadcast_seq = (seq + 1) % 256
        frame = encode_group(seq, code, named, on)  # before the window opens: a bad request changes nothing
        self._slot_code = code
        self.parser.open_slots(seq, named, group_confirms(code, on))
        self.window.open(len(frame), len(named))
        try:
            # 10 bytes or so: a serial writer takes them into its buffer, no drain needed before the slots.
            self._writer.write(frame)
        except (OSError, RuntimeError, ConnectionError) as exc:
            self.close_slots()
            self._finish(f"write failed: {exc}")
            raise LinkClosed(self.close_reason) from exc

    def close_slots(self) -> None:
        self.parser.close_slots()
        self.window.end()

    def hold(self) -> None:
        """Keep every frame a station would answer off the line until unhold(): a GROUP frame is about to go."""
        self.window.hold()

    def unhold(self) -> None:
        self.window.unhold()

    def answers_due(self) -> bool:
        """Whether a station may still be answering a frame the host wrote (within that exchange's line time)."""
        return self.window.answers_due()

    def window_open(self) -> bool:
        return self.window.is_open()

    async def clear_for_group(self, slack: float) -> bool:
        """Wait, under a hold(), until the line is clear for a GROUP frame (LineWindow.clear_for_group); True if no
        window is open then."""
        return await self.window.clear_for_group(slack)

    async def _write_to(self, addressed: Addressed, frame: bytes) -> None:
        """Write one copy of a frame a station answers (ACK, REPLY or ANSWER on the shared return pair) once the slot
        window allows it (LineWindow.turn), and count its answer as due. Every other frame the host writes (a broadcast,
        its ACKs on its own pair) goes through _write and never waits."""
        await self.window.turn(addressed)
        self.window.copying(addressed, len(frame))
        await self._write(frame)
        entry = self._outstanding.get(addressed.seq)  # the exchange registered its future before the write
        if entry is not None and entry[0] == addressed.address:
            self.window.written(addressed, len(frame), entry[1])

    async def await_slots(self, confirmations: Collection[asyncio.Future[None]], window: float) -> None:
        """Return once every confirmation is done, or `window` seconds have passed and what the line had delivered by
        then has been read; the caller then closes the window (close_slots) and locks those still missing on their own.

        After a stall of the event loop (a journal commit, a GC pause) the window's timer can run in the same turn as,
        or before, the read of bytes that arrived meanwhile: the stations confirmed 3.3 ms after the GROUP frame, yet
        the host would close the window unread and lock all seven one by one (docs/protocol.md section 13, "The host's
        slot window")."""
        if not confirmations:
            return
        # asyncio.wait, not gather under a timeout: that would cancel the confirmations and count them as answered.
        await asyncio.wait(confirmations, timeout=window)
        if not all(c.done() for c in confirmations):
            await self.read_arrived()

    def _take_seq(self, address: int) -> int:
        # Skip SEQs in flight to other stations (at most 253 are), and those an answer still due names while one is free
        # (LineWindow.next_seq): never this station's previous SEQ, so a new command is not taken for a retransmission.
        seq = self.window.next_seq(self._next_seqs[address], self._outstanding)
        self._next_seqs[address] = (seq + 1) % 256
        return seq

    def _fail_pending(self, error: LinkClosed) -> None:
        for _peer, future in self._outstanding.values():
            if not future.done():
                future.set_exception(error)
                future.exception()

    def _handle(self, frames: list[Frame]) -> None:
        # Damaged frames are not NAKed: their sender is named only inside the damaged payload. The station
        # retransmits on its ACK timeout instead.
        self.parser.take_corrupt()
        for frame in frames:
            if frame.destination != HOST_ADDRESS:
                continue  # the host's own frames, heard back on a two-wire bus
            if frame.kind == Kind.SLOT:
                # A confirmation in its slot: the parser took it once, for a station it awaited; nobody ACKs it.
                self.data_versions[frame.version] += 1
                if self._on_slot is not None:
                    self._call(self._on_slot, frame.address, self._slot_code)
                self._call(self._on_bus_data, frame.address, frame.payload)
                self.window.confirmed()  # a frame held for this station may go once the window is off the line
            elif frame.kind == Kind.REPLY:
                # v3: the station's answer is the ACK of our frame with this SEQ (docs/protocol.md section 12); one
                # that matches nothing outstanding from that station is a late copy of an answer already taken.
                self.window.answer_read(frame.seq, frame.source, Kind.REPLY)
                entry = self._outstanding.get(frame.seq)
                if entry is None or entry[0] != frame.source or entry[1].done():
                    continue
                entry[1].set_result(Kind.ACK)
                self.data_versions[frame.version] += 1
                self._call(self._on_bus_data, entry[0], frame.payload)
            elif frame.kind == Kind.DATA:
                self._take_data(frame)
            else:
                entry = self._outstanding.get(frame.seq)
                if entry is not None and frame.source not in (None, entry[0]):
                    continue  # a v2 ACK names its station: another station's answer to this SEQ is not this one
                self.window.answer_read(frame.seq, frame.source, frame.kind)
                if entry is not None and not entry[1].done():
                    entry[1].set_result(frame.kind)
        self._report_noise()

    def _take_data(self, frame: Frame) -> None:
        # v2 names the sender in the header; v1 inside the payload, whose decoding then also gives the `evt` an
        # exchange awaiting its event needs: one decoding, not two. A v2 payload is decoded only for that.
        message = read_payload(frame.payload) if frame.source is None else None
        src = frame.source if frame.source is not None else source_address(message)
        if src is None or src not in self.peers:
            # Without a known sender there is nobody to ACK; the sender will give up on its own.
            self.stray_frames += 1
            log.warning(
                "bus frame from an unknown station dropped", link=self.name, src=src, payload=frame.payload[:100]
            )
            return
        self.data_versions[frame.version] += 1
        self._send_control(Kind.ACK, frame.seq, src, version=frame.version)
        if self.window.awaits_event(src):
            self.window.heard(src, event_name(message if frame.source is None else read_payload(frame.payload)))
        if self._delivered.get(src) == (frame.seq, frame.payload):
            return  # our ACK was lost and the station retransmitted
        self._delivered[src] = (frame.seq, frame.payload)
        self._call(self._on_bus_data, src, frame.payload)
