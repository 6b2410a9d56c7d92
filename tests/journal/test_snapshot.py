"""The stored form of the engine's state: every field round-trips (tests/journal/conftest.py checks it after every
step of every chapter), and a damaged or foreign body is refused with the reason, never half-read."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.engine.state import DeckLife, Phase, RoundState, SeatRound, TableState
from controller.store import snapshot
from controller.store.records import StoredCopy

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def busy_state() -> TableState:
    s = TableState(
        "T1",
        phase=Phase.DECISION,
        rounds_played=7,
        now=T0,
        last_activity=T0,
        blocks={"deck_change_due": "deck A in play 8 hours"},
        confirmed={"dealer"},
        decks={"A": DeckLife(since=T0, rounds=3, rounds_since_count=1)},
        deck_order=["Ah", "Kd"],
        devices_down={"shoe": "offline"},
        stations_down={4: "offline"},
        out_of_order={"shuffler": "manual"},
        held_wagers={2: {"ante": 500}},
    )
    s.round = RoundState(
        7,
        "T1-r000007",
        seats={1: SeatRound(1, {"ante": 500}, {"street_3": 500}, {}, ["Ah", "Kd"], "street_3")},
        locks_pending={5},
        players=[1],
        dealt=["Ah", "Kd"],
        areas={"community": ["2c", "", "9s"]},
        revealed=["community#1"],
        turn=1,
        left={3: "hold"},
        chips_entered=[4, 5],
    )
    return s


def test_every_field_round_trips_with_its_type() -> None:
    s = busy_state()
    back = snapshot.decode(snapshot.encode(s))
    assert back == s
    assert type(back.round) is RoundState and type(back.round.seats[1]) is SeatRound
    assert back.phase is Phase.DECISION and back.round.locks_pending == {5} and back.stations_down == {4: "offline"}
    assert back.now == T0 and back.now.utcoffset() is not None
    assert json.loads(snapshot.encode(s))["format"] == snapshot.FORMAT


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"\x00\xffgarbage", "is not JSON"),
        (b"[1, 2]", "has no format version"),
        (b'{"format": 2, "state": {}}', "format 2, newer than this software's 1: upgrade tablectl"),
        (b'{"format": 1}', "does not validate: state: Field required"),
        (b'{"format": 1, "state": {"table_id": "T1", "phase": "dancing"}}', "state.phase"),
    ],
)
def test_a_body_that_cannot_be_restored_says_why(body: bytes, message: str) -> None:
    with pytest.raises(snapshot.SnapshotError, match=message.replace("(", r"\(").replace(")", r"\)")):
        snapshot.decode(body)


def test_a_wrong_type_deep_inside_is_named_by_its_place() -> None:
    doc = json.loads(snapshot.encode(busy_state()))
    doc["state"]["round"]["seats"]["1"]["wagers"]["ante"] = "five dollars"
    with pytest.raises(snapshot.SnapshotError, match=r"state\.round\.seats\.1\.wagers\.ante"):
        snapshot.decode(json.dumps(doc).encode())


def copy_of(body: bytes, n: int = 0, sha: str | None = None) -> StoredCopy:
    return StoredCopy("engine", n, body, sha or hashlib.sha256(body).hexdigest(), 42, "2024-05-01T12:00:00Z")


def test_restore_checks_each_copy_and_names_every_problem() -> None:
    good = snapshot.encode(busy_state())
    assert snapshot.restore([]) is None  # a new table
    assert snapshot.restore([copy_of(good)]) == busy_state()
    with pytest.raises(snapshot.SnapshotError, match=r"copy 0 \(seq 42\) fails its sha256 check"):
        snapshot.restore([copy_of(good, sha="0" * 64)])
    # Of two copies, a damaged first one does not hide a good second one.
    assert snapshot.restore([copy_of(good, 0, "0" * 64), copy_of(good, 1)]) == busy_state()
    with pytest.raises(snapshot.SnapshotError, match=r"copy 0 .* sha256.*; copy 1 .*not JSON"):
        snapshot.restore([copy_of(good, 0, "0" * 64), copy_of(b"{oops", 1)])


@settings(max_examples=300, derandomize=True, deadline=None)
@given(data=st.data())
def test_damaged_bodies_are_refused_or_restored_never_crash(data: st.DataObject) -> None:
    body = bytearray(snapshot.encode(busy_state()))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(body) - 1))
        body[i] = data.draw(st.integers(0, 255))
    try:
        state = snapshot.decode(bytes(body))
    except snapshot.SnapshotError as err:
        assert str(err).startswith("the stored engine state")
    else:
        assert isinstance(state, TableState)  # a change that still validates is the checksum's to catch


@settings(max_examples=200, derandomize=True, deadline=None)
@given(body=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_bytes_are_refused_with_a_reason(body: bytes) -> None:
    try:
        snapshot.decode(body)
    except snapshot.SnapshotError as err:
        assert "engine state" in str(err)
