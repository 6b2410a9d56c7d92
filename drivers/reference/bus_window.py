"""The host's side of a GROUP frame's slot window on a wager bus (docs/protocol.md section 13, "What the host writes
around a window"): which addressed frames wait, until when, and the answers still due on the shared return pair.

The sender says what it writes (`Addressed`: the station, the SEQ its answer names, the longest answer it can bring);
nothing here reads a frame's bytes to guess what it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Container
from dataclasses import dataclass
from enum import Enum, auto

from drivers.reference.framing import Kind

# The line time an identify's answer takes on the return pair at most: a v1 identity with a SHA-256 and `src` (about 217
# bytes) and the ACK before it (9), 10 bits a byte.
IDENTITY_BITS = (217 + 9) * 10
IDENTITY_ANSWER = IDENTITY_BITS // 10

# The longest answer but an identity a station gives to an addressed frame (a REPLY, a `light` ANSWER, an ACK and a
# short event), bytes; and the station's own turnaround a GROUP frame allows it beyond the line time, seconds.
SHORT_ANSWER = 32
ANSWER_SLACK = 0.001

# A v1 (or v2) station's answer: its ACK (9 bytes), then the event as a DATA frame of its own, `src` inside; the longest
# a `light` event, `{"evt":"light","on":false,"src":254}` in a v1 frame (46 bytes).
EVENT_ANSWER = 9 + 46
ACK_BYTES = 9  # the v1 ACK those answers begin with (v2's is no longer); 2 byte times of idle, then the event

# The event a v1 or v2 station answers each command with, as a frame of its own after its ACK: the frame that ends the
# exchange on the return pair (Addressed.answer_event). A command not named here ends at the station's next DATA frame.
ANSWER_EVENTS = {"identify": "identity", "ping": "pong", "lock": "locked", "unlock": "unlocked", "light": "light"}

# A station's `locked` answering v2's broadcast lock: a v2 DATA frame with the one-entry map, 11 bytes (docs/protocol.md
# section 10's test vectors); each slot is that frame and 2 byte times of idle.
BROADCAST_ANSWER = 11

# How long after the window's end on the line, as the host counts it from its write, a held frame may go: a USB adapter
# sends the host's bytes in 1 ms frames, so the GROUP frame may leave up to one frame after its write, and a host ACK or
# two (6 to 9 bytes each, under 1 ms) may be ahead of it on the host's pair. A station's answer starts no sooner than
# the held frame has crossed that pair (7 byte times or more) on top of this.
LINE_MARGIN = 0.002


class NotWanted(Exception):
    """The frame's sender no longer wants it written (Addressed.still said so when its turn on the line came)."""


@dataclass(frozen=True)
class Addressed:
    """A frame the host writes to one station, as its sender knows it: the station, the SEQ of the exchange (its answer
    names it), the longest answer it can bring in bytes, and `still`, asked just before each copy is written: False,
    the frame is not written (an unlock overtaken by a lock while it waited for a window, wager_bus.BusWagerStation).
    `event_follows`: the station ACKs, then sends its answer (`locked`, `pong`...) as a frame of its own (v1 and v2;
    a v3 REPLY carries it): the exchange is over on the return pair only once that frame is read. `ahead_of_group`:
    not kept back by hold() (a v1 station's `lock` on a mixed line): the broadcast lock waiting to go waits for its
    answer instead (clear_for_group), and the `lock` crosses the host's pair while the return pair still carries the
    answers the broadcast waits for, rather than after the six slots. `answer_event`: the event that answers it
    (ANSWER_EVENTS) when an event follows: an event of the station's own read first (a wager it had queued) does not
    end the exchange; None, the station's next DATA frame does."""

    address: int
    seq: int
    answer_bytes: int
    still: Callable[[], bool] | None = None
    event_follows: bool = False
    ahead_of_group: bool = False
    answer_event: str | None = None


class _Waits(Enum):
    """What an exchange waits for next on the return pair."""

    ANSWER = auto()  # the station's ACK, REPLY or ANSWER to a copy of the frame
    EVENT = auto()  # after a v1 or v2 station's ACK: the event that answers the command, a frame of its own
    NOTHING = auto()  # answered (or NAKed: the frame goes again, and waits for its ANSWER again)


