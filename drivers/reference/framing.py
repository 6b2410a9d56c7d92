"""Reference serial protocol v1 and v2: framing, CRC and the message vocabulary (pure, no I/O).

v1 frame: SOF 0xA5 | VER 0x01 | ADDR | SEQ | KIND | LEN (2, big-endian) | PAYLOAD (JSON) | CRC (2, big-endian).
v2 frame: SOF 0xA5 | VER 0x02 | ADDR | SEQ | KIND (bit 7: from a device) | LEN (1) | PAYLOAD (CBOR) | CRC (2).
v3 frame: SOF 0xA5 | VK (0x3 << 4 | from-device << 3 | kind) | ADDR | SEQ | kind-dependent body | CRC (2): DATA has
LEN (1) + CBOR, ACK/NAK nothing, CODE and REPLY one code byte (a bare command or event, no map, no LEN).
CRC-16/CCITT-FALSE over VER (or VK)..PAYLOAD. One parser reads both, so a line can change version frame by frame
(negotiation, docs/protocol.md section 10). docs/protocol.md is the normative description.
v3 GROUP frame (host only, ADDR 0xFF): SOF | VK 0x35 | 0xFF | SEQ | CODE | BASE | N | MASK (N bytes) | CRC (2): one
command to the stations the mask names, each confirming in its own time slot with two bytes, ADDR and a check value over
ADDR and SEQ (docs/protocol.md section 13); the host's parser takes those pairs while its slot window is open.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from drivers.reference.compact import CompactError, decode_compact, encode_compact

SOF = 0xA5
VERSION = 0x01
VERSION_2 = 0x02
VERSION_3 = 0x03
VERSIONS = frozenset((VERSION, VERSION_2, VERSION_3))
# Versions whose payloads are CBOR maps (drivers/reference/compact.py) and whose ADDR names the device both ways.
COMPACT_VERSIONS = frozenset((VERSION_2, VERSION_3))
HOST_ADDRESS = 0
# v2 only: a host frame every station on a multi-drop line hears (docs/protocol.md, "Broadcast lock").
BROADCAST_ADDRESS = 0xFF
MAX_PAYLOAD = 1024
MAX_PAYLOAD_V2 = 255
HEADER_LEN = 7  # SOF VER ADDR SEQ KIND LEN_HI LEN_LO
HEADER_LEN_V2 = 6  # SOF VER ADDR SEQ KIND LEN
CRC_LEN = 2
V3_MIN_FRAME = 6  # SOF VK ADDR SEQ CRC CRC: a v3 ACK or NAK
MAX_FRAME = HEADER_LEN + MAX_PAYLOAD + CRC_LEN
# v2 KIND bit 7: the frame comes from a device, and ADDR names that device (its source) rather than its
# destination, so a station's ACK on a shared line says who sent it.
FROM_DEVICE = 0x80


class Kind(IntEnum):
    DATA = 0x01
    ACK = 0x06
    NAK = 0x15
    # v3 only: a device's immediate answer to a host frame, carrying that frame's SEQ. It is the frame's ACK and the
    # answer in one (docs/protocol.md section 12); nobody ACKs it, a lost one is repeated when the host retransmits.
    REPLY = 0x04
    # v3 only, host to every station: one bare command to the stations a bit mask names (docs/protocol.md section 13).
    GROUP = 0x40
    # Not a frame: a station's two-byte confirmation in its slot after a GROUP frame, as the host's parser reports it
    # (address = the station, seq = the GROUP's, payload = the bare event it stands for).
    SLOT = 0x41


_KINDS = frozenset((Kind.DATA, Kind.ACK, Kind.NAK))  # what a v1 or v2 header may carry

# v3: the VK byte's high nibble is the version, bit 3 says the frame comes from a device, bits 0-2 the kind.
V3_MARK = VERSION_3 << 4
V3_FROM_DEVICE = 0x08
V3_DATA, V3_ACK, V3_NAK, V3_CODE, V3_REPLY, V3_GROUP = 0, 1, 2, 3, 4, 5
_V3_KIND = {
    V3_DATA: Kind.DATA,
    V3_ACK: Kind.ACK,
    V3_NAK: Kind.NAK,
    V3_CODE: Kind.DATA,
    V3_REPLY: Kind.REPLY,
    V3_GROUP: Kind.GROUP,
}
# The CBOR map a CODE or REPLY frame stands for: {0: code} (a command, from the host) or {1: code} (an event).
CMD_KEY, EVT_KEY = 0, 1


# --- v3 GROUP frames and slot confirmations (docs/protocol.md section 13) -------------------------------------------

STATIONS_KEY = 7  # the v2 key code of "stations"
# The commands a GROUP frame may carry, with the bare event each named station confirms in its slot: `lock` (5) with
# `locked` (7). A station ignores a GROUP frame with any other code (it may be a later version's).
GROUP_ANSWERS = {5: 7}
GROUP_LOCK = 5
MAX_GROUP_MASK = 32  # bytes: 256 bits cover every station address 1..254 from any BASE
GROUP_HEADER = 7  # SOF VK ADDR SEQ CODE BASE N
# Slot timing, in byte times of the line (10 bits at 8N1): the first slot starts SLOT_TURNAROUND after the GROUP
# frame's last byte, slot i at SLOT_TURNAROUND + i * SLOT_PERIOD; a confirmation is SLOT_CONFIRMATION bytes, the rest
# of the period is the guard that absorbs each station's timing error.
SLOT_TURNAROUND = 2
SLOT_CONFIRMATION = 2
SLOT_PERIOD = 4


def group_mask(addresses: Iterable[int]) -> tuple[int, bytes]:
    """(BASE, MASK) naming `addresses` canonically: BASE the lowest, MASK as short as it can be; bit i of MASK byte j
    (bit 0 the least significant) names BASE + 8j + i."""
    named = sorted(set(addresses))
    if not named or not all(1 <= a <= 254 for a in named):
        raise ValueError(f"a GROUP frame names 1 or more station addresses 1..254, got {named}")
    base = named[0]
    mask = bytearray((named[-1] - base) // 8 + 1)
    for a in named:
        mask[(a - base) // 8] |= 1 << ((a - base) % 8)
    return base, bytes(mask)


def mask_addresses(base: int, mask: bytes) -> list[int]:
    """The addresses BASE and MASK name, ascending (a station's slot is its index in this list)."""
    return [base + 8 * j + i for j, byte in enumerate(mask) for i in range(8) if byte >> i & 1]


def encode_group(seq: int, code: int, addresses: Iterable[int]) -> bytes:
    """The v3 GROUP frame: command `code` to every station in `addresses`, from the host, ADDR 0xFF."""
    if code not in GROUP_ANSWERS:
        raise ValueError(f"a GROUP frame carries one of the commands {sorted(GROUP_ANSWERS)}, got {code}")
    if not 0 <= seq <= 0xFF:
        raise ValueError(f"seq {seq} out of range 0..255")
    base, mask = group_mask(addresses)
    body = bytes((V3_MARK | V3_GROUP, BROADCAST_ADDRESS, seq, code, base, len(mask))) + mask
    return bytes((SOF,)) + body + crc16(body).to_bytes(2, "big")


def group_payload(code: int, addresses: Iterable[int]) -> bytes:
    """The CBOR map a GROUP frame stands for ({"cmd": name, "stations": [...]}, as a v2 broadcast's), canonical."""
    named = sorted(set(addresses))
    array = bytes((0x80 | len(named),)) if len(named) < 24 else bytes((0x98, len(named)))
    items = b"".join(bytes((a,)) if a < 0x18 else bytes((0x18, a)) for a in named)
    return bytes((0xA2, CMD_KEY)) + _uint(code) + bytes((STATIONS_KEY,)) + array + items


def _uint(value: int) -> bytes:
    return bytes((value,)) if value < 0x18 else bytes((0x18, value))


def slot_check(address: int, seq: int) -> int:
    """A slot confirmation's check value: the low byte of CRC-16/CCITT-FALSE over ADDR and the GROUP frame's SEQ."""
    return crc16(bytes((address, seq))) & 0xFF


def slot_confirmation(address: int, seq: int) -> bytes:
    """The two bytes station `address` sends in its slot after the GROUP frame with `seq`."""
    return bytes((address, slot_check(address, seq)))


def bare_code(payload: bytes) -> tuple[int, int] | None:
    """(key, code) when a CBOR payload is exactly {key: code}, key 0 (cmd) or 1 (evt), code 0..255: what a v3 CODE or
    REPLY frame carries in one byte. Canonical CBOR only, so a frame and its expansion convert both ways."""
    if len(payload) == 3 and payload[0] == 0xA1 and payload[1] in (CMD_KEY, EVT_KEY) and payload[2] < 0x18:
        return payload[1], payload[2]
    if len(payload) == 4 and payload[0] == 0xA1 and payload[1] in (CMD_KEY, EVT_KEY) and payload[2] == 0x18:
        return (payload[1], payload[3]) if payload[3] >= 0x18 else None
    return None


def code_payload(key: int, code: int) -> bytes:
    """The canonical CBOR map {key: code} a CODE or REPLY frame stands for."""
    return bytes((0xA1, key, code)) if code < 0x18 else bytes((0xA1, key, 0x18, code))


class ProtocolError(ValueError):
    """A payload that is not a valid v1 message."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame. v1: `address` is the destination. v2: `address` is the device's (the destination of a host
    frame, the source of a device's frame, which has `from_device`)."""

    address: int
    seq: int
    kind: Kind
    payload: bytes = b""
    version: int = VERSION
    from_device: bool = False

    def encode(self) -> bytes:
        return encode_frame(self.address, self.seq, self.kind, self.payload, self.version, self.from_device)

    @property
    def destination(self) -> int:
        return HOST_ADDRESS if self.from_device else self.address

    @property
    def source(self) -> int | None:
        """The sending device's address when the header names it (v2 device frames), else None."""
        return self.address if self.from_device else None


@dataclass(frozen=True, slots=True)
class CorruptFrame:
    """A frame whose header was readable but whose CRC was wrong: the receiver NAKs this SEQ."""

    address: int
    seq: int
    kind: Kind
    version: int = VERSION
    from_device: bool = False

    @property
    def destination(self) -> int:
        return HOST_ADDRESS if self.from_device else self.address


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no xorout); check value 0x29B1."""
    return binascii.crc_hqx(data, 0xFFFF)


def encode_frame(
    address: int, seq: int, kind: Kind, payload: bytes = b"", version: int = VERSION, from_device: bool = False
) -> bytes:
    if not 0 <= address <= 0xFF:
        raise ValueError(f"address {address} out of range 0..255")
    if not 0 <= seq <= 0xFF:
        raise ValueError(f"seq {seq} out of range 0..255")
    if version not in VERSIONS:
        raise ValueError(f"protocol version {version} is not 1 or 2")
    limit = MAX_PAYLOAD if version == VERSION else MAX_PAYLOAD_V2
    if len(payload) > limit:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {limit}")
    if kind in (Kind.ACK, Kind.NAK) and payload:
        raise ValueError("ACK and NAK frames carry no payload")
    if kind in (Kind.GROUP, Kind.SLOT):
        raise ValueError("GROUP frames are built by encode_group, slot confirmations by slot_confirmation")
    if version == VERSION_3:
        return _encode_v3(address, seq, kind, payload, from_device)
    if kind == Kind.REPLY:
        raise ValueError("REPLY frames are v3")
    if version == VERSION:
        if from_device:
            raise ValueError("a v1 frame names its destination only; from_device is v2")
        body = bytes((VERSION, address, seq, int(kind))) + len(payload).to_bytes(2, "big") + payload
    else:
        body = bytes((VERSION_2, address, seq, int(kind) | (FROM_DEVICE if from_device else 0), len(payload)))
        body += payload
    return bytes((SOF,)) + body + crc16(body).to_bytes(2, "big")


def _encode_v3(address: int, seq: int, kind: Kind, payload: bytes, from_device: bool) -> bytes:
    """A v3 frame: a DATA payload that is a bare command or event ({0: code} / {1: code}) goes as a CODE frame."""
    direction = V3_FROM_DEVICE if from_device else 0
    code = bare_code(payload)
    if kind == Kind.REPLY:
        if not from_device or code is None or code[0] != EVT_KEY:
            raise ValueError("a REPLY is a device's bare event ({1: code}) answering a host frame")
        body = bytes((V3_MARK | direction | V3_REPLY, address, seq, code[1]))
    elif kind == Kind.DATA and code is not None and code[0] == (EVT_KEY if from_device else CMD_KEY):
        body = bytes((V3_MARK | direction | V3_CODE, address, seq, code[1]))
    elif kind == Kind.DATA:
        body = bytes((V3_MARK | direction | V3_DATA, address, seq, len(payload))) + payload
    else:
        body = bytes((V3_MARK | direction | (V3_ACK if kind == Kind.ACK else V3_NAK), address, seq))
    return bytes((SOF,)) + body + crc16(body).to_bytes(2, "big")


class FrameParser:
    """Incremental decoder that never raises on input and keeps at most one frame's worth of bytes.

    On anything invalid it drops only the SOF byte it had trusted and rescans, so a real frame that
    followed (or was swallowed by) a false SOF inside garbage is still found.
    """

    def __init__(self, versions: frozenset[int] = VERSIONS) -> None:
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
        self._slot_event = 0

    def open_slots(self, seq: int, addresses: Iterable[int], event_code: int) -> None:
        """Open the slot window of the GROUP frame `seq`: from now on a byte pair (a, slot_check(a, seq)) at a frame
        boundary, for an address a still awaited, is that station's confirmation (a Kind.SLOT frame)."""
        self._slot_seq = seq
        self._slots = {a: slot_check(a, seq) for a in addresses}
        self._slot_event = event_code

    def close_slots(self) -> None:
        """Close the window: a late confirmation is line noise from now on."""
        self._slots = {}

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
        del self._buf[:n]
        self.discarded_bytes += n
        if bad:
            self.bad_frames += 1

    def _drain(self) -> list[Frame]:
        frames: list[Frame] = []
        buf = self._buf
        while buf:
            if self._slots and buf[0] in self._slots:
                if len(buf) < SLOT_CONFIRMATION:
                    break
                address = buf[0]
                if buf[1] == self._slots[address]:
                    del self._slots[address]  # each station confirms once: a repeat is noise
                    payload = code_payload(EVT_KEY, self._slot_event)
                    frames.append(Frame(address, self._slot_seq, Kind.SLOT, payload, VERSION_3, True))
                    del buf[:SLOT_CONFIRMATION]
                    continue
                if buf[0] != SOF:
                    # A bad check value (a collision, noise): not a confirmation. Drop that byte alone: the next
                    # station's confirmation may follow at once.
                    self._drop(1, bad=True)
                    continue
            if self._slots:
                # In the window a confirmation may start at any byte, not only at an SOF.
                start = next((i for i, b in enumerate(buf) if b == SOF or b in self._slots), -1)
            else:
                start = buf.find(SOF)
            if start < 0:
                self._drop(len(buf))
                break
            if start:
                self._drop(start)
            if buf[0] != SOF:
                continue  # an awaited station's address: its confirmation, taken at the top of the loop
            if len(buf) < V3_MIN_FRAME:
                break
            version, address, seq = buf[1], buf[2], buf[3]
            if version >> 4 == VERSION_3:
                if VERSION_3 not in self._versions or (version & 0x07) not in _V3_KIND:
                    self._drop(1, bad=True)
                    continue
                if not self._v3(frames):
                    break
                continue
            if len(buf) < HEADER_LEN_V2:
                break
            kind = buf[4]
            if version == VERSION_2:
                header, length, from_device, kind = HEADER_LEN_V2, buf[5], bool(kind & FROM_DEVICE), kind & 0x7F
            elif len(buf) < HEADER_LEN:
                break
            else:
                header, length, from_device = HEADER_LEN, (buf[5] << 8) | buf[6], False
            if (
                version not in self._versions
                or kind not in _KINDS
                or length > MAX_PAYLOAD
                or (kind != Kind.DATA and length)
            ):
                self._drop(1, bad=True)
                continue
            total = header + length + CRC_LEN
            if len(buf) < total:
                break
            body = bytes(buf[1 : header + length])
            crc = (buf[total - 2] << 8) | buf[total - 1]
            if crc != crc16(body):
                self._corrupt.append(CorruptFrame(address, seq, Kind(kind), version, from_device))
                self._drop(1, bad=True)
                continue
            payload = bytes(buf[header : header + length])
            frames.append(Frame(address, seq, Kind(kind), payload, version, from_device))
            del buf[:total]
        return frames

    def _v3(self, frames: list[Frame]) -> bool:
        """Take the v3 frame at the head of the buffer (its VK byte already checked); False if it is incomplete."""
        buf = self._buf
        vk, address, seq = buf[1], buf[2], buf[3]
        v3kind, from_device = vk & 0x07, bool(vk & V3_FROM_DEVICE)
        if v3kind == V3_GROUP:
            return self._group(frames)
        if v3kind == V3_DATA:
            if len(buf) < 5:
                return False
            header, length = 5, buf[4]
        else:
            header, length = 4, 1 if v3kind in (V3_CODE, V3_REPLY) else 0
        total = header + length + CRC_LEN
        if len(buf) < total:
            return False
        kind = _V3_KIND[v3kind]
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
        total = GROUP_HEADER + n + CRC_LEN
        if len(buf) < total:
            return False
        body = bytes(buf[1 : GROUP_HEADER + n])
        if ((buf[total - 2] << 8) | buf[total - 1]) != crc16(body):
            self._drop(1, bad=True)  # nobody NAKs a frame to everyone: the host re-locks who did not confirm
            return True
        named = mask_addresses(base, bytes(buf[GROUP_HEADER : GROUP_HEADER + n]))
        if not named or named[-1] > 254:
            self._drop(1, bad=True)
            return True
        frames.append(Frame(address, seq, Kind.GROUP, group_payload(code, named), VERSION_3, False))
        del buf[:total]
        return True


