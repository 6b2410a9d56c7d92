"""Reference serial protocol v1, v2 and v3: framing, CRC and the message vocabulary (pure, no I/O).

The one import path the docs and drivers use; the code lives in frames.py (frames, CRC, encoding), group.py (v3 GROUP
frames and slots), parser.py (FrameParser) and messages.py (the vocabulary, JSON and CBOR payloads).

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

from drivers.reference.frames import (
    BROADCAST_ADDRESS,
    CMD_KEY,
    COMPACT_VERSIONS,
    CRC_LEN,
    EVT_KEY,
    FROM_DEVICE,
    HEADER_LEN,
    HEADER_LEN_V2,
    HOST_ADDRESS,
    MAX_FRAME,
    MAX_PAYLOAD,
    MAX_PAYLOAD_V2,
    SOF,
    V1_KINDS,
    V3_ACK,
    V3_CODE,
    V3_DATA,
    V3_FROM_DEVICE,
    V3_GROUP,
    V3_KINDS,
    V3_MARK,
    V3_MIN_FRAME,
    V3_NAK,
    V3_REPLY,
    VERSION,
    VERSION_2,
    VERSION_3,
    VERSIONS,
    CorruptFrame,
    Frame,
    Kind,
    bare_code,
    code_payload,
    crc16,
    encode_frame,
)
from drivers.reference.group import (
    GROUP_ANSWERS,
    GROUP_HEADER,
    GROUP_LOCK,
    MAX_GROUP_MASK,
    SLOT_CONFIRMATION,
    SLOT_PERIOD,
    SLOT_TURNAROUND,
    STATIONS_KEY,
    encode_group,
    group_mask,
    group_payload,
    mask_addresses,
    slot_check,
    slot_confirmation,
)
from drivers.reference.messages import (
    COMMANDS,
    EVENTS,
    MAX_FOREIGN_CARD_LEN,
    RANKS,
    SUITS,
    ProtocolError,
    decode_message,
    encode_message,
    is_card,
    is_foreign_card,
)
from drivers.reference.parser import (
    FrameParser,
)

__all__ = [
    "BROADCAST_ADDRESS",
    "CMD_KEY",
    "COMMANDS",
    "COMPACT_VERSIONS",
    "CRC_LEN",
    "EVENTS",
    "EVT_KEY",
    "FROM_DEVICE",
    "GROUP_ANSWERS",
    "GROUP_HEADER",
    "GROUP_LOCK",
    "HEADER_LEN",
    "HEADER_LEN_V2",
    "HOST_ADDRESS",
    "MAX_FOREIGN_CARD_LEN",
    "MAX_FRAME",
    "MAX_GROUP_MASK",
    "MAX_PAYLOAD",
    "MAX_PAYLOAD_V2",
    "RANKS",
    "SLOT_CONFIRMATION",
    "SLOT_PERIOD",
    "SLOT_TURNAROUND",
    "SOF",
    "STATIONS_KEY",
    "SUITS",
    "V1_KINDS",
    "V3_ACK",
    "V3_CODE",
    "V3_DATA",
    "V3_FROM_DEVICE",
    "V3_GROUP",
    "V3_KINDS",
    "V3_MARK",
    "V3_MIN_FRAME",
    "V3_NAK",
    "V3_REPLY",
    "VERSION",
    "VERSIONS",
    "VERSION_2",
    "VERSION_3",
    "CorruptFrame",
    "Frame",
    "FrameParser",
    "Kind",
    "ProtocolError",
    "bare_code",
    "code_payload",
    "crc16",
    "decode_message",
    "encode_frame",
    "encode_group",
    "encode_message",
    "group_mask",
    "group_payload",
    "is_card",
    "is_foreign_card",
    "mask_addresses",
    "slot_check",
    "slot_confirmation",
]
