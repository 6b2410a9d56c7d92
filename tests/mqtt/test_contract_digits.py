"""The contract's patterns take ASCII digits only (controller/mqtt/contract.py, ISO_UTC): a timestamp, a rate or a
chapter written in other Unicode digits is refused, as an examiner's tools comparing with the journal would misread
it; the same text in ASCII digits passes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from controller.mqtt.contract import GameInfo, ProgressiveMeter, Timestamp
from tests.mqtt.foreign_digits import ZEROS, foreign

STAMP = "2026-11-21T08:00:00.000000Z"


def meter(rate: str) -> dict[str, Any]:
    return {
        "table_id": "t1", "level": "progressive", "display_cents": 100, "seed_cents": 100, "reseed_cents": 100,
        "primary_rate_percent": rate, "reserve_rate_percent": "2.5", "reserve_cents": 0, "hits": 0, "as_of_seq": 1,
        "ts": STAMP,
    }  # fmt: skip


def game(chapter: str) -> dict[str, Any]:
    return {"chapter": chapter, "name": "Let It Ride", "seats": 7, "dealing_method": "hand", "rules": {}}


def test_ascii_digits_pass() -> None:
    assert TypeAdapter(Timestamp).validate_python(STAMP) == STAMP
    assert ProgressiveMeter.model_validate(meter("21")).primary_rate_percent == "21"
    assert GameInfo.model_validate(game("643a")).chapter == "643a"


@pytest.mark.parametrize("zero", ZEROS, ids=hex)
def test_other_digits_are_refused(zero: int) -> None:
    with pytest.raises(ValidationError, match=r"should match pattern"):
        TypeAdapter(Timestamp).validate_python(foreign(STAMP, zero))
    with pytest.raises(ValidationError, match="primary_rate_percent"):
        ProgressiveMeter.model_validate(meter(foreign("21", zero)))
    with pytest.raises(ValidationError, match="chapter"):
        GameInfo.model_validate(game(foreign("643a", zero)))


@given(st.datetimes(min_value=datetime(1000, 1, 1)), st.sampled_from(ZEROS), st.integers(0, 18))
def test_a_stamp_passes_exactly_when_its_digits_are_ascii(when: datetime, zero: int, at: int) -> None:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert TypeAdapter(Timestamp).validate_python(stamp) == stamp
    digits = [i for i, c in enumerate(stamp) if c.isdigit()]
    i = digits[at % len(digits)]
    one_foreign = stamp[:i] + foreign(stamp[i], zero) + stamp[i + 1 :]
    with pytest.raises(ValidationError):
        TypeAdapter(Timestamp).validate_python(one_foreign)