@dataclass(eq=False)
class _Exchange:
    """One exchange the host wrote a frame for, as the return pair still owes it: what it waits for next, how many
    copies' answers are unread (a station answers every copy it hears, docs/protocol.md section 12, REPLY rule 2; a v1
    or v2 station ACKs each, one after the other), and when all of that has crossed the line at the latest. Kept from
    its first copy until its sender is done with it (released) and nothing is due: a late answer (after the line time,
    before the ACK timeout) still says what follows it."""

    frame: Addressed
    waits: _Waits = _Waits.ANSWER
    unread: int = 0
    due: float = 0.0
    released: bool = False

    def owes(self) -> bool:
        return self.unread > 0 or self.waits is not _Waits.NOTHING

    def owed_until(self, until: float) -> None:
        self.due = max(self.due, until)


class LineWindow:
    """What may go on a bus's line around a GROUP frame's slot window.

    A frame a station answers waits while a GROUP frame is due (hold) and while a window is open: until the window has
    ended on the line plus LINE_MARGIN, or, for a station whose confirmation the window still awaits, until the host's
    receive window closes. Such a station's answer carries its address byte followed by the host's SEQ: damaged in a
    collision and rescanned, that pair would be its confirmation one time in 256 (a lock taken that never happened).
    `hold_until_closed` keeps every frame until the receive window closes (the reference host before; benches compare).
    """

    def __init__(self, byte_time: float, awaits: Callable[[int], bool]) -> None:
        self._byte_time = byte_time
        self._awaits = awaits
        self.hold_until_closed = False
        self._holds = 0
        self._window: asyncio.Future[None] | None = None
        self._window_ends = 0.0
        self._on_line = False  # the open window is still on the line (its end plus LINE_MARGIN not yet passed)
        self._timer: asyncio.TimerHandle | None = None
        self._changed = asyncio.Event()
        # SEQ -> the exchange whose frame was written with it, while its sender waits or the return pair owes it.
        self._exchanges: dict[int, _Exchange] = {}
        # Settled when an answer or event is read (clear_for_group waits on it); made only when one waits.
        self._answered: asyncio.Future[None] | None = None
        # v2's broadcast lock: the named stations' `locked` frames, one slot each after the frame, all answered or their
        # line time passed (the time, and a timer that wakes the frames held meanwhile).
        self._broadcast: tuple[asyncio.Future[None], float] | None = None
        self._broadcast_timer: asyncio.TimerHandle | None = None

    def hold(self) -> None:
        """Keep every frame a station would answer off the line until unhold(): a GROUP frame is about to go."""
        self._holds += 1

    def unhold(self) -> None:
        self._holds -= 1
        if self._holds == 0:
            self._wake()

    def open(self, frame_bytes: int, named: int) -> None:
        self.end()  # a GROUP frame's window replaced by the next one's (the parser awaits the last one's pairs)
        loop = asyncio.get_running_loop()
        self._window = loop.create_future()
        self._on_line = True
        # The window ends on the line (2 + 4n) byte times after the frame's last byte, which leaves after its own bytes.
        self._window_ends = loop.time() + (frame_bytes + 2 + 4 * named) * self._byte_time
        self._timer = loop.call_at(self._window_ends + LINE_MARGIN, self._off_the_line)

    def end(self) -> None:
        """The host's receive window closed (every named station confirmed, or the ACK timeout)."""
        window, self._window = self._window, None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if window is not None:
            window.set_result(None)
            self._wake()

    def is_open(self) -> bool:
        return self._window is not None

    def confirmed(self) -> None:
        """A named station's confirmation was read: the window no longer awaits it."""
        self._wake()

    def _off_the_line(self) -> None:
        self._timer = None
        self._on_line = False
        self._wake()

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _held(self, frame: Addressed) -> bool:
        if (self._holds and not frame.ahead_of_group) or self._broadcast_due():
            return True
        if self._window is None:
            return False
        return self._on_line or self.hold_until_closed or self._awaits(frame.address)

    async def turn(self, frame: Addressed) -> None:
        """Return once `frame` may be written; NotWanted if its sender no longer wants it then."""
        while self._held(frame):
            await self._changed.wait()
        if frame.still is not None and not frame.still():
            raise NotWanted

    def copying(self, frame: Addressed, length: int) -> None:
        """A copy of `frame` (`length` bytes) is about to be written: counted before the write, whose answer may be read
        before the write returns (its drain waits while the host's output queue is full). Until each copy's answer is
        read, or its line time passed (from the copy's write, or from the answer read before it: the station's answers
        follow each other on the return pair), no GROUP frame or broadcast lock goes."""
        exchange = self._exchanges.get(frame.seq)
        if exchange is None or exchange.frame is not frame:  # a new exchange took the SEQ
            exchange = self._exchanges[frame.seq] = _Exchange(frame)
        exchange.waits = _Waits.ANSWER
        exchange.unread += 1
        exchange.owed_until(self._after(length + 2 + frame.answer_bytes))

    def written(self, frame: Addressed, length: int, answer: asyncio.Future[Kind]) -> None:
        """`frame` (`length` bytes) was written and `answer` settles when its ACK or REPLY came: until its answer is
        over (that, or for a v1 or v2 station the event frame after its ACK, heard()), or its line time (the frame, 2
        byte times, the longest answer) and the station's turnaround from the write's end, no GROUP frame or broadcast
        lock goes. What was read meanwhile, while the write drained, stands (answer_read): an answer already read is not
        awaited again."""
        exchange = self._exchanges.get(frame.seq)
        if exchange is None or exchange.frame is not frame or exchange.waits is not _Waits.ANSWER or answer.done():
            return  # answered during the write, or the link closed
        exchange.owed_until(self._after(length + 2 + frame.answer_bytes))

    def released(self, frame: Addressed) -> None:
        """The exchange `frame` was written for is over for its sender (answered, given up, not wanted): it is kept only
        while the return pair still owes it an answer within its line time."""
        exchange = self._exchanges.get(frame.seq)
        if exchange is not None and exchange.frame is frame:
            exchange.released = True
            self._drop_if_over(exchange)

    def answer_read(self, seq: int, source: int | None, kind: Kind) -> None:
        """An answer (`kind`: REPLY or ANSWER, ACK or NAK) to the frame with `seq` was read from `source` (None: a v1
        ACK, which names nobody), the exchange's own or a late one to a copy of it. A REPLY or ANSWER carries the
        answer, whatever the sender expected (an `identify` goes before the station's version is known); after a v1 or
        v2 station's ACK its event follows, due for its own line time from that ACK, however late the ACK came (the
        host's allowance for the station's turnaround is a guess, the ACK is what happened)."""
        exchange = self._exchanges.get(seq)
        if exchange is None or source not in (None, exchange.frame.address):
            return
        answer_bytes = exchange.frame.answer_bytes
        exchange.unread = max(0, exchange.unread - 1)
        if exchange.waits is _Waits.ANSWER and kind == Kind.ACK and exchange.frame.event_follows:
            exchange.waits = _Waits.EVENT
            exchange.owed_until(self._after(2 + answer_bytes - ACK_BYTES))
        elif exchange.waits is _Waits.ANSWER:
            exchange.waits = _Waits.NOTHING
        if exchange.unread > 0:  # the answer to the next copy follows this one: over within its own line time from now
            exchange.owed_until(self._after(2 + answer_bytes))
        self._heard(exchange)

    def awaits_event(self, address: int) -> bool:
        """Whether an exchange with `address` waits for its event (a v1 or v2 station's): only then is a DATA frame's
        payload read for its `evt` on the way in (heard), not on every frame of a v3/v4 line."""
        return any(x.waits is _Waits.EVENT and x.frame.address == address for x in self._exchanges.values())

    def heard(self, address: int, event: str | None) -> None:
        """A DATA frame from `address` carrying `event` was read: the exchanges whose ACK was read and which await that
        event (or any frame) are over. Another event is the station's own, sent before its answer: that answer is still
        to come on the return pair; so is an event read before the ACK (it answers an earlier exchange)."""
        for exchange in list(self._exchanges.values()):
            frame = exchange.frame
            if exchange.waits is _Waits.EVENT and frame.address == address and frame.answer_event in (None, event):
                exchange.waits = _Waits.NOTHING
                self._heard(exchange)

    def _heard(self, exchange: _Exchange) -> None:
        answered, self._answered = self._answered, None
        if answered is not None:
            answered.set_result(None)
        self._drop_if_over(exchange)

    def _drop_if_over(self, exchange: _Exchange) -> None:
        if not self._kept(exchange):
            del self._exchanges[exchange.frame.seq]

    def _kept(self, exchange: _Exchange) -> bool:
        return not exchange.released or (exchange.owes() and exchange.due > self._now())

    def next_seq(self, start: int, in_flight: Container[int]) -> int:
        """The first SEQ from `start` on that is not `in_flight` (another station's outstanding frame) and that no
        answer still due names: an exchange kept (a v1 or v2 station's event after its ACK, an answer to a copy within
        its line time) would lose its record to the new exchange's, and a late v1 ACK, naming only the SEQ, be taken
        for the new one's. If each free SEQ is still owed an answer (hundreds of stations), the first free one. Only
        the 255 from `start`: never `start` - 1, the station's previous SEQ (a new command is not a retransmission)."""
        free: int | None = None
        for step in range(255):
            seq = (start + step) % 256
            if seq in in_flight:
                continue
            exchange = self._exchanges.get(seq)
            if exchange is None or not self._kept(exchange):
                return seq
            if free is None:
                free = seq
        if free is None:
            raise RuntimeError("every SEQ is in flight: more stations than a bus has")
        return free

    def _next_due(self, now: float) -> float | None:
        """When the first answer still owed within its line time has crossed the line at the latest, if any (the
        exchanges over for their senders and owed nothing more dropped: an answer later than that is the station's
        fault, read as any frame when it comes)."""
        until: float | None = None
        for seq, exchange in list(self._exchanges.items()):
            if exchange.owes() and exchange.due > now:
                until = exchange.due if until is None else min(until, exchange.due)
            elif exchange.released:
                del self._exchanges[seq]
        return until

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _after(self, line_bytes: int) -> float:
        """When `line_bytes` written or answered from now have crossed the line, the station's turnaround allowed."""
        return self._now() + line_bytes * self._byte_time + ANSWER_SLACK

    def answers_due(self) -> bool:
        """Whether a station may still be answering a frame the host wrote (within that exchange's line time), a v2
        broadcast lock's included."""
        return self._next_due(self._now()) is not None or self._broadcast_due()

    def broadcast_written(self, length: int, answers: Collection[asyncio.Future[None]]) -> None:
        """v2's broadcast lock (`length` bytes) was written naming one station for each of `answers`, settled as each
        `locked` is read. The stations answer in slots back to back after it (docs/protocol.md section 10), each
        starting after 2 byte times of idle: the very moment a station answering an addressed frame finds the line idle
        too, so the two collide. Until every named station answered or the slots' line time passed, no frame a station
        answers is written and no GROUP frame goes, as for a GROUP frame's slot window."""
        pending = [a for a in answers if not a.done()]
        if not pending:
            return
        loop = asyncio.get_running_loop()
        settled: asyncio.Future[None] = loop.create_future()
        left = [len(pending)]

        def answered(_answer: asyncio.Future[None]) -> None:
            left[0] -= 1
            if left[0] == 0 and not settled.done():
                settled.set_result(None)
                self._wake()

        for answer in pending:
            answer.add_done_callback(answered)
        due = loop.time() + (length + len(pending) * (BROADCAST_ANSWER + 2)) * self._byte_time + LINE_MARGIN
        if self._broadcast is not None:
            self._broadcast[0].cancel()
        if self._broadcast_timer is not None:
            self._broadcast_timer.cancel()
        self._broadcast = (settled, due)
        self._broadcast_timer = loop.call_at(due, self._wake)

    def _broadcast_due(self) -> bool:
        if self._broadcast is None:
            return False
        settled, due = self._broadcast
        if settled.done() or due <= asyncio.get_running_loop().time():
            self._broadcast = None
            return False
        return True

    async def clear_for_group(self, slack: float) -> bool:
        """Wait, under a hold(), until the line is clear for a GROUP frame: each answer still due to a frame the host
        wrote has come or its line time has passed, and an open slot window has closed, at most until the window's end
        on the line plus `slack`. True if no window is open then."""
        loop = asyncio.get_running_loop()
        # Looked at again after each answer read: a frame written meanwhile (Addressed.ahead_of_group) is waited for.
        while (until := self._next_due(loop.time())) is not None:
            if self._answered is None:
                self._answered = loop.create_future()
            await asyncio.wait([self._answered], timeout=until - loop.time())
        broadcast = self._broadcast
        if broadcast is not None and self._broadcast_due():
            await asyncio.wait([broadcast[0]], timeout=broadcast[1] - loop.time())
        window = self._window
        if window is not None:
            await asyncio.wait([window], timeout=max(0.0, self._window_ends - loop.time()) + slack)
        return self._window is None
