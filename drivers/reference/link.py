"""Link layer of the reference protocol: ACK/NAK, retransmission and duplicate suppression (one peer).

The transport half (sending until ACKed, reading, closing) is link_core.LinkCore; this module says what each
frame means at either end. The names other modules import from here stay here.

Used unchanged by the host drivers and by the simulators, so both ends of every test run the same code.
A multi-drop line's host end is bus_link.BusLink.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from drivers.reference.framing import (
    BROADCAST_ADDRESS,
    GROUP_LIGHT,
    HOST_ADDRESS,
    VERSION_2,
    VERSION_3,
    VERSION_4,
    Frame,
    Kind,
    ProtocolError,
    bare_code,
    decode_message,
    encode_message,
    group_answers,
    group_confirms,
    slot_confirmation,
)
from drivers.reference.link_core import LinkCore
from drivers.reference.transport import (
    DEFAULT_ACK_TIMEOUT,
    DEFAULT_RETRIES,
    IDLE_EXPIRY,
    ByteReader,
    ByteWriter,
    LinkClosed,
    LinkError,
    LinkTimeout,
)

__all__ = [
    "DEFAULT_ACK_TIMEOUT",
    "DEFAULT_RETRIES",
    "IDLE_EXPIRY",
    "ByteReader",
    "ByteWriter",
    "Link",
    "LinkClosed",
    "LinkCore",
    "LinkError",
    "LinkTimeout",
]


class Link(LinkCore):
    """One end of a point-to-point reference-protocol link.

    `on_data` gets each DATA payload once, in order; `on_noise(discarded_bytes, bad_frames)` gets the
    running totals whenever garbage was seen; `on_closed(reason)` is called once when the transport
    ends. Callbacks are synchronous and must not block; exceptions they raise are logged, not fatal.
    """

    # Link adds state to LinkCore's and takes its constructor as it is: these start as the class's own (immutable)
    # values and become the instance's when first set.
    # v3 (device end): the host frame being delivered to on_data, which `answer` may answer at once with a REPLY,
    # the answer given, and the frame that answered the last delivered frame (repeated if the host retransmits).
    _answering: int | None = None
    _answering_version = VERSION_3
    _answer: bytes | None = None
    _last_response: bytes | None = None
    # v3 GROUP (device end): while a GROUP frame naming this station is delivered, (its command code, this
    # station's slot, the answer a confirmation stands for: group_confirms); whether the station confirmed in it; and
    # who writes the confirmation at the slot's time
    # (slot_writer(slot, two bytes): a simulator paces it; without one it is written at once).
    _group: tuple[int, int, bytes] | None = None
    _slot_confirmed = False
    slot_writer: Callable[[int, bytes], None] | None = None
    # The last broadcast or GROUP frame acted on (device end): the same one heard again is not acted on twice.
    _last_broadcast: tuple[int, bytes] | None = None
    # v4 (device end): set by the device while it answers an `identify` that offered v4 (and cleared by one that did
    # not): an immediate answer that is a whole message (`identity`, `light`) goes back in an ANSWER frame, the ACK and
    # the answer in one, as a bare one goes in a REPLY (docs/protocol.md section 14).
    answers_whole = False

    def _handle(self, frames: list[Frame]) -> None:
        for corrupt in self.parser.take_corrupt():
            if corrupt.kind == Kind.DATA and corrupt.destination == self.local_address:
                self._send_control(Kind.NAK, corrupt.seq, version=corrupt.version)
        for frame in frames:
            if frame.destination == BROADCAST_ADDRESS and self.local_address != HOST_ADDRESS:
                self._broadcast(frame)
                continue
            if frame.destination != self.local_address:
                continue  # for another device on the bus
            if self.follow_peer and frame.kind == Kind.DATA and self._last_delivered != (frame.seq, frame.payload):
                # The host's commands set the version, not its ACKs: an ACK of a frame kept from before the host
                # restarted comes in that frame's version, and must not make the answer to a v1 `identify` v3. Nor
                # does a copy of the last command (section 4: not acted on again): a v1 `identify` sent again while
                # the identity waits behind a kept frame would have it go in v1, not the version the first settled.
                self.version = frame.version
            if frame.kind == Kind.REPLY:
                self._replied(frame)
            elif frame.kind == Kind.DATA and self.local_address != HOST_ADDRESS and self._answers_first(frame):
                self._answer_v3(frame)
            elif frame.kind == Kind.DATA:
                self.data_versions[frame.version] += 1
                self._send_control(Kind.ACK, frame.seq, version=frame.version)
                if self._last_delivered == (frame.seq, frame.payload):
                    continue  # our ACK was lost and the peer retransmitted
                self._last_delivered = (frame.seq, frame.payload)
                self._call(self._on_data, frame.payload)
            elif self._awaiting is not None and self._awaiting[0] == frame.seq and not self._awaiting[1].done():
                self._awaiting[1].set_result(frame.kind)
        self._report_noise()

    def _answers_first(self, frame: Frame) -> bool:
        """Device end: whether the answer to this host frame may go in the frame that acknowledges it. A v3 frame's
        bare answer may (REPLY); a device that speaks v4 also delivers a v1 `identify` before it responds, since the
        `identify` may offer v4 and its `identity` then goes back as the ANSWER that acknowledges it."""
        return frame.version == VERSION_3 or VERSION_4 in self.parser.versions

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

    def _answer_v3(self, frame: Frame) -> None:
        """v3, device end: deliver the host's frame first, so a bare answer given meanwhile (`answer`) goes back as
        the REPLY that also ACKs it; otherwise an ACK as in v1. A retransmission gets the same response again."""
        self.data_versions[frame.version] += 1
        if self._last_delivered == (frame.seq, frame.payload) and self._last_response is not None:
            self._send_control_frame(self._last_response)
            return
        self._last_delivered = (frame.seq, frame.payload)
        self._answering, self._answer, self._answering_version = frame.seq, None, frame.version
        try:
            self._call(self._on_data, frame.payload)
        finally:
            self._answering = None
        if self._answer is not None:
            response = self._encode(self.peer_address, frame.seq, Kind.REPLY, self._answer, VERSION_3)
        else:
            # The ACK in the version of the frame it answers (a v1 `identify` that did not offer v4 gets a v1 ACK).
            response = self._encode(self.peer_address, frame.seq, Kind.ACK, b"", frame.version)
        self._last_response = response
        self._send_control_frame(response)

    def answer(self, message: Mapping[str, Any]) -> bool:
        """Answer the v3 host frame now being delivered with `message` in its REPLY (no ACK frame, no DATA frame of its
        own): only a bare event ({"evt": name} of the v2 table), only while that frame is delivered, and only when
        nothing this end sent earlier is still unacknowledged (the answer must not overtake it). False otherwise:
        send it the usual way. While a GROUP frame is delivered, the answer that confirms it goes in this station's
        slot instead (docs/protocol.md section 13), on the same conditions."""
        if self._group is not None:
            return self._confirm_in_slot(self._group[2], message)
        if self._answering is None or self._answer is not None or self._unacknowledged():
            return False
        if self._answering_version != VERSION_3 and not self.answers_whole:
            return False  # a v1 or v2 frame is answered in its own version, unless the host negotiated v4
        try:
            payload = encode_message(message, VERSION_3)
        except ValueError:
            return False
        code = bare_code(payload)
        bare = code is not None and code[0] == 1
        # Not a bare event: v4's ANSWER carries it whole, to a host that negotiated v4; an event only.
        if not bare and (not self.answers_whole or message.get("evt") is None or len(payload) > 255):
            return False
        self._answer = payload
        return True

    def _unacknowledged(self) -> bool:
        """Whether a frame this end sent still waits for its ACK. An ACK that arrived in the bytes just read counts
        (the sender has not resumed yet, but the peer has the frame): an answer after it overtakes nothing. A frame
        whose exchange was told to send it again (NAK, a host that identifies: `peer_restarted`) or that is kept for
        the next host counts as unacknowledged: the `identity` must not overtake it (docs/protocol.md section 4)."""
        if self._parked is not None:
            return True
        if self._awaiting is None:
            return False
        future = self._awaiting[1]
        if not future.done():
            return True
        return future.cancelled() or future.exception() is not None or future.result() != Kind.ACK

    def _confirm_in_slot(self, expected: bytes, message: Mapping[str, Any]) -> bool:
        """The answer the GROUP frame being delivered expects (`expected`, encoded), in this station's slot."""
        if self._slot_confirmed or self._unacknowledged():
            return False
        try:
            answer = encode_message(message, VERSION_3)
        except ValueError:
            return False
        # Only the very answer the command expects: `locked` to a lock, and to a light the state asked for (a lamp that
        # does not show it answers with its `light` event as a frame of its own, after the window).
        if answer != expected:
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
        known = group_answers(self.parser.versions)
        if not isinstance(stations, list) or self.local_address not in stations or cmd not in known:
            return  # not named, or a command this version does not know: ignored entirely, as on a real line
        on = message.get("on")
        if cmd == GROUP_LIGHT and not isinstance(on, bool):
            return
        expected = group_confirms(cmd, on if cmd == GROUP_LIGHT else None)
        if self.follow_peer:
            self.version = VERSION_3
        if self._last_broadcast == (frame.seq, frame.payload):
            return
        self._last_broadcast = (frame.seq, frame.payload)
        self._group, self._slot_confirmed = (cmd, stations.index(self.local_address), expected), False
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
