"""The lock-out's wire arithmetic (bench/lockout.py's baseline): the bytes of each frame on the critical path in a
protocol version, one line per station or one multi-drop line, and the time a paced line takes to carry them."""

from __future__ import annotations

from drivers.reference.device import ReferenceSettings
from drivers.reference.framing import (
    BROADCAST_ADDRESS,
    COMPACT_VERSIONS,
    GROUP_LOCK,
    HOST_ADDRESS,
    SLOT_CONFIRMATION,
    SLOT_PERIOD,
    SLOT_TURNAROUND,
    VERSION_3,
    Kind,
    encode_frame,
    encode_group,
    encode_message,
)
from drivers.reference.wager_bus import ReferenceWagerBusSettings
from drivers.sim.line import LineTiming


def frame_len(
    message: dict[str, object], version: int, *, from_device: bool, address: int = 1, kind: Kind = Kind.DATA
) -> int:
    if version in COMPACT_VERSIONS:
        return len(encode_frame(address, 1, kind, encode_message(message, version), version, from_device))
    return len(encode_frame(HOST_ADDRESS if from_device else address, 1, Kind.DATA, encode_message(message)))


def ack_len(version: int) -> int:
    return len(encode_frame(1, 1, Kind.ACK, b"", version, version in COMPACT_VERSIONS))


def critical_bytes(stations: int, version: int, bus: bool) -> tuple[int, int]:
    """Bytes on the critical path: (the press frame, from the press reaching the controller to the last
    confirmation). One line per station: the lock, the station's ACK, its `locked`, on every line at once.
    A multi-drop line: v3, the GROUP frame and its slot window (in byte times, guards included); v2, one broadcast
    naming every station then the seven `locked` on the return pair;
    v1, the first lock frame then seven ACK + `locked` (with `src`) pairs on the return pair. v4 locks as v3 does."""
    version = min(version, VERSION_3)
    press = frame_len({"evt": "button", "button": "no_more_bets"}, version, from_device=True)
    if version == VERSION_3 and bus:
        # The GROUP frame, then the slot window up to the last confirmation's last byte: the turnaround, a period per
        # station but the last, and the last one's two bytes (docs/protocol.md section 13). Byte times, not bytes.
        group = len(encode_group(1, GROUP_LOCK, range(1, stations + 1)))
        return press, group + SLOT_TURNAROUND + (stations - 1) * SLOT_PERIOD + SLOT_CONFIRMATION
    if version == VERSION_3 and not bus:
        # The lock as a CODE frame, answered by the REPLY that is its ACK and the `locked` at once (section 12).
        lock = frame_len({"cmd": "lock"}, version, from_device=False)
        return press, lock + frame_len({"evt": "locked"}, version, from_device=True, kind=Kind.REPLY)
    src = {"src": 1} if bus and version not in COMPACT_VERSIONS else {}
    locked = frame_len({"evt": "locked", **src}, version, from_device=True)
    if bus and version in COMPACT_VERSIONS:
        named = list(range(1, stations + 1))
        broadcast = frame_len({"cmd": "lock", "stations": named}, 2, from_device=False, address=BROADCAST_ADDRESS)
        return press, broadcast + stations * locked
    lock = frame_len({"cmd": "lock"}, version, from_device=False)
    return press, lock + (stations if bus else 1) * (ack_len(version) + locked)


def line_time_ms(n_bytes: int, timing: LineTiming) -> float:
    return timing.frame_time(n_bytes) * 1000


# What a reference driver speaks unless its settings cap it: growth.py measures the lock-out with it.
DRIVER_PROTOCOL = int(ReferenceSettings.model_fields["protocol"].default)
assert ReferenceWagerBusSettings.model_fields["protocol"].default == DRIVER_PROTOCOL


def expected_station_bytes(stations: int, version: int, bus: bool) -> int:
    """Bytes all station lines carry in one lock-out: every station's lock (or the one broadcast) and its answers,
    plus (v1, v2) the host's ACK of each `locked`; a v3 REPLY is never ACKed. v4 locks as v3 does, and a v3 bus line
    then carries the proofs of the slot pairs."""
    version = min(version, VERSION_3)
    _press, path = critical_bytes(stations, version, bus)
    if version == VERSION_3 and bus:
        # Then, the window closed, each station's proof of its pair: a CODE lock and its REPLY, 7 bytes each
        # (docs/protocol.md section 13, "The proof of a pair"), after the lock-out the bench times.
        proofs = stations * (7 + 7)
        return len(encode_group(1, GROUP_LOCK, range(1, stations + 1))) + stations * SLOT_CONFIRMATION + proofs
    if version == VERSION_3 and not bus:
        return stations * path
    if bus and version in COMPACT_VERSIONS:
        return path + stations * ack_len(version)
    src = {"src": 1} if bus else {}
    lock = frame_len({"cmd": "lock"}, version, from_device=False)
    locked = frame_len({"evt": "locked", **src}, version, from_device=True)
    return stations * (lock + 2 * ack_len(version) + locked)
