"""The stored meters: two checksummed copies; any damage is found at load and never becomes a reset."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.mississippi_stud.progressives import (
    mississippi_stud_five_card_hand_bonus,
    mississippi_stud_progressive,
)
from controller.progressive import codec
from controller.progressive.codec import from_data
from controller.progressive.meters import contribute, hit, seed_missing
from controller.progressive.model import MeterError, Meters, PercentOfMeter
from controller.progressive.parameters import TableProgressives

PARAMS = TableProgressives(
    progressives=(mississippi_stud_progressive("D", 100), mississippi_stud_five_card_hand_bonus(100))
)


def played(rounds: int) -> Meters:
    meters, _ = seed_missing(Meters(), PARAMS)
    for r in range(rounds):
        meters, _ = contribute(meters, PARAMS, "progressive", 100, seat=1, round_id=f"r{r}")
        meters, _ = contribute(meters, PARAMS, "five_card_hand_bonus", 100, seat=2, round_id=f"r{r}")
    meters, _, _ = hit(meters, PARAMS, "minor", PercentOfMeter(100), seat=1, round_id=f"r{rounds - 1}", rule="t")
    return meters


METERS = played(7)


def test_round_trip_is_exact_and_canonical() -> None:
    blob = codec.encode(METERS, 12)
    assert codec.decode(blob) == codec.Stored(METERS, 12)
    assert codec.encode(codec.decode(blob).meters, 12) == blob
    assert blob.endswith(b"\n") and blob.count(b"\n") == 1
    assert codec.load_copies(blob, blob) == codec.Loaded(METERS, 12, "both")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(data=st.data())
def test_any_damaged_byte_is_found(data: st.DataObject) -> None:
    """605a.7(a)(6): a stored meter altered by one byte, anywhere, is found; the sound copy is used, with a tilt."""
    blob = codec.encode(METERS, 3)
    at = data.draw(st.integers(0, len(blob) - 2), label="position")  # the final newline is not content
    new = data.draw(st.integers(0, 255).filter(lambda b: b != blob[at]), label="byte")
    damaged = blob[:at] + bytes([new]) + blob[at + 1 :]
    with pytest.raises(codec.CorruptCopy):
        codec.decode(damaged)
    loaded = codec.load_copies(damaged, blob)
    assert (loaded.meters, loaded.generation, loaded.used, loaded.rewrite, loaded.tilt) == (
        METERS,
        3,
        "b",
        ("a",),
        True,
    )
    assert loaded.findings[0].startswith("copy a is corrupt: ")


def test_truncated_copy_and_both_bad() -> None:
    blob = codec.encode(METERS, 3)
    for cut in (0, 1, len(blob) // 2, len(blob) - 2):
        with pytest.raises(codec.CorruptCopy):
            codec.decode(blob[:cut])
    with pytest.raises(codec.MeterStoreCorrupt, match=r"both meter copies are unusable.*not reset"):
        codec.load_copies(blob[:10], b"garbage")
    with pytest.raises(codec.NoMeterState, match="seed the meters if this table is new"):
        codec.load_copies(None, None)
    loaded = codec.load_copies(None, blob)
    assert loaded.tilt and loaded.findings == ["copy a is missing"] and loaded.meters == METERS


def test_a_well_formed_copy_that_does_not_balance_is_corrupt() -> None:
    # Rewrite the state and its checksum consistently, as a tool that edits the file would: the balance catches it.
    import json

    document = json.loads(codec.encode(METERS, 3))
    document["state"]["levels"]["mega"]["display_micro"] += 100 * 1_000_000
    document["sha256"] = codec._digest(codec._canonical({"generation": 3, "state": document["state"]}))
    with pytest.raises(codec.CorruptCopy, match="does not balance"):
        codec.decode(codec._canonical(document))
    with pytest.raises(MeterError, match="refusing to store meters that do not balance"):
        codec.encode(from_data(document["state"]), 4)


def test_interrupted_save_is_repaired_without_a_tilt_but_other_differences_tilt() -> None:
    # One save (generation 4) covers the three events of a contribution to mega, major and minor.
    ahead = codec.encode(_one_more(METERS), 4)
    assert codec.decode(ahead).meters.seq == METERS.seq + 3
    loaded = codec.load_copies(ahead, codec.encode(METERS, 3))
    assert (loaded.used, loaded.generation, loaded.rewrite, loaded.tilt) == ("a", 4, ("b",), False)
    assert "a save was interrupted between the copies" in loaded.findings[0]
    far_ahead = codec.encode(played(8), 9)
    for a, b, used in (
        (far_ahead, codec.encode(METERS, 3), "a"),  # b missed saves
        (codec.encode(METERS, 3), ahead, "b"),  # b ahead of a: never the order of a save
        (codec.encode(METERS, 4), ahead, "b"),
    ):  # same generation, other meters
        loaded = codec.load_copies(a, b)
        assert loaded.tilt and loaded.used == used and "the copies disagree" in loaded.findings[-1]


def _one_more(meters: Meters) -> Meters:
    return contribute(meters, PARAMS, "progressive", 100, seat=3, round_id="r-next")[0]


def test_two_copies_in_a_real_sqlite_file(tmp_path: Path) -> None:
    # How the controller is meant to keep them: two rows, each written in its own durable transaction.
    db = sqlite3.connect(tmp_path / "critical.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE meter_copies (copy TEXT PRIMARY KEY, body BLOB NOT NULL)")
    blob = codec.encode(METERS, 3)
    for copy in ("a", "b"):
        db.execute("INSERT INTO meter_copies VALUES (?, ?)", (copy, blob))
    # Bit rot in copy b's body, written behind the codec's back.
    damaged = bytearray(blob)
    damaged[len(damaged) // 2] ^= 0x04
    db.execute("UPDATE meter_copies SET body = ? WHERE copy = 'b'", (bytes(damaged),))
    db.close()

    db = sqlite3.connect(tmp_path / "critical.sqlite")
    rows = dict(db.execute("SELECT copy, body FROM meter_copies").fetchall())
    db.close()
    loaded = codec.load_copies(rows.get("a"), rows.get("b"))
    assert (loaded.meters, loaded.used, loaded.rewrite, loaded.tilt) == (METERS, "a", ("b",), True)
    assert loaded.findings[0].startswith("copy b is corrupt: ")
