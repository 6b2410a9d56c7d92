"""Reference serial protocol: the incremental frame parser of every version, GROUP slot pairs included (pure, no I/O).

The receiving rules it follows are docs/protocol.md section 2 (resynchronisation, idle expiry) and section 13 (slots).
"""

from __future__ import annotations

from collections.abc import Iterable

from drivers.reference.frames import (
    BROADCAST_ADDRESS,
    CMD_KEY,
    CRC_LEN,
    EVT_KEY,
    FROM_DEVICE,
    HEADER_LEN,
    HEADER_LEN_V2,
    MAX_PAYLOAD,
    PROTOCOLS,
    SOF,
    V1_KINDS,
    V3_ANSWER,
    V3_CODE,
    V3_DATA,
    V3_FROM_DEVICE,
    V3_GROUP,
    V3_KINDS,
    V3_MARK,
    V3_MIN_FRAME,
    V3_REPLY,
    VERSION_2,
    VERSION_3,
    VERSION_4,
    CorruptFrame,
    Frame,
    Kind,
    code_payload,
    crc16,
)
from drivers.reference.group import (
    GROUP_HEADER,
    GROUP_LIGHT,
    MAX_GROUP_MASK,
    SLOT_CONFIRMATION,
    group_payload,
    mask_addresses,
    slot_check,
)


