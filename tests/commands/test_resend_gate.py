"""`resend {from_seq, to_seq}` at the gate: who may ask (every person's role: it changes nothing at the table; no key
of the floor service's own, which holds none: DESIGN.md, "The floor"), the bounded range, and the checks every command
goes through (replay). The verb reaches no engine: the gate hands the listener its arguments, with no input to step
(docs/commands.md, "resend")."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.config.errors import ConfigError
from controller.supervisor.gate import Accepted, CommandGate, Rejected
from controller.supervisor.verbs import MAX_RESEND, ROLE_VERBS, ResendArgs
from floor.gaps import MAX_SEQS
from tests.commands.conftest import Key, seeded_key
from tests.commands.gate_inputs import NOW, TABLE, config_with, make_gate, raw


@pytest.fixture
def gate(tmp_path: Path, keys: dict[str, Key]) -> CommandGate:
    return make_gate(tmp_path / "journal.sqlite", keys)


def ask(key: Key, verb: str = "resend", **args: Any) -> bytes:
    return raw(key.sign(TABLE, verb, args=args, issued_at=NOW))


def rejected(result: Accepted | Rejected, code: str, *words: str) -> None:
    assert isinstance(result, Rejected), result
    assert result.code == code, result
    for w in words:
        assert w in result.reason, result.reason


@pytest.mark.parametrize("who", ["floorperson", "technician", "supervisor"])
def test_every_role_may_ask(gate: CommandGate, keys: dict[str, Key], who: str) -> None:
    result = gate.check("resend", ask(keys[who], from_seq=12, to_seq=40), NOW)
    assert isinstance(result, Accepted), result
    assert result.input is None  # nothing for the engine: the listener carries it out
    assert result.role == who and result.args == ResendArgs(from_seq=12, to_seq=40)


def test_a_key_the_table_does_not_list_may_not(gate: CommandGate, keys: dict[str, Key]) -> None:
    result = gate.check("resend", ask(keys["stranger"], from_seq=1, to_seq=2), NOW)
    assert isinstance(result, Rejected) and result.code != "bad_args", result


def test_there_is_no_role_for_a_floor_services_key(keys: dict[str, Key]) -> None:
    """The floor relays and displays; it never holds a private key (DESIGN.md, "The floor"), so no table lists one."""
    with pytest.raises(ConfigError, match=r"supervisors\[0\]\.role"):
        config_with([seeded_key("floor-archive", "floor", 9).entry()])
    assert set(ROLE_VERBS) == {"floorperson", "supervisor", "technician"}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"from_seq": 50, "to_seq": 10}, ("reversed", "from_seq 50 is after to_seq 10")),
        ({"from_seq": 1, "to_seq": 10_001}, ("10,001 seqs", "10,000", "several commands", "to_seq=10000")),
        ({"from_seq": 0, "to_seq": 5}, ("args.from_seq", "greater than or equal to 1")),
        ({"from_seq": -3, "to_seq": -1}, ("args.from_seq",)),
        ({"from_seq": 1}, ("args.to_seq: is required but missing",)),
        ({"from_seq": "one", "to_seq": 5}, ("args.from_seq",)),
        ({"from_seq": 1, "to_seq": 5, "table": "t2"}, ("args.table: is not a known field",)),
    ],
)
def test_a_bad_range_is_refused_naming_the_fix(
    gate: CommandGate, keys: dict[str, Key], args: dict[str, Any], words: tuple[str, ...]
) -> None:
    rejected(
        gate.check("resend", ask(keys["technician"], **args), NOW), "bad_args", "resend takes from_seq, to_seq", *words
    )


def test_the_largest_range_is_accepted(gate: CommandGate, keys: dict[str, Key]) -> None:
    result = gate.check("resend", ask(keys["technician"], from_seq=7, to_seq=7 + MAX_RESEND - 1), NOW)
    assert isinstance(result, Accepted), result
    single = gate.check("resend", ask(keys["technician"], from_seq=7, to_seq=7), NOW)
    assert isinstance(single, Accepted), single


def test_a_replayed_resend_is_refused(gate: CommandGate, keys: dict[str, Key]) -> None:
    payload = ask(keys["technician"], from_seq=1, to_seq=9)
    assert isinstance(gate.check("resend", payload, NOW), Accepted)
    rejected(gate.check("resend", payload, NOW + timedelta(seconds=1)), "replayed")


def test_the_floors_command_lines_ask_within_the_tables_bound() -> None:
    assert MAX_SEQS == MAX_RESEND
