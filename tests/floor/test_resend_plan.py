"""The floor's plan of which gaps to ask a table for (floor/resend.py, pure): the grace period, the backoff, the bound
on requests in flight, gaps wider than one command, and seqs a table said it does not have."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from floor.config import FloorConfigError, parse_floor_config
from floor.resend import MAX_SEQS, ResendPlan, chunks, resend_command


def test_a_gap_is_asked_for_after_the_grace_period_then_with_backoff() -> None:
    plan = ResendPlan(grace_s=30, backoff_max_s=100, max_outstanding=4)
    gaps = {"t1": [(5, 9)]}
    assert plan.due(gaps, 0) == []
    assert plan.due(gaps, 29.9) == []
    assert plan.due(gaps, 30) == [("t1", 5, 9)]
    assert plan.due(gaps, 31) == []  # outstanding: not asked twice
    plan.answered(("t1", 5, 9), 31)
    assert plan.due(gaps, 60) == []
    assert plan.due(gaps, 61) == [("t1", 5, 9)]  # 30 s after the first answer
    plan.answered(("t1", 5, 9), 61)
    assert plan.due(gaps, 120) == [] and plan.due(gaps, 121) == [("t1", 5, 9)]  # then 60 s
    plan.answered(("t1", 5, 9), 121)
    assert plan.due(gaps, 220) == [] and plan.due(gaps, 221) == [("t1", 5, 9)]  # 120 s, capped at 100
    plan.answered(("t1", 5, 9), 221)
    assert plan.due({}, 1000) == [] and plan.asks == {}  # filled: forgotten


def test_requests_in_flight_are_bounded_oldest_first() -> None:
    plan = ResendPlan(grace_s=0, backoff_max_s=10, max_outstanding=2)
    gaps = {"t1": [(1, 3), (10, 12)], "t2": [(4, 4)]}
    first = plan.due(gaps, 0)
    assert len(first) == 2
    assert plan.due(gaps, 0) == []
    plan.answered(first[0], 0.5)
    rest = plan.due(gaps, 0.5)
    assert len(rest) == 1 and rest[0] not in first


def test_seqs_the_table_has_not_are_not_asked_for_again() -> None:
    plan = ResendPlan(grace_s=0, backoff_max_s=10, max_outstanding=4)
    assert plan.due({"t1": [(1, 100)]}, 0) == [("t1", 1, 100)]
    plan.answered(("t1", 1, 100), 0, missing=[(1, 40)])  # archived out of reach, say; 41-100 still on the way
    assert plan.due({"t1": [(1, 100)]}, 100) == [("t1", 41, 100)]
    plan.answered(("t1", 41, 100), 100)
    assert plan.due({"t1": [(1, 40)]}, 1000) == []


@given(st.integers(1, 10**6), st.integers(0, 50_000))
def test_a_wide_gap_is_asked_for_in_commands_of_at_most_max_seqs(first: int, width: int) -> None:
    parts = chunks((first, first + width))
    assert parts[0][0] == first and parts[-1][1] == first + width
    assert all(b - a + 1 <= MAX_SEQS for a, b in parts)
    assert all(parts[i][1] + 1 == parts[i + 1][0] for i in range(len(parts) - 1))


def test_the_operators_command_lines() -> None:
    lines = resend_command("ms-7", (1, 15_000), "mqtts://broker:8883", "tablectl")
    assert lines == [
        "tablectl command send --key KEY.pem --key-id KEY_ID --broker mqtts://broker:8883 --prefix tablectl "
        f"--table ms-7 resend from_seq={a} to_seq={b}"
        for a, b in ((1, 10_000), (10_001, 15_000))
    ]


def test_the_config_wants_the_key_and_its_id_together(tmp_path: Path) -> None:
    base = '[database]\ndsn = "dbname=floor"\n[resend]\n'
    with pytest.raises(FloorConfigError, match="give both key_file and key_id"):
        parse_floor_config(base + f'key_file = "{tmp_path / "k.pem"}"\n')
    with pytest.raises(FloorConfigError, match=r"resend\.max_outstanding"):
        parse_floor_config(base + 'key_id = "f"\nkey_file = "k.pem"\nmax_outstanding = 0\n')
    ok = parse_floor_config(base + 'key_id = "floor"\nkey_file = "k.pem"\n')
    assert (ok.resend.grace_s, ok.resend.max_outstanding) == (30.0, 4)