class FrameParser:
    """Incremental decoder that never raises on input and keeps at most one frame's worth of bytes.

    On anything invalid it drops only the SOF byte it had trusted and rescans, so a real frame that
    followed (or was swallowed by) a false SOF inside garbage is still found.
    """

    def __init__(self, versions: frozenset[int] = PROTOCOLS) -> None:
        # A v1-only receiver (an old device) drops a v2 frame's SOF like any bad header, so it never acts on one.
        self._versions = versions
        self._buf = bytearray()
        self.discarded_bytes = 0
        self.bad_frames = 0
        self._corrupt: list[CorruptFrame] = []
        # The host's slot window after a GROUP frame: the SEQ, address -> check value of each confirmation still
        # awaited, and the event code a confirmation stands for. Empty: no window open.
        self._slot_seq = 0
        self._slots: dict[int, int] = {}
        self._slot_answer = b""
        # Whether the byte just before the buffer's head was dropped as noise and is a station's header byte (a v3 VK,
        # a v2 VER): an awaited address after it is the ADDR of a station's own frame whose SOF or CRC a collision hit,
        # followed by its own SEQ, not its confirmation (docs/protocol.md section 13, "Collisions and noise").
        self._after_header = False

    def open_slots(self, seq: int, addresses: Iterable[int], answer: int | bytes) -> None:
        """Open the slot window of the GROUP frame `seq`: from now on a byte pair (a, slot_check(a, seq)) at a frame
        boundary, for an address a still awaited, is that station's confirmation (a Kind.SLOT frame) whose payload is
        `answer`: the CBOR map it stands for (group.group_confirms), or the code of the bare event."""
        self._slot_seq = seq
        self._slots = {a: slot_check(a, seq) for a in addresses}
        self._slot_answer = code_payload(EVT_KEY, answer) if isinstance(answer, int) else answer

    def close_slots(self) -> None:
        """Close the window: a late confirmation is line noise from now on."""
        self._slots = {}

    def awaits(self, address: int) -> bool:
        """Whether the open window still awaits `address`'s confirmation (its address byte heads a pair, not noise)."""
        return address in self._slots

    @property
    def versions(self) -> frozenset[int]:
        """The versions this receiver reads: a v4 ANSWER frame is a bad header to one that reads up to v3 only."""
        return self._versions

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame; never more than MAX_FRAME after a feed."""
        return len(self._buf)

    @property
    def pending(self) -> bool:
        """True while a partial frame waits for more bytes."""
        return bool(self._buf)

    def feed(self, data: bytes) -> list[Frame]:
        self._buf += data
        return self._drain()

    def expire(self) -> list[Frame]:
        """The line went idle with a partial frame pending: give up on its SOF and rescan the rest.

        Without this a false SOF in garbage announcing a long payload would hold back later frames
        until enough unrelated bytes arrived to fill it.
        """
        frames: list[Frame] = []
        while self._buf:
            self._drop(1, bad=True)
            frames += self._drain()
        return frames

    def take_corrupt(self) -> list[CorruptFrame]:
        corrupt, self._corrupt = self._corrupt, []
        return corrupt

    def _drop(self, n: int, *, bad: bool = False) -> None:
        self._after_header = is_header_byte(self._buf[n - 1])
        del self._buf[:n]
        self.discarded_bytes += n
        if bad:
            self.bad_frames += 1

    def _drain(self) -> list[Frame]:
        frames: list[Frame] = []
        buf = self._buf
        while buf:
            if self._slots and buf[0] in self._slots:
                taken = self._slot_pair(frames)
                if taken is None:
                    break
                if taken:
                    continue
            moved = self._to_frame_start()
            if moved is None:
                break
            if moved:
                # Look at the new head from the top: an awaited address is read as a pair first, even 0xA5 (a station
                # at address 165 confirms with the SOF byte).
                continue
            if len(buf) < V3_MIN_FRAME:
                break
            if buf[1] >> 4 == VERSION_3:
                v3kind = buf[1] & 0x07
                if (
                    VERSION_3 not in self._versions
                    or v3kind not in V3_KINDS
                    or (v3kind == V3_ANSWER and VERSION_4 not in self._versions)
                ):
                    self._drop(1, bad=True)
                    continue
                if not self._v3(frames):
                    break
                continue
            if not self._v1_or_v2(frames):
                break
        return frames

    def _slot_pair(self, frames: list[Frame]) -> bool | None:
        """An awaited station's address heads the buffer: take its confirmation (True), or drop a byte that is no
        confirmation (True); False when the byte is an SOF to read as a frame; None until the pair is complete."""
        buf = self._buf
        if len(buf) < SLOT_CONFIRMATION:
            return None
        address = buf[0]
        if buf[1] == self._slots[address] and not self._after_header:
            del self._slots[address]  # each station confirms once: a repeat is noise
            frames.append(Frame(address, self._slot_seq, Kind.SLOT, self._slot_answer, VERSION_3, True))
            del buf[:SLOT_CONFIRMATION]
            self._after_header = False
            return True
        if buf[0] != SOF:
            # A bad check value (a collision, noise), or the ADDR and SEQ of a damaged frame of the station's own (its
            # SEQ equals the check value one time in 256): not a confirmation. Drop that byte alone: the next
            # station's confirmation may follow at once; this one is locked on its own after the window.
            self._drop(1, bad=True)
            return True
        return False

    def _to_frame_start(self) -> int | None:
        """Drop what precedes the next SOF (or, in a slot window, an awaited address): how many bytes, or None if
        nothing is left."""
        buf = self._buf
        if self._slots:
            # In the window a confirmation may start at any byte, not only at an SOF.
            start = next((i for i, b in enumerate(buf) if b == SOF or b in self._slots), -1)
        else:
            start = buf.find(SOF)
        if start < 0:
            self._drop(len(buf))
            return None
        if start:
            self._drop(start)
        return start

    def _v1_or_v2(self, frames: list[Frame]) -> bool:
        """Take the v1 or v2 frame at the head of the buffer (or drop its SOF if the header is bad); False if it is
        incomplete."""
        buf = self._buf
        version, address, seq = buf[1], buf[2], buf[3]
        if len(buf) < HEADER_LEN_V2:
            return False
        kind = buf[4]
        if version == VERSION_2:
            header, length, from_device, kind = HEADER_LEN_V2, buf[5], bool(kind & FROM_DEVICE), kind & 0x7F
        elif len(buf) < HEADER_LEN:
            return False
        else:
            header, length, from_device = HEADER_LEN, (buf[5] << 8) | buf[6], False
        if (
            version not in self._versions
            or kind not in V1_KINDS
            or length > MAX_PAYLOAD
            or (kind != Kind.DATA and length)
        ):
            self._drop(1, bad=True)
            return True
        total = header + length + CRC_LEN
        if len(buf) < total:
            return False
        body = bytes(buf[1 : header + length])
        crc = (buf[total - 2] << 8) | buf[total - 1]
        if crc != crc16(body):
            self._corrupt.append(CorruptFrame(address, seq, Kind(kind), version, from_device))
            self._drop(1, bad=True)
            return True
        payload = bytes(buf[header : header + length])
        frames.append(Frame(address, seq, Kind(kind), payload, version, from_device))
        del buf[:total]
        self._after_header = False
        return True

    def _v3(self, frames: list[Frame]) -> bool:
        """Take the v3 frame at the head of the buffer (its VK byte already checked); False if it is incomplete."""
        buf = self._buf
        vk, address, seq = buf[1], buf[2], buf[3]
        v3kind, from_device = vk & 0x07, bool(vk & V3_FROM_DEVICE)
        if v3kind == V3_GROUP:
            return self._group(frames)
        if v3kind in (V3_DATA, V3_ANSWER):
            if v3kind == V3_ANSWER and not from_device:
                self._drop(1, bad=True)  # only a device answers (docs/protocol.md section 14)
                return True
            if len(buf) < 5:
                return False
            header, length = 5, buf[4]
        else:
            header, length = 4, 1 if v3kind in (V3_CODE, V3_REPLY) else 0
        total = header + length + CRC_LEN
        if len(buf) < total:
            return False
        kind = V3_KINDS[v3kind]
        body = bytes(buf[1 : header + length])
        if ((buf[total - 2] << 8) | buf[total - 1]) != crc16(body):
            self._corrupt.append(CorruptFrame(address, seq, kind, VERSION_3, from_device))
            self._drop(1, bad=True)
            return True
        if v3kind in (V3_CODE, V3_REPLY):
            if v3kind == V3_REPLY and not from_device:
                self._drop(1, bad=True)  # only a device answers: a host REPLY is no frame of this protocol
                return True
            payload = code_payload(EVT_KEY if from_device else CMD_KEY, buf[4])
        else:
            payload = bytes(buf[header : header + length])
        frames.append(Frame(address, seq, kind, payload, VERSION_3, from_device))
        del buf[:total]
        self._after_header = False
        return True

    def _group(self, frames: list[Frame]) -> bool:
        """Take the GROUP frame at the head of the buffer; False if it is incomplete."""
        buf = self._buf
        if len(buf) < GROUP_HEADER:
            return False
        vk, address, seq, code, base, n = buf[1], buf[2], buf[3], buf[4], buf[5], buf[6]
        if vk & V3_FROM_DEVICE or address != BROADCAST_ADDRESS or not 1 <= n <= MAX_GROUP_MASK or base == 0:
            self._drop(1, bad=True)  # only the host sends GROUP, to everyone: anything else is no frame
            return True
        # v4's `light` carries the state asked for in one ARG byte after MASK; to a receiver that reads up to v3 only
        # the frame's CRC is not where it looks, so it drops the frame as damaged (docs/protocol.md section 14).
        arg = 1 if code == GROUP_LIGHT and VERSION_4 in self._versions else 0
        total = GROUP_HEADER + n + arg + CRC_LEN
        if len(buf) < total:
            return False
        body = bytes(buf[1 : GROUP_HEADER + n + arg])
        if ((buf[total - 2] << 8) | buf[total - 1]) != crc16(body):
            self._drop(1, bad=True)  # nobody NAKs a frame to everyone: the host re-locks who did not confirm
            return True
        named = mask_addresses(base, bytes(buf[GROUP_HEADER : GROUP_HEADER + n]))
        on = buf[GROUP_HEADER + n] if arg else None
        if not named or named[-1] > 254 or on not in (None, 0, 1):
            self._drop(1, bad=True)
            return True
        payload = group_payload(code, named, None if on is None else bool(on))
        frames.append(Frame(address, seq, Kind.GROUP, payload, VERSION_3, False))
        del buf[:total]
        self._after_header = False
        return True


def is_header_byte(byte: int) -> bool:
    """Whether `byte` can stand between a station's SOF and its address: the VK of a v3 frame from a station (v4 sends
    v3 frames; a GROUP never comes from one) or v2's VER. A v1 frame from a station carries the host's address, 0; the
    host's own frames to a station the window awaits are held until it closes (bus_window.LineWindow)."""
    return byte == VERSION_2 or (
        byte & 0xF8 == V3_MARK | V3_FROM_DEVICE and byte & 0x07 in V3_KINDS.keys() - {V3_GROUP}
    )
