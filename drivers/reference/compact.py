"""Reference protocol v2 payloads: the v1 message as a CBOR map (RFC 8949) with coded keys and names (pure).

A v2 payload is the v1 JSON object with two substitutions, nothing else: each key this table knows becomes its
small integer (one CBOR byte), and the value of `cmd`, `evt` or `button` becomes its small integer when the
table knows it. Everything else (spots, cards, amounts, strings a device invents) is carried as CBOR carries
it, so the v2 vocabulary is exactly v1's: a message a table does not know (a newer device's, or one a driver
adds later) still travels, under its text key or name. docs/protocol.md section 10 is the normative table;
the tables grow only by appending, never by renumbering.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import cbor2

KEYS: tuple[str, ...] = (
    "cmd",  # 0
    "evt",  # 1
    "src",  # 2
    "spot",  # 3
    "amount",  # 4
    "cards",  # 5
    "card",  # 6
    "stations",  # 7
    "button",  # 8
    "count",  # 9
    "what",  # 10
    "on",  # 11
    "code",  # 12
    "detail",  # 13
    "reason",  # 14
    "order",  # 15
    "seats",  # 16
    "levels",  # 17
    "level",  # 18
    "seat",  # 19
    "reference",  # 20
    "protocols",  # 21
    "model",  # 22
    "serial",  # 23
    "firmware",  # 24
    "firmware_hash",  # 25
)
COMMAND_NAMES: tuple[str, ...] = (
    "identify",  # 0
    "ping",  # 1
    "shuffle",  # 2
    "dispense",  # 3
    "remove_stub",  # 4
    "lock",  # 5
    "unlock",  # 6
    "light",  # 7
    "show_levels",  # 8
    "show_win",  # 9
    "credit",  # 10
)
EVENT_NAMES: tuple[str, ...] = (
    "identity",  # 0
    "pong",  # 1
    "shuffle_complete",  # 2
    "stack",  # 3
    "stub",  # 4
    "face_up",  # 5
    "card",  # 6
    "locked",  # 7
    "unlocked",  # 8
    "wager",  # 9
    "wager_refused",  # 10
    "button",  # 11
    "count",  # 12
    "bind",  # 13
    "levels_shown",  # 14
    "credited",  # 15
    "fault",  # 16
    "light",  # 17
    "fault_cleared",  # 18
)

# The dealer panel's buttons (drivers.interfaces.BUTTONS, in that order): "no more bets" is on the lock-out's path.
BUTTON_NAMES: tuple[str, ...] = (
    "no_more_bets",  # 0
    "fold",  # 1
    "let_it_ride",  # 2
    "withdraw",  # 3
    "dealt",  # 4
    "drawn_in_error",  # 5
    "community_exposed",  # 6
    "wrong_card_count",  # 7
    "inspected",  # 8
    "shuffled",  # 9
    "misdeal",  # 10
    "no_misdeal",  # 11
)

# The keys whose text value is coded, and their tables.
_NAMES = {"cmd": COMMAND_NAMES, "evt": EVENT_NAMES, "button": BUTTON_NAMES}
_KEY_CODE = {name: code for code, name in enumerate(KEYS)}
_NAME_CODE = {key: {n: c for c, n in enumerate(names)} for key, names in _NAMES.items()}


# An identity's firmware_hash, the lowercase hex SHA-256 of the firmware, travels as its 32 bytes in a compact payload:
# 34 bytes instead of 66, the largest single saving in the identity seven stations answer one after another on a
# shared line at every start (docs/protocol.md section 10, "Payload").
HASH_BYTES = 32
_HEX_SHA256 = re.compile(r"[0-9a-f]{64}")


class CompactError(ValueError):
    """A v2 payload that is not a CBOR map of this vocabulary."""


def encode_compact(message: Mapping[str, Any]) -> bytes:
    """The v2 payload of a v1 message (a JSON-able object with text keys)."""
    coded: dict[int | str, Any] = {}
    for key, value in message.items():
        if key in _NAMES:
            if not isinstance(value, str):
                # An integer here would read back as a coded name: such a (malformed) message goes in v1.
                raise CompactError(f"{key} must be text in v2, got {value!r}")
            value = _NAME_CODE[key].get(value, value)
        elif key == "firmware_hash" and isinstance(value, str) and _HEX_SHA256.fullmatch(value):
            value = bytes.fromhex(value)
        coded[_KEY_CODE.get(key, key)] = value
    # canonical: a map's keys in one order, so a retransmission is byte for byte the frame it repeats.
    return cbor2.dumps(coded, canonical=True)


def decode_compact(payload: bytes) -> dict[str, Any]:
    """The v1 message a v2 payload carries; CompactError naming what is wrong otherwise."""
    try:
        coded = cbor2.loads(payload)
    except Exception as exc:  # cbor2 raises its own errors, ValueError and others on arbitrary bytes
        raise CompactError(f"payload is not CBOR: {exc}") from None
    if not isinstance(coded, dict):
        raise CompactError(f"payload is CBOR {type(coded).__name__}, expected a map")
    message: dict[str, Any] = {}
    for key, value in coded.items():
        if isinstance(key, int) and not isinstance(key, bool):
            if not 0 <= key < len(KEYS):
                raise CompactError(f"unknown key code {key}")
            name = KEYS[key]
        elif isinstance(key, str):
            name = key
        else:
            raise CompactError(f"map key {key!r} is neither a key code nor text")
        if name in _NAMES and isinstance(value, int) and not isinstance(value, bool):
            names = _NAMES[name]
            if not 0 <= value < len(names):
                raise CompactError(f"unknown {name} code {value}")
            value = names[value]
        elif name == "firmware_hash" and isinstance(value, bytes):
            if len(value) != HASH_BYTES:
                raise CompactError(f"firmware_hash as bytes must be {HASH_BYTES} bytes (a SHA-256), got {len(value)}")
            value = value.hex()
        _check_plain(value)
        message[name] = value
    return message


def _check_plain(value: object) -> None:
    """Only what JSON can carry: a CBOR tag (a date, a bignum wrapper...) or bytes has no v1 meaning."""
    if value is None or isinstance(value, bool | int | float | str):
        return
    if isinstance(value, list):
        for item in value:
            _check_plain(item)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CompactError(f"nested map key {key!r} is not text")
            _check_plain(item)
        return
    raise CompactError(f"value of CBOR type {type(value).__name__} has no meaning here")
