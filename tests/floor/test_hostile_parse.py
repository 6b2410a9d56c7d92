"""The floor's check of what arrives (floor/messages.py), pure: whatever bytes a table, a misconfigured client or an
attacker publishes on any topic the floor subscribes to, parse() returns a refusal with a reason or a message the
archive can store and a report can read; it never raises. And the live model counts a redelivered event once."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.mqtt.contract import TableEvent
from floor.config import GamingDaySection
from floor.days import gaming_day, parse_ts
from floor.gaps import MAX_COMMANDS, MAX_SEQS, resend_command
from floor.live import TableLive
from floor.messages import INT64, Incoming, LinkIncoming, Rejected, parse, unstorable

PREFIX = "tc"
TOPICS = [f"{PREFIX}/t1/{t}" for t in ("event", "status", "birth", "device/shoe", "progressive/mega")] + [
    f"{PREFIX}/link/L1/{t}" for t in ("state", "event", "jackpot", "progressive/mega")
]
GOOD: dict[str, Any] = {
    "event_id": "e1",
    "boot_id": "b1",
    "seq": 1,
    "ts": "2026-11-21T10:00:00.000000Z",
    "table_id": "t1",
    "round_id": "t1-r1",
    "type": "round.completed",
    "rule": "655a.11(h)",
    "payload": {"seat": 1, "amount": 500},
}
# Text with what PostgreSQL refuses (NUL), what UTF-8 cannot carry (lone surrogates) and digits of other scripts.
texts = st.text(alphabet=st.sampled_from(["a", "1", "\x00", "\ud800", "\udfff", "\u0663", "\uff15", "Z", "-", ":"]))
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | texts
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3), max_leaves=12
)


def encoded(value: Any) -> bytes:
    return json.dumps(value).encode()  # NaN and Infinity as bare words, surrogates escaped: as a client may send


def storable(m: Incoming | LinkIncoming) -> None:
    """What the archive writer does with a message (floor/archive.py), short of the database."""
    assert unstorable(m.content) is None
    if isinstance(m, Incoming) and isinstance(m.model, TableEvent):
        assert 1 <= m.model.seq <= INT64
        gaming_day(parse_ts(m.model.ts), GamingDaySection(timezone="America/New_York"))
        json.dumps(m.model.payload, allow_nan=False).encode("utf-8")


@settings(max_examples=400, deadline=None)
@given(topic=st.sampled_from(TOPICS), value=json_values)
def test_any_json_on_any_topic_is_refused_with_a_reason_or_storable(topic: str, value: Any) -> None:
    got = parse(PREFIX, topic, encoded(value))
    if isinstance(got, Rejected):
        assert got.reason and got.topic == topic
    elif got is not None:
        storable(got)


@settings(max_examples=400, deadline=None)
@given(field=st.sampled_from(sorted(GOOD)), value=json_values, inner=st.booleans())
def test_a_good_event_with_one_field_broken_is_refused_or_storable(field: str, value: Any, inner: bool) -> None:
    event = dict(GOOD)
    if inner:
        event["payload"] = {**GOOD["payload"], field: value}
    else:
        event[field] = value
    got = parse(PREFIX, f"{PREFIX}/t1/event", encoded(event))
    assert got is not None
    if isinstance(got, Rejected):
        assert got.reason
    else:
        storable(got)


@given(st.binary(max_size=64))
def test_any_bytes_are_refused_or_storable(payload: bytes) -> None:
    got = parse(PREFIX, f"{PREFIX}/t1/event", payload)
    if isinstance(got, Incoming | LinkIncoming):
        storable(got)


def test_the_last_event_delivered_again_counts_its_round_once() -> None:
    live = TableLive("t1")
    event = TableEvent.model_validate(GOOD)
    live.apply_event(event)
    live.apply_event(event.model_copy(update={"replayed": True}))  # at least once: the broker's redelivery
    assert (live.rounds_completed, live.last_seq) == (1, 1)


def test_with_ingest_tables_set_another_tables_messages_are_refused_naming_the_fix() -> None:
    ghost = encoded({**GOOD, "table_id": "ghost"})
    assert isinstance(parse(PREFIX, f"{PREFIX}/ghost/event", ghost), Incoming), "unset: every table is taken"
    got = parse(PREFIX, f"{PREFIX}/ghost/event", ghost, frozenset({"t1"}))
    assert isinstance(got, Rejected) and "table 'ghost' is not in [ingest] tables" in got.reason
    assert isinstance(parse(PREFIX, f"{PREFIX}/t1/event", encoded(GOOD), frozenset({"t1"})), Incoming)


def test_a_gap_opened_by_a_seq_near_the_top_of_bigint_offers_a_bounded_resend() -> None:
    """One event of seq 2**63 - 1 opens a gap of that width; the stale gap's commands were built whole (10**15)."""
    lines = resend_command("t1", (2, INT64 - 1), "mqtt://b", PREFIX)
    assert len(lines) == MAX_COMMANDS + 1
    assert lines[0].endswith("resend from_seq=2 to_seq=10001")
    assert lines[-1].startswith(f"# and {INT64 - 2 - MAX_SEQS * MAX_COMMANDS} more seq(s) up to {INT64 - 1}")
    assert len(resend_command("t1", (1, 25_000), "mqtt://b", PREFIX)) == 3
