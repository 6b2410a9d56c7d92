"""The host's side of a GROUP frame's slot window on a wager bus (docs/protocol.md section 13, "What the host writes
around a window"): which addressed frames wait, until when, and the answers still due on the shared return pair.

The sender says what it writes (`Addressed`: the station, the SEQ its answer names, the longest answer it can bring);
nothing here reads a frame's bytes to guess what it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from dataclasses import dataclass

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

# An exchange written whose event follows, until its ACK callback: its answer, the event that answers it (None: any
# frame), and a note made when that event is read after the ACK (LineWindow.heard).
_Acking = tuple[asyncio.Future[Kind], str | None, list[bool]]


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


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


class _Copies:
    """The copies of one exchange's frame the host wrote (its first, and each sent again after an ACK timeout) whose
    answers it has not read. A station answers every copy it hears (docs/protocol.md section 12, REPLY rule 2; a v1 or
    v2 station ACKs each), one after the other on the shared return pair, so a first answer late past the ACK timeout
    ends the exchange with the copy's answer (a whole identity, some 100 bytes) still to come."""

    def __init__(self, frame: Addressed) -> None:
        self.frame = frame
        self.unread = 0
        self.due = 0.0  # when the last answer still to come has crossed the line at the latest
        self.heard: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def read_one(self) -> None:
        self.unread -= 1
        heard, self.heard = self.heard, asyncio.get_running_loop().create_future()
        heard.set_result(None)


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
        # SEQ -> (settled once the exchange's answer is over on the return pair, when its line time ends).
        self._answers_due: dict[int, tuple[asyncio.Future[None], float]] = {}
        # Address -> the exchanges ACKed whose event, a frame of its own, is still to come (Addressed.event_follows),
        # each with the event that answers it (Addressed.answer_event).
        self._events_due: dict[int, list[tuple[asyncio.Future[None], str | None]]] = {}
        # v2's broadcast lock: the named stations' `locked` frames, one slot each after the frame, all answered or their
        # line time passed (the time, and a timer that wakes the frames held meanwhile).
        self._broadcast: tuple[asyncio.Future[None], float] | None = None
        self._broadcast_timer: asyncio.TimerHandle | None = None
        # SEQ -> the copies of that exchange's frame whose answers are still to come (copying, answer_read).
        self._copies: dict[int, _Copies] = {}
        # SEQ -> noted when a REPLY or ANSWER to the frame written with it is read (replied), until its ACK callback.
        self._replied: dict[int, list[bool]] = {}
        # Address -> the exchanges written whose event follows, until their ACK callback: (the answer, the event that
        # answers it, noted when that event is read after the ACK). An ACK and its event read together are handled
        # before that callback runs: the event would otherwise be missed and waited for its whole line time.
        self._acking: dict[int, list[_Acking]] = {}

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

    def written(self, frame: Addressed, length: int, answer: asyncio.Future[Kind]) -> None:
        """`frame` (`length` bytes) was written and `answer` settles when its ACK or REPLY came: until its answer is
        over (that, or for a v1 or v2 station the event frame after its ACK, heard()), or its line time (the frame, 2
        byte times, the longest answer) and the station's turnaround, no GROUP frame or broadcast lock goes. An ACK read
        after an event follows moves that line time to the ACK: the event comes after it, however long the station took
        to turn round (the host's allowance of ANSWER_SLACK from its write is a guess, the ACK is what happened)."""
        if answer.done() and not frame.event_follows:
            return
        loop = asyncio.get_running_loop()
        due = loop.time() + (length + 2 + frame.answer_bytes) * self._byte_time + ANSWER_SLACK
        timed_out: list[bool] = []
        over = self._expect(frame.seq, frame.address, due, timed_out)
        replied = self._replied[frame.seq] = []
        acking: _Acking = (answer, frame.answer_event, [])
        if frame.event_follows:
            self._acking.setdefault(frame.address, []).append(acking)

        def acked(done: asyncio.Future[Kind]) -> None:
            if self._replied.get(frame.seq) is replied:
                del self._replied[frame.seq]
            self._acked(frame.address, acking)
            if replied or acking[2] or (over.done() and not timed_out):
                # A REPLY or ANSWER carried the event (after the line time too), the event was read with the ACK, or
                # the wait was over.
                _settle(over)
                return
            if not frame.event_follows or done.cancelled() or done.exception() is not None:
                _settle(over)
                return
            event = over
            rest = loop.time() + (2 + frame.answer_bytes - ACK_BYTES) * self._byte_time + ANSWER_SLACK
            if rest > due:  # the station turned round later than allowed: its event is still on its way
                event = self._expect(frame.seq, frame.address, rest, [])
                _settle(over)
            self._events_due.setdefault(frame.address, []).append((event, frame.answer_event))

        answer.add_done_callback(acked)

    def _acked(self, address: int, acking: _Acking) -> None:
        waiting = self._acking.get(address)
        if waiting is None:
            return
        waiting[:] = [entry for entry in waiting if entry is not acking]
        if not waiting:
            del self._acking[address]

    def _expect(self, seq: int, address: int, until: float, timed_out: list[bool]) -> asyncio.Future[None]:
        """The answer to the exchange `seq` with `address` due by `until`: settled when it is over or at `until` (then
        noted in `timed_out`), registered as due meanwhile."""
        loop = asyncio.get_running_loop()
        over: asyncio.Future[None] = loop.create_future()

        def expire() -> None:
            timed_out.append(True)
            _settle(over)

        timer = loop.call_at(until, expire)

        def ended(_over: asyncio.Future[None]) -> None:
            timer.cancel()
            waiting = self._events_due.get(address, [])
            waiting[:] = [entry for entry in waiting if entry[0] is not over]
            if self._answers_due.get(seq, (None, 0.0))[0] is over:
                del self._answers_due[seq]

        self._answers_due[seq] = (over, until)
        over.add_done_callback(ended)
        return over

    def copying(self, frame: Addressed, length: int) -> None:
        """A copy of `frame` (`length` bytes) is about to be written: counted before the write, whose answer may be read
        before the write returns. Until each copy's answer is read, or its line time passed (from the copy's write, or
        from the answer read before it: the station's answers follow each other on the return pair), no GROUP frame or
        broadcast lock goes."""
        copies = self._copies.get(frame.seq)
        if copies is None or copies.frame is not frame:
            copies = self._copies[frame.seq] = _Copies(frame)
        copies.unread += 1
        now = asyncio.get_running_loop().time()
        copies.due = max(copies.due, now + (length + 2 + frame.answer_bytes) * self._byte_time + ANSWER_SLACK)

    def answer_read(self, seq: int, source: int | None) -> None:
        """An answer (REPLY, ANSWER, ACK or NAK) to the frame with `seq` was read from `source` (None: a v1 ACK, which
        names nobody), the exchange's own or a late one to a copy of it."""
        copies = self._copies.get(seq)
        if copies is None or source not in (None, copies.frame.address):
            return
        copies.read_one()
        if copies.unread <= 0:
            del self._copies[seq]
            return
        # The answer to the next copy follows this one on the return pair: over within its own line time from now.
        now = asyncio.get_running_loop().time()
        copies.due = max(copies.due, now + (2 + copies.frame.answer_bytes) * self._byte_time + ANSWER_SLACK)

    def _copy_due(self, now: float) -> _Copies | None:
        """The exchange whose copies' answers are still to come within their line time, if any (the others dropped)."""
        for seq, copies in list(self._copies.items()):
            if copies.due <= now:
                del self._copies[seq]  # its station's fault past its line time, read as any frame when it comes
            elif copies.unread > 0:
                return copies
        return None

    def replied(self, seq: int) -> None:
        """A REPLY (v3) or ANSWER (v4) to the frame with `seq` was read: it carries the answer, so that exchange is
        over, whatever its sender expected (an `identify` goes before the station's version is known)."""
        replied = self._replied.get(seq)
        if replied is not None:
            replied.append(True)  # read before the exchange's ACK callback: no event follows it, however late
        entry = self._answers_due.get(seq)
        if entry is not None:
            _settle(entry[0])

    def awaits_event(self, address: int) -> bool:
        """Whether an exchange with `address` waits for its event (a v1 or v2 station's): only then is a DATA frame's
        payload read for its `evt` on the way in (heard), not on every frame of a v3/v4 line."""
        if self._events_due.get(address):
            return True
        return any(answer.done() for answer, _expected, _read in self._acking.get(address, ()))

    def heard(self, address: int, event: str | None) -> None:
        """A DATA frame from `address` carrying `event` was read: the exchanges it answers are over (those expecting
        that event, or any frame), those whose ACK was read in the same read too. Another event is the station's own,
        sent before its answer: that answer is still to come on the return pair."""
        for over, expected in list(self._events_due.get(address, [])):
            if expected is None or expected == event:
                _settle(over)
        for answer, expected, read in self._acking.get(address, ()):
            # Only after its ACK: an event read before it answers an earlier exchange (or is the station's own).
            if answer.done() and (expected is None or expected == event):
                read.append(True)

    def answers_due(self) -> bool:
        """Whether a station may still be answering a frame the host wrote (within that exchange's line time), a v2
        broadcast lock's included."""
        now = asyncio.get_running_loop().time()
        due = any(not future.done() and due > now for future, due in self._answers_due.values())
        return due or self._copy_due(now) is not None or self._broadcast_due()

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
        while True:
            # Looked at again after each wait: a frame written meanwhile (Addressed.ahead_of_group) is waited for too.
            now = loop.time()
            due = [(future, until) for future, until in self._answers_due.values() if not future.done() and until > now]
            copies = self._copy_due(now)
            if copies is not None:
                due.append((copies.heard, copies.due))
            if not due:
                break
            await asyncio.wait([due[0][0]], timeout=due[0][1] - now)
        broadcast = self._broadcast
        if broadcast is not None and self._broadcast_due():
            await asyncio.wait([broadcast[0]], timeout=broadcast[1] - loop.time())
        window = self._window
        if window is not None:
            await asyncio.wait([window], timeout=max(0.0, self._window_ends - loop.time()) + slack)
        return self._window is None
