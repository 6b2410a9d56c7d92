"""Seq gaps that stay open (floor/gaps.py, pure): when a gap opened carries over as seqs shrink or split it, a gap open
past the grace period is stale, the log says each stale gap once, and the `tablectl command send` lines a person runs
(the floor holds no key: DESIGN.md, "The floor")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from floor.config import FloorConfigError, parse_floor_config
from floor.gaps import MAX_SEQS, StaleWatch, age_text, carry_since, chunks, open_gaps, resend_command
from floor.live import TableLive

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)


def ts(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat(timespec="microseconds").replace("+00:00", "Z")


def test_a_gap_keeps_the_time_it_opened_as_seqs_shrink_and_split_it() -> None:
    assert carry_since([], [], [(5, 9)], ts(0)) == [ts(0)]
    # 7 arrives: 5-9 splits into 5-6 and 8-9, both as old as 5-9; 20-30 opens above everything archived, now.
    assert carry_since([[5, 9]], [ts(0)], [(5, 6), (8, 9), (20, 30)], ts(10)) == [ts(0), ts(0), ts(10)]
    # One with no time recorded (archived before it was kept) is taken as opening now.
    assert carry_since([[5, 9]], [], [(5, 6)], ts(10)) == [ts(10)]


def live(table_id: str, gaps: list[list[int]], since: list[str]) -> TableLive:
    return TableLive(table_id, gaps=gaps, gap_since=since)


def test_a_gap_is_stale_past_the_grace_period() -> None:
    tables = [live("t2", [[5, 9]], [ts(0)]), live("t1", [[1, 1], [40, 49]], [ts(20), ""])]
    at_29 = open_gaps(tables, T0 + timedelta(seconds=29.9), 30)
    assert [(g.table_id, g.text, g.stale) for g in at_29] == [
        ("t1", "1", False),
        ("t1", "40-49", True),
        ("t2", "5-9", False),
    ]
    at_30 = open_gaps(tables, T0 + timedelta(seconds=30), 30)
    assert [(g.table_id, g.text, g.stale, round(g.age_s)) for g in at_30] == [
        ("t1", "1", False, 10),
        ("t1", "40-49", True, 0),  # its opening unknown: older than this run, so stale at once
        ("t2", "5-9", True, 30),
    ]
    assert (age_text(9), age_text(75), age_text(3 * 3600 + 120)) == ("9s", "1m15s", "3h02m")


def test_each_stale_gap_is_said_once_and_what_stays_of_it_is_not_said_again() -> None:
    watch = StaleWatch()
    t = live("t1", [[5, 9]], [ts(0)])
    assert watch.newly_stale(open_gaps([t], T0 + timedelta(seconds=10), 30)) == []
    said = watch.newly_stale(open_gaps([t], T0 + timedelta(seconds=31), 30))
    assert [g.key for g in said] == [("t1", 5, 9)]
    assert watch.newly_stale(open_gaps([t], T0 + timedelta(seconds=99), 30)) == []  # once
    t.gaps, t.gap_since = [[8, 9]], [ts(0)]  # partly filled (a resend arriving in several batches): said already
    assert watch.newly_stale(open_gaps([t], T0 + timedelta(seconds=100), 30)) == []
    assert watch.said == {("t1", 8, 9)}
    t.gaps, t.gap_since = [[8, 9], [20, 29]], [ts(0), ts(50)]  # a new gap, stale in its turn
    assert [g.key for g in watch.newly_stale(open_gaps([t], T0 + timedelta(seconds=80.5), 30))] == [("t1", 20, 29)]
    t.gaps, t.gap_since = [], []
    assert watch.newly_stale(open_gaps([t], T0 + timedelta(seconds=101), 30)) == [] and watch.said == set()


@given(st.integers(1, 10**6), st.integers(0, 50_000))
def test_a_wide_gap_is_asked_for_in_commands_of_at_most_max_seqs(first: int, width: int) -> None:
    parts = chunks((first, first + width))
    assert parts[0][0] == first and parts[-1][1] == first + width
    assert all(b - a + 1 <= MAX_SEQS for a, b in parts)
    assert all(parts[i][1] + 1 == parts[i + 1][0] for i in range(len(parts) - 1))


def test_the_command_lines_a_person_runs() -> None:
    lines = resend_command("ms-7", (1, 15_000), "mqtts://broker:8883", "tablectl")
    assert lines == [
        "tablectl command send --key KEY.pem --key-id KEY_ID --broker mqtts://broker:8883 --prefix tablectl "
        f"--table ms-7 resend from_seq={a} to_seq={b}"
        for a, b in ((1, 10_000), (10_001, 15_000))
    ]


def test_the_config_takes_a_grace_period_and_no_key() -> None:
    base = '[database]\ndsn = "dbname=floor"\n'
    assert parse_floor_config(base).gaps.grace_s == 30.0
    assert parse_floor_config(base + "[gaps]\ngrace_s = 5\n").gaps.grace_s == 5.0
    with pytest.raises(FloorConfigError, match=r"gaps\.grace_s: .*greater than or equal to 1.*1 to 86400"):
        parse_floor_config(base + "[gaps]\ngrace_s = 0\n")
    # The floor holds no private key (DESIGN.md, "The floor"): the first design's [resend] key is refused by name.
    with pytest.raises(FloorConfigError, match=r"resend: unknown setting: remove it"):
        parse_floor_config(base + '[resend]\nkey_file = "floor.pem"\nkey_id = "floor"\n')
