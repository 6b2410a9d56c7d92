"""The Alpha Sign Communications Protocol, as far as the sign driver uses it: packets, amounts, memory layout.

Pure: no I/O. One packet is

    NUL x5 (autobaud)  SOH  type code (1)  address (2 hex)  STX command data ETX checksum (4 hex)  EOT

with the checksum the 16-bit sum of the bytes from STX through ETX (docs/alpha-sign.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

NUL, SOH, STX, ETX, EOT, ESC, DLE = 0x00, 0x01, 0x02, 0x03, 0x04, 0x1B, 0x10
SYNC = bytes(5)  # the description asks for at least five NULs so the sign can find the baud rate
WRITE_TEXT, READ_TEXT, WRITE_SPECIAL, WRITE_STRING, READ_STRING = b"A", b"B", b"E", b"G", b"H"
MEMORY_CONFIGURATION = b"$"  # special function label: allocate files (and clear the old ones)
RESPONSE_TYPE = "0"  # type code of a packet the sign sends back
TEXT_LABEL = b"A"
PRIORITY_LABEL = b"0"
HEARTBEAT_LABEL = b"Z"
LEVEL_LABELS = b"BCDEFGHIJKLMNOPQRSTUVWXY"  # one STRING file per level; "0"-"5" and "?" are reserved
STRING_SIZE = 0x20  # bytes allocated per STRING file: "$99,999,999,999.99" fits
POSITION_MIDDLE, MODE_HOLD, MODE_FLASH = b" ", b"b", b"c"
MAX_PACKET = 4096
IDLE_EXPIRY = 0.5  # seconds of silence inside a packet after which its start is dropped

AMOUNT = re.compile(rb"^\$(\d{1,3}(?:,\d{3})*)\.(\d{2})$")
CAPTION = re.compile(r"^[ -~]{1,24}$")  # printable ASCII: 7-bit signs show nothing else


# --- packets ----------------------------------------------------------------------------------------------------


def checksum(block: bytes) -> bytes:
    """Four upper-case hex digits: the sum of the bytes from STX through ETX, modulo 65536."""
    return b"%04X" % (sum(block) & 0xFFFF)


def encode_packet(type_code: str, address: str, command: bytes, data: bytes = b"") -> bytes:
    """One command in one packet, always with ETX and checksum (a sign drops a packet whose checksum fails)."""
    block = bytes([STX]) + command + data + bytes([ETX])
    return (
        SYNC
        + bytes([SOH])
        + type_code.encode("ascii")
        + address.encode("ascii")
        + block
        + checksum(block)
        + bytes([EOT])
    )


@dataclass(frozen=True, slots=True)
class Packet:
    type_code: str
    address: str
    command: bytes  # one byte
    data: bytes
    checksum_ok: bool | None  # None: sent without a checksum


@dataclass
class PacketParser:
    """Untrusted bytes in, whole packets out. Anything outside SOH..EOT but the NUL sync is noise; a packet
    longer than MAX_PACKET, a second SOH inside a packet or one that cannot be read is dropped and counted."""

    discarded_bytes: int = 0
    bad_packets: int = 0
    _buffer: bytearray = field(default_factory=bytearray)

    @property
    def pending(self) -> bool:
        return bool(self._buffer)

    def feed(self, data: bytes) -> list[Packet]:
        out: list[Packet] = []
        for byte in data:
            if not self._buffer:
                if byte == SOH:
                    self._buffer.append(byte)
                elif byte != NUL:
                    self.discarded_bytes += 1
                continue
            if byte == SOH:  # a new packet starts inside the last: the last is lost
                self._drop()
                self._buffer.append(byte)
                continue
            self._buffer.append(byte)
            if byte == EOT:
                packet = parse_body(bytes(self._buffer[1:-1]))
                if packet is None:
                    self._drop()
                else:
                    self._buffer.clear()
                    out.append(packet)
            elif len(self._buffer) > MAX_PACKET:
                self._drop()
        return out

    def expire(self) -> None:
        """The line went quiet inside a packet: it will never end, drop it."""
        if self._buffer:
            self._drop()

    def _drop(self) -> None:
        self.bad_packets += 1
        self.discarded_bytes += len(self._buffer)
        self._buffer.clear()


def parse_body(body: bytes) -> Packet | None:
    """type(1) address(2) STX command data [ETX checksum(4)]; None if it is not that (or has more commands:
    this driver neither sends nor expects nested packets)."""
    if len(body) < 5 or body[3] != STX:
        return None
    try:
        type_code, address = body[:1].decode("ascii"), body[1:3].decode("ascii")
    except UnicodeDecodeError:
        return None
    rest = body[3:]
    if ETX in rest:
        end = rest.index(ETX)
        block, tail = rest[: end + 1], rest[end + 1 :]
        if len(tail) != 4 or STX in tail:
            return None
        ok: bool | None = tail.upper() == checksum(block)
        content = block[1:-1]
    else:
        content, ok = rest[1:], None
    if not content or STX in content:
        return None
    return Packet(type_code, address, content[:1], content[1:], ok)


def format_amount(cents: int) -> bytes:
    return b"$%s.%02d" % (f"{cents // 100:,}".encode(), cents % 100)


def parse_amount(text: bytes) -> int | None:
    m = AMOUNT.fullmatch(text)
    if m is None:
        return None
    return int(m.group(1).replace(b",", b"")) * 100 + int(m.group(2))


def caption_for(level: str, captions: Mapping[str, str]) -> str:
    return captions.get(level, level.replace("_", " ").upper())


def win_message(caption: str, amount_cents: int, seat: int) -> bytes:
    return caption.encode("ascii") + b" WIN " + format_amount(amount_cents) + b" SEAT %d" % seat


def memory_layout(levels: list[str]) -> bytes:
    """Write SPECIAL FUNCTION "$" data: TEXT A, a STRING file per level and the heartbeat STRING Z.

    Each entry: label, type (A TEXT, B STRING), L (locked against the sign's IR keyboard, as 605a.7(a)(6)
    wants the meters kept from unauthorised change), size (4 hex), then FF00 (TEXT: shown always) or 0000.
    """
    text_size = 16 + sum(8 + 24 for _ in levels)
    entries = [TEXT_LABEL + b"AL" + b"%04X" % text_size + b"FF00"]
    entries += [LEVEL_LABELS[i : i + 1] + b"BL" + b"%04X" % STRING_SIZE + b"0000" for i in range(len(levels))]
    entries.append(HEARTBEAT_LABEL + b"BL" + b"%04X" % STRING_SIZE + b"0000")
    return MEMORY_CONFIGURATION + b"".join(entries)


def text_layout(levels: list[str], captions: Mapping[str, str]) -> bytes:
    """TEXT file A: one held message per level, its caption then its STRING file (DLE + label)."""
    return b"".join(
        bytes([ESC])
        + POSITION_MIDDLE
        + MODE_HOLD
        + caption_for(level, captions).encode("ascii")
        + b" "
        + bytes([DLE])
        + LEVEL_LABELS[i : i + 1]
        for i, level in enumerate(levels)
    )