# --- message vocabulary --------------------------------------------------------------------------

COMMANDS = (
    "identify",
    "ping",
    "shuffle",
    "dispense",
    "remove_stub",
    "lock",
    "unlock",
    "show_levels",
    "show_win",
    "credit",
)
EVENTS = (
    "identity",
    "pong",
    "shuffle_complete",
    "stack",
    "stub",
    "face_up",
    "card",
    "locked",
    "unlocked",
    "wager",
    "wager_refused",
    "button",
    "levels_shown",
    "credited",
    "fault",
)
RANKS = "23456789TJQKA"
SUITS = "cdhs"


def encode_message(message: Mapping[str, Any], version: int = VERSION) -> bytes:
    """A DATA payload: compact UTF-8 JSON in v1, a coded CBOR map in v2 (drivers/reference/compact.py)."""
    if version in COMPACT_VERSIONS:
        payload = encode_compact(message)
        limit = MAX_PAYLOAD_V2
    else:
        payload = json.dumps(dict(message), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        limit = MAX_PAYLOAD
    if len(payload) > limit:
        raise ValueError(f"message encodes to {len(payload)} bytes, more than {limit}")
    return payload


def decode_message(payload: bytes) -> dict[str, Any]:
    """A DATA payload of either version: a v1 payload is a JSON object (its first byte `{`, 0x7B), a v2 payload a
    CBOR map (first byte 0xA0..0xBF); 0x7B never starts a CBOR map, so the payload says which it is."""
    if payload[:1] != b"{" and payload and 0xA0 <= payload[0] <= 0xBF:
        try:
            return decode_compact(payload)
        except CompactError as exc:
            raise ProtocolError(str(exc)) from None
    try:
        message = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"payload is not UTF-8 JSON: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"payload is JSON {type(message).__name__}, expected an object")
    return message


# What a card reader reports for a card that is not one of the standard 52 (a joker, another deck's card).
MAX_FOREIGN_CARD_LEN = 16


def is_card(value: object) -> bool:
    return isinstance(value, str) and len(value) == 2 and value[0] in RANKS and value[1] in SUITS


def is_foreign_card(value: object) -> bool:
    """A reading that names something other than a standard card: 1..16 printable characters."""
    return (
        isinstance(value, str) and 0 < len(value) <= MAX_FOREIGN_CARD_LEN and value.isprintable() and not is_card(value)
    )
