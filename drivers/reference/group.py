"""Reference serial protocol v3 GROUP frames and slot confirmations (pure, no I/O).

v3 GROUP frame (host only, ADDR 0xFF): SOF | VK 0x35 | 0xFF | SEQ | CODE | BASE | N | MASK (N bytes) | CRC (2): one
command to the stations the mask names, each confirming in its own time slot with two bytes, ADDR and a check value over
ADDR and SEQ (docs/protocol.md section 13); the host's parser takes those pairs while its slot window is open.
"""

from __future__ import annotations

from collections.abc import Iterable

from drivers.reference.frames import (
    BROADCAST_ADDRESS,
    CMD_KEY,
    EVT_KEY,
    SOF,
    V3_GROUP,
    V3_MARK,
    VERSION_4,
    crc16,
)

STATIONS_KEY = 7  # the v2 key code of "stations"
# The commands a GROUP frame may carry, with the bare event each named station confirms in its slot: `lock` (5) with
# `locked` (7). A station ignores a GROUP frame with any other code (it may be a later version's).
GROUP_ANSWERS_V3 = {5: 7}
# v4 adds `unlock` (6) confirmed as `unlocked` (8): the table's opening and every round's reopening (section 14). A
# station that speaks v3 only ignores it, so the host sends it only on a line whose stations all negotiated v4.
# v4 also adds `light` (7), which carries the state asked for in one ARG byte after MASK (0 off, 1 on), confirmed in its
# slot by a station whose lamp shows that state: the pair stands for {"evt":"light","on":<the state asked>}.
GROUP_ANSWERS = {**GROUP_ANSWERS_V3, 6: 8, 7: 17}
GROUP_LOCK = 5
GROUP_UNLOCK = 6
GROUP_LIGHT = 7
ON_KEY = 11  # the v2 key code of "on"
MAX_GROUP_MASK = 32  # bytes: 256 bits cover every station address 1..254 from any BASE
GROUP_HEADER = 7  # SOF VK ADDR SEQ CODE BASE N
# Slot timing, in byte times of the line (10 bits at 8N1): the first slot starts SLOT_TURNAROUND after the GROUP
# frame's last byte, slot i at SLOT_TURNAROUND + i * SLOT_PERIOD; a confirmation is SLOT_CONFIRMATION bytes, the rest
# of the period is the guard that absorbs each station's timing error.
SLOT_TURNAROUND = 2
SLOT_CONFIRMATION = 2
SLOT_PERIOD = 4


def group_answers(versions: frozenset[int]) -> dict[int, int]:
    """The GROUP commands (and the event that confirms each) a receiver that speaks `versions` acts on."""
    return GROUP_ANSWERS if VERSION_4 in versions else GROUP_ANSWERS_V3


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


def encode_group(seq: int, code: int, addresses: Iterable[int], on: bool | None = None) -> bytes:
    """The v3 GROUP frame: command `code` to every station in `addresses`, from the host, ADDR 0xFF; v4's `light` with
    the state `on` in its ARG byte."""
    if code not in GROUP_ANSWERS:
        raise ValueError(f"a GROUP frame carries one of the commands {sorted(GROUP_ANSWERS)}, got {code}")
    if (on is None) != (code != GROUP_LIGHT):
        raise ValueError("a GROUP light carries the state asked for (on=True or False), and no other command does")
    if not 0 <= seq <= 0xFF:
        raise ValueError(f"seq {seq} out of range 0..255")
    base, mask = group_mask(addresses)
    body = bytes((V3_MARK | V3_GROUP, BROADCAST_ADDRESS, seq, code, base, len(mask))) + mask
    if on is not None:
        body += bytes((int(on),))
    return bytes((SOF,)) + body + crc16(body).to_bytes(2, "big")


def group_payload(code: int, addresses: Iterable[int], on: bool | None = None) -> bytes:
    """The CBOR map a GROUP frame stands for ({"cmd": name, "stations": [...]}, as a v2 broadcast's; a light's with
    "on"), canonical."""
    named = sorted(set(addresses))
    array = bytes((0x80 | len(named),)) if len(named) < 24 else bytes((0x98, len(named)))
    items = b"".join(bytes((a,)) if a < 0x18 else bytes((0x18, a)) for a in named)
    head = bytes((0xA2 if on is None else 0xA3, CMD_KEY)) + _uint(code) + bytes((STATIONS_KEY,)) + array + items
    return head if on is None else head + bytes((ON_KEY, 0xF5 if on else 0xF4))


def group_confirms(code: int, on: bool | None = None) -> bytes:
    """The CBOR map a slot confirmation stands for: the bare event that confirms `code` ({"evt":"locked"}), or for a
    light the state it shows, the one asked for ({"evt":"light","on":...})."""
    event = GROUP_ANSWERS[code]
    if on is None:
        return bytes((0xA1, EVT_KEY)) + _uint(event)
    return bytes((0xA2, EVT_KEY)) + _uint(event) + bytes((ON_KEY, 0xF5 if on else 0xF4))


def _uint(value: int) -> bytes:
    return bytes((value,)) if value < 0x18 else bytes((0x18, value))


def slot_check(address: int, seq: int) -> int:
    """A slot confirmation's check value: the low byte of CRC-16/CCITT-FALSE over ADDR and the GROUP frame's SEQ."""
    return crc16(bytes((address, seq))) & 0xFF


def slot_confirmation(address: int, seq: int) -> bytes:
    """The two bytes station `address` sends in its slot after the GROUP frame with `seq`."""
    return bytes((address, slot_check(address, seq)))
