"""Reference serial protocol v1, v2 and v3: the frames, their CRC and their encoding (pure, no I/O).

v1 frame: SOF 0xA5 | VER 0x01 | ADDR | SEQ | KIND | LEN (2, big-endian) | PAYLOAD (JSON) | CRC (2, big-endian).
v2 frame: SOF 0xA5 | VER 0x02 | ADDR | SEQ | KIND (bit 7: from a device) | LEN (1) | PAYLOAD (CBOR) | CRC (2).
v3 frame: SOF 0xA5 | VK (0x3 << 4 | from-device << 3 | kind) | ADDR | SEQ | kind-dependent body | CRC (2): DATA has
LEN (1) + CBOR, ACK/NAK nothing, CODE and REPLY one code byte (a bare command or event, no map, no LEN).
CRC-16/CCITT-FALSE over VER (or VK)..PAYLOAD. One parser reads both, so a line can change version frame by frame
(negotiation, docs/protocol.md section 10).
docs/protocol.md is the normative description; `drivers.reference.framing` gathers this module, the GROUP frames
(group.py), the parser (parser.py) and the messages (messages.py) under the one name the docs use.
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass
from enum import IntEnum

SOF = 0xA5
VERSION = 0x01
VERSION_2 = 0x02
VERSION_3 = 0x03
# Version 4 has no frame layout of its own: it is v3's frames (VK high nibble 3) plus the ANSWER frame and the GROUP
# `unlock` (docs/protocol.md section 14). It is negotiated at identify like the others; a link sends in v3 when it
# speaks v4, and a receiver that speaks only up to v3 drops an ANSWER as a bad header.
VERSION_4 = 0x04
VERSIONS = frozenset((VERSION, VERSION_2, VERSION_3))  # the versions a frame can be encoded in
PROTOCOLS = VERSIONS | {VERSION_4}  # the versions a device or host may speak (offered at identify)
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


V1_KINDS = frozenset((Kind.DATA, Kind.ACK, Kind.NAK))  # what a v1 or v2 header may carry

# v3: the VK byte's high nibble is the version, bit 3 says the frame comes from a device, bits 0-2 the kind.
V3_MARK = VERSION_3 << 4
V3_FROM_DEVICE = 0x08
V3_DATA, V3_ACK, V3_NAK, V3_CODE, V3_REPLY, V3_GROUP, V3_ANSWER = 0, 1, 2, 3, 4, 5, 6
V3_KINDS = {
    V3_DATA: Kind.DATA,
    V3_ACK: Kind.ACK,
    V3_NAK: Kind.NAK,
    V3_CODE: Kind.DATA,
    V3_REPLY: Kind.REPLY,
    V3_GROUP: Kind.GROUP,
    # v4 only: a REPLY whose answer is a whole message (LEN and a CBOR map), an `identity` or a `light` event.
    V3_ANSWER: Kind.REPLY,
}
# The CBOR map a CODE or REPLY frame stands for: {0: code} (a command, from the host) or {1: code} (an event).
CMD_KEY, EVT_KEY = 0, 1


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
        if not from_device:
            raise ValueError("a REPLY or ANSWER comes from a device only")
        if code is not None and code[0] == EVT_KEY:
            body = bytes((V3_MARK | direction | V3_REPLY, address, seq, code[1]))
        else:
            # v4's ANSWER: the caller (Link.answer) sends one only to a host that negotiated v4.
            body = bytes((V3_MARK | direction | V3_ANSWER, address, seq, len(payload))) + payload
    elif kind == Kind.DATA and code is not None and code[0] == (EVT_KEY if from_device else CMD_KEY):
        body = bytes((V3_MARK | direction | V3_CODE, address, seq, code[1]))
    elif kind == Kind.DATA:
        body = bytes((V3_MARK | direction | V3_DATA, address, seq, len(payload))) + payload
    else:
        body = bytes((V3_MARK | direction | (V3_ACK if kind == Kind.ACK else V3_NAK), address, seq))
    return bytes((SOF,)) + body + crc16(body).to_bytes(2, "big")
