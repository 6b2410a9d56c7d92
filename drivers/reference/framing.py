"""Reference serial protocol v1: framing, CRC and the JSON message vocabulary (pure, no I/O).

Frame: SOF 0xA5 | VER 0x01 | ADDR | SEQ | KIND | LEN (2, big-endian) | PAYLOAD | CRC (2, big-endian),
CRC-16/CCITT-FALSE over VER..PAYLOAD. docs/protocol.md is the normative description.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

SOF = 0xA5
VERSION = 0x01
HOST_ADDRESS = 0
MAX_PAYLOAD = 1024
HEADER_LEN = 7  # SOF VER ADDR SEQ KIND LEN_HI LEN_LO
CRC_LEN = 2
MAX_FRAME = HEADER_LEN + MAX_PAYLOAD + CRC_LEN


class Kind(IntEnum):
    DATA = 0x01
    ACK = 0x06
    NAK = 0x15


_KINDS = frozenset(int(k) for k in Kind)


class ProtocolError(ValueError):
    """A payload that is not a valid v1 message."""


@dataclass(frozen=True, slots=True)
class Frame:
    address: int
    seq: int
    kind: Kind
    payload: bytes = b""

    def encode(self) -> bytes:
        return encode_frame(self.address, self.seq, self.kind, self.payload)


@dataclass(frozen=True, slots=True)
class CorruptFrame:
    """A frame whose header was readable but whose CRC was wrong: the receiver NAKs this SEQ."""

    address: int
    seq: int
    kind: Kind


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no xorout); check value 0x29B1."""
    return binascii.crc_hqx(data, 0xFFFF)


def encode_frame(address: int, seq: int, kind: Kind, payload: bytes = b"") -> bytes:
    if not 0 <= address <= 0xFF:
        raise ValueError(f"address {address} out of range 0..255")
    if not 0 <= seq <= 0xFF:
        raise ValueError(f"seq {seq} out of range 0..255")
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    if kind != Kind.DATA and payload:
        raise ValueError("ACK and NAK frames carry no payload")
    body = bytes((VERSION, address, seq, int(kind))) + len(payload).to_bytes(2, "big") + payload
    return bytes((SOF,)) + body + crc16(body).to_bytes(2, "big")


class FrameParser:
    """Incremental decoder that never raises on input and keeps at most one frame's worth of bytes.

    On anything invalid it drops only the SOF byte it had trusted and rescans, so a real frame that
    followed (or was swallowed by) a false SOF inside garbage is still found.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self.discarded_bytes = 0
        self.bad_frames = 0
        self._corrupt: list[CorruptFrame] = []

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
            start = buf.find(SOF)
            if start < 0:
                self._drop(len(buf))
                break
            if start:
                self._drop(start)
            if len(buf) < HEADER_LEN:
                break
            version, address, seq, kind, length = buf[1], buf[2], buf[3], buf[4], (buf[5] << 8) | buf[6]
            if version != VERSION or kind not in _KINDS or length > MAX_PAYLOAD or (kind != Kind.DATA and length):
                self._drop(1, bad=True)
                continue
            total = HEADER_LEN + length + CRC_LEN
            if len(buf) < total:
                break
            body = bytes(buf[1 : HEADER_LEN + length])
            crc = (buf[total - 2] << 8) | buf[total - 1]
            if crc != crc16(body):
                self._corrupt.append(CorruptFrame(address, seq, Kind(kind)))
                self._drop(1, bad=True)
                continue
            frames.append(Frame(address, seq, Kind(kind), bytes(buf[HEADER_LEN : HEADER_LEN + length])))
            del buf[:total]
        return frames


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


def encode_message(message: Mapping[str, Any]) -> bytes:
    payload = json.dumps(dict(message), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"message encodes to {len(payload)} bytes, more than {MAX_PAYLOAD}")
    return payload


def decode_message(payload: bytes) -> dict[str, Any]:
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
