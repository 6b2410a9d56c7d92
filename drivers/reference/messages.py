"""Reference serial protocol: the message vocabulary and payload encoding, JSON (v1) or CBOR (v2, v3) (pure, no I/O)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from drivers.reference.compact import CompactError, decode_compact, encode_compact
from drivers.reference.frames import (
    COMPACT_VERSIONS,
    MAX_PAYLOAD,
    MAX_PAYLOAD_V2,
    VERSION,
)


class ProtocolError(ValueError):
    """A payload that is not a valid v1 message."""


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
    "fault_cleared",
)
RANKS = "23456789TJQKA"
SUITS = "cdhs"


def encode_message(message: Mapping[str, Any], version: int = VERSION) -> bytes:
    """A DATA payload: compact UTF-8 JSON in v1, a coded CBOR map in v2 (drivers/reference/compact.py)."""
    if len(message) == 1 and type(cmd := message.get("cmd")) is str:
        # A bare command (lock, unlock, ping) is the same bytes every time: a lock-out encodes it once per station,
        # on its way to the frames.
        return _bare_command(cmd, version)
    return _encode(message, version)


@functools.lru_cache(maxsize=64)  # the commands' vocabulary is small; a caller's odd name does not grow it unbounded
def _bare_command(cmd: str, version: int) -> bytes:
    return _encode({"cmd": cmd}, version)


def _encode(message: Mapping[str, Any], version: int) -> bytes:
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
