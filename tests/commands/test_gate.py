"""The command gate on its own: every check, every verb's input, the replay store in a real SQLite file, the
[[supervisors]] config, and hypothesis fuzzing of the parser and verifier (any bytes: an answer, never an
exception)."""

from __future__ import annotations

import base64
import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.config.errors import ConfigError
from controller.engine.inputs import (
    AcknowledgeTilt,
    CashOutAccount,
    ClearTilt,
    CloseTable,
    Confirm,
    FloorpersonDecision,
    MarkOutOfOrder,
    OpenTable,
    PlayerLeft,
    ReleaseHeld,
    Signed,
    ValidateJackpot,
)
from controller.mqtt.contract import CommandReply
from controller.store.journal import Journal
from controller.supervisor.batches import RateLimit
from controller.supervisor.envelope import canonical_bytes
from controller.supervisor.gate import MAX_DEPTH, MAX_PAYLOAD_BYTES, Accepted, CommandGate, Rejected
from controller.supervisor.replay import ReplayStore, ReplayStoreError
from controller.supervisor.verbs import ROLE_VERBS, VERBS
from tests.commands.conftest import Key
from tests.commands.gate_inputs import NOW, TABLE, config_with, make_gate, raw


@pytest.fixture
def gate(tmp_path: Path, keys: dict[str, Key]) -> CommandGate:
    return make_gate(tmp_path / "journal.sqlite", keys)


def signed(keys: dict[str, Key], who: str = "supervisor", verb: str = "close_table", **kw: Any) -> dict[str, Any]:
    kw.setdefault("issued_at", NOW)
    return keys[who].sign(kw.pop("table_id", TABLE), verb, **kw)


def resign(keys: dict[str, Key], who: str, body: dict[str, Any]) -> dict[str, Any]:
    """The body with a good signature over whatever it now says."""
    body = {k: v for k, v in body.items() if k != "signature"}
    body["signature"] = base64.b64encode(keys[who].private.sign(canonical_bytes(body))).decode()
    return body


# -- one case per rejection -----------------------------------------------------------------------------------


def rejection_cases(keys: dict[str, Key]) -> list[tuple[str, str, bytes, str]]:
    """(name, topic verb, payload, expected code): every way a command is refused."""
    good = signed(keys)
    unsigned = {k: v for k, v in good.items() if k != "signature"}
    tampered = {**good, "args": {"note": "added after signing"}}
    short_sig = {**good, "signature": base64.b64encode(b"x" * 10).decode()}
    return [
        ("too big", "close_table", b"{" + b" " * MAX_PAYLOAD_BYTES + b"}", "too_big"),
        ("not JSON", "close_table", b"close the table please", "not_json"),
        ("not UTF-8", "close_table", b"\xff\xfe{}", "not_json"),
        ("duplicate keys", "close_table", b'{"verb":"close_table","verb":"open_table"}', "not_json"),
        ("NaN", "close_table", b'{"x":NaN}', "not_json"),
        ("not an object", "close_table", b'["close_table"]', "not_object"),
        ("missing fields", "close_table", json.dumps({"verb": "close_table"}).encode(), "missing_fields"),
        ("unsigned", "close_table", raw(unsigned), "unsigned"),
        ("empty signature", "close_table", raw({**good, "signature": ""}), "unsigned"),
        ("bad envelope", "close_table", raw({**good, "command_id": "not-hex"}), "bad_envelope"),
        ("numeric time", "close_table", raw({**good, "issued_at": 1_800_000_000}), "bad_envelope"),
        ("extra field", "close_table", raw({**good, "priority": "high"}), "bad_envelope"),
        ("wrong table", "close_table", raw(signed(keys, table_id="t2")), "wrong_table"),
        ("topic verb", "open_table", raw(good), "verb_mismatch"),
        ("unknown key", "close_table", raw(resign(keys, "supervisor", {**good, "key_id": "mallory"})), "unknown_key"),
        ("tampered", "close_table", raw(tampered), "bad_signature"),
        ("other key", "verify_deck", raw(signed(keys, "stranger", "verify_deck")), "bad_signature"),
        ("signature not base64", "close_table", raw({**good, "signature": "%%%"}), "bad_signature"),
        ("signature too short", "close_table", raw(short_sig), "bad_signature"),
        ("unknown verb", "dance", raw(signed(keys, verb="dance")), "unknown_verb"),
        ("stale", "close_table", raw(signed(keys, issued_at=NOW - timedelta(seconds=31))), "stale"),
        ("future", "close_table", raw(signed(keys, issued_at=NOW + timedelta(seconds=6))), "future"),
        ("role", "close_table", raw(signed(keys, "floorperson")), "role_not_allowed"),
        ("technician closes", "close_table", raw(signed(keys, "technician")), "role_not_allowed"),
        (
            "bad args",
            "mark_out_of_order",
            raw(signed(keys, verb="mark_out_of_order", args={"device": "toaster"})),
            "bad_args",
        ),
        ("unknown arg", "close_table", raw(signed(keys, args={"now": True})), "bad_args"),
        (
            "decision",
            "floorperson_decision",
            raw(
                signed(
                    keys, "floorperson", "floorperson_decision", args={"about": "chip_count", "decision": "reshuffle"}
                )
            ),
            "bad_args",
        ),
    ]


def test_every_rejection_has_its_code_and_a_reason_naming_the_fix(gate: CommandGate, keys: dict[str, Key]) -> None:
    for name, topic_verb, payload, code in rejection_cases(keys):
        result = gate.check(topic_verb, payload, NOW)
        assert isinstance(result, Rejected), name
        assert result.code == code, (name, result)
        assert len(result.reason) > 20, (name, result.reason)


def test_reasons_say_what_to_do(gate: CommandGate, keys: dict[str, Key]) -> None:
    results = {name: gate.check(verb, payload, NOW) for name, verb, payload, _ in rejection_cases(keys)}

    def reason(name: str) -> str:
        r = results[name]
        assert isinstance(r, Rejected)
        return r.reason

    assert "max_age_seconds = 30" in reason("stale") and "31.0 s ago" in reason("stale")
    assert "max_clock_skew_seconds = 5" in reason("future")
    assert "a supervisor may" in reason("role")
    assert "args.device" in reason("bad args") and "'shuffler' or 'shoe'" in reason("bad args")
    assert "takes device" in reason("bad args")
    assert "give one of proceed, recount, void" in reason("decision")
    assert "t2" in reason("wrong table") and "mallory" in reason("unknown key")
    # A rejection names the command, so the sender can tell which of theirs it was.
    role = results["role"]
    assert isinstance(role, Rejected)
    assert (role.verb, role.key_id) == ("close_table", "floor-ann") and role.command_id is not None


def test_a_good_command_becomes_its_signed_input(gate: CommandGate, keys: dict[str, Key]) -> None:
    cmd = signed(keys, "technician", "mark_out_of_order", args={"device": "shoe"})
    result = gate.check("mark_out_of_order", raw(cmd), NOW + timedelta(seconds=29))
    assert isinstance(result, Accepted)
    assert result.input == Signed(
        MarkOutOfOrder("shoe", True), cmd["command_id"], "mark_out_of_order", "tech-cy", "technician"
    )


@pytest.mark.parametrize(
    ("verb", "args", "expected"),
    [
        ("open_table", {}, OpenTable()),
        ("close_table", {}, CloseTable(by="supervisor super-bob")),
        ("verify_deck", {"deck": "B", "note": "red"}, Confirm("floorperson", "deck_verified", "B", "red")),
        ("verify_deck", {}, Confirm("floorperson", "deck_verified", None, "")),
        ("verify_inspection", {}, Confirm("floorperson", "cards_inspected")),
        (
            "floorperson_decision",
            {"about": "chip_count", "decision": "recount"},
            FloorpersonDecision("chip_count", "recount", "super-bob", ""),
        ),
        ("mark_out_of_order", {"device": "shuffler"}, MarkOutOfOrder("shuffler", True)),
        ("back_in_service", {"device": "shuffler"}, MarkOutOfOrder("shuffler", False)),
        ("player_left", {"seat": 4}, PlayerLeft(4)),
        ("release_held", {"seat": 4, "to": "house"}, ReleaseHeld(4, "house")),
        ("acknowledge_tilt", {"tilt": "critical_state"}, AcknowledgeTilt("critical_state", "super-bob", "supervisor")),
        (
            "clear_tilt",
            {"tilt": "tilt:journal", "note": "restored"},
            ClearTilt("tilt:journal", "super-bob", "supervisor", "restored"),
        ),
        (
            "validate_jackpot",
            {"seat": 3, "level": "mega", "hit": "e1"},
            ValidateJackpot(3, "mega", "e1", "super-bob", "supervisor"),
        ),
        (
            "cash_out_account",
            {"seat": 3, "reason": "terminal 3 offline"},
            CashOutAccount(3, "terminal 3 offline", "super-bob", "supervisor"),
        ),
    ],
)
def test_each_verb_maps_to_its_engine_input(
    gate: CommandGate, keys: dict[str, Key], verb: str, args: dict[str, Any], expected: object
) -> None:
    result = gate.check(verb, raw(signed(keys, verb=verb, args=args)), NOW)
    assert isinstance(result, Accepted), result
    assert result.input is not None
    assert result.input.inp == expected and (result.input.key_id, result.input.role) == ("super-bob", "supervisor")


def test_roles() -> None:
    assert ROLE_VERBS["supervisor"] == frozenset(VERBS)
    assert ROLE_VERBS["floorperson"] == {
        "verify_deck",
        "verify_inspection",
        "floorperson_decision",
        "acknowledge_tilt",
        "validate_jackpot",
        "bind_player",
        "player_left",
        "release_held",
        "cash_out_account",
        "resend",
    }
    assert ROLE_VERBS["technician"] == {"mark_out_of_order", "back_in_service", "acknowledge_tilt", "resend"}


def test_a_floorperson_records_a_player_who_left_mid_round_655a_7_b(gate: CommandGate, keys: dict[str, Key]) -> None:
    """655a.7(b): "If a player leaves the table during a round of play, any wagers made by the player may be
    considered abandoned". Nothing at the table but a floorperson can say so: the signed player_left reaches the
    engine as PlayerLeft and the journal names the signer in the same step as the abandoned wagers."""
    from controller.engine.round import RoundEngine
    from controller.engine.state import TableState
    from controller.games.mississippi_stud.rules import MississippiStudRules
    from controller.games.mississippi_stud.spec import MississippiStudSpec
    from tests.engine.conftest import PureTable

    rules = MississippiStudRules.model_validate({"chapter": "655a"})
    engine = RoundEngine(MississippiStudSpec(), rules)
    t = PureTable(engine, TableState(TABLE))
    t.feed(OpenTable())
    t.wager(2, "ante", 500)
    t.wager(5, "ante", 500)
    t.press("no_more_bets")
    cmd = signed(keys, "floorperson", "player_left", args={"seat": 5})
    result = gate.check("player_left", raw(cmd), NOW)
    assert isinstance(result, Accepted) and result.input is not None, result
    out = t.feed(result.input)
    assert [(e.type, e.rule) for e in out][:2] == [("command.accepted", None), ("wagers.abandoned", "655a.7(b)")]
    assert (out[0].payload["verb"], out[0].payload["role"]) == ("player_left", "floorperson")
    assert (out[1].payload["seat"], out[1].payload["wagers"]) == (5, {"ante": 500})
    # A technician may not say who left; an unknown seat is refused before anything is signed into the journal.
    tech = gate.check("player_left", raw(signed(keys, "technician", "player_left", args={"seat": 5})), NOW)
    assert isinstance(tech, Rejected) and tech.code == "role_not_allowed"
    bad = gate.check("player_left", raw(signed(keys, "floorperson", "player_left", args={"seat": 9})), NOW)
    assert isinstance(bad, Rejected) and bad.code == "bad_args" and "seat" in bad.reason


def test_release_held_names_where_the_wagers_go(gate: CommandGate, keys: dict[str, Key]) -> None:
    """`to` has no default: a floorperson must say whether the held wagers go back to the player or to the house."""
    missing = gate.check("release_held", raw(signed(keys, "floorperson", "release_held", args={"seat": 2})), NOW)
    assert isinstance(missing, Rejected) and missing.code == "bad_args" and "to" in missing.reason
    other = {"seat": 2, "to": "dealer"}
    wrong = gate.check("release_held", raw(signed(keys, "floorperson", "release_held", args=other)), NOW)
    assert isinstance(wrong, Rejected) and wrong.code == "bad_args" and "player" in wrong.reason


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"seat": 3}, "reason: is required"),
        ({"seat": 3, "reason": ""}, "reason"),
        ({"seat": 3, "reason": " \t "}, "reason is blank"),
        ({"seat": 0, "reason": "terminal dead"}, "seat"),
        ({"seat": 8, "reason": "terminal dead"}, "seat"),
        ({"reason": "terminal dead"}, "seat: is required"),
    ],
)
def test_cash_out_account_names_the_seat_and_why_605a_2_d_1(
    gate: CommandGate, keys: dict[str, Key], args: dict[str, Any], named: str
) -> None:
    """605a.2(d)(1) on a signer's authority: the seat and a reason (for the journal) are required, and a blank reason
    is no reason; refused before anything reaches the engine, naming the field."""
    bad = gate.check("cash_out_account", raw(signed(keys, "floorperson", "cash_out_account", args=args)), NOW)
    assert isinstance(bad, Rejected) and bad.code == "bad_args" and named in bad.reason, bad


def test_a_technician_may_not_pay_out_an_account(gate: CommandGate, keys: dict[str, Key]) -> None:
    """The technician repairs the terminal; paying the player is the floor's (docs/commands.md, "Roles")."""
    args = {"seat": 2, "reason": "terminal 2 offline"}
    tech = gate.check("cash_out_account", raw(signed(keys, "technician", "cash_out_account", args=args)), NOW)
    assert isinstance(tech, Rejected) and tech.code == "role_not_allowed"
    floor = gate.check("cash_out_account", raw(signed(keys, "floorperson", "cash_out_account", args=args)), NOW)
    assert isinstance(floor, Accepted) and floor.input is not None
    assert floor.input.inp == CashOutAccount(2, "terminal 2 offline", "floor-ann", "floorperson")


def test_the_canonical_form_ignores_key_order_and_signature() -> None:
    a = {"b": 1, "a": {"y": "é", "x": [1, 2]}, "signature": "zzz"}
    b = {"a": {"x": [1, 2], "y": "é"}, "b": 1}
    assert canonical_bytes(a) == canonical_bytes(b) == '{"a":{"x":[1,2],"y":"é"},"b":1}'.encode()


def test_a_command_signed_in_another_key_order_still_verifies(gate: CommandGate, keys: dict[str, Key]) -> None:
    cmd = signed(keys, "floorperson", "verify_deck", args={"note": "x", "deck": "A"})
    reordered = json.dumps(dict(reversed(list(cmd.items()))), indent=2).encode()
    assert isinstance(gate.check("verify_deck", reordered, NOW), Accepted)


# -- replays ---------------------------------------------------------------------------------------------------


def test_replays_are_refused_by_id_and_by_nonce_and_survive_a_reopen(tmp_path: Path, keys: dict[str, Key]) -> None:
    path = tmp_path / "journal.sqlite"
    journal = Journal(path, TABLE, "boot-1")  # the store shares the journal's file, in a table of its own
    gate = make_gate(path, keys)
    cmd = signed(keys, "floorperson", "verify_inspection")
    assert isinstance(gate.check("verify_inspection", raw(cmd), NOW), Accepted)
    again = gate.check("verify_inspection", raw(cmd), NOW + timedelta(seconds=1))
    assert isinstance(again, Rejected) and again.code == "replayed" and "command_id" in again.reason
    gate.store.close()

    reopened = make_gate(path, keys)  # a daemon restart
    again = reopened.check("verify_inspection", raw(cmd), NOW + timedelta(seconds=2))
    assert isinstance(again, Rejected) and again.code == "replayed"
    same_nonce = signed(keys, "floorperson", "verify_inspection", nonce=cmd["nonce"])
    again = reopened.check("verify_inspection", raw(same_nonce), NOW + timedelta(seconds=2))
    assert isinstance(again, Rejected) and again.code == "replayed" and "nonce" in again.reason
    assert journal.events() == []  # the journal's own table is untouched
    journal.close()


def test_a_forged_copy_does_not_burn_the_real_commands_id(gate: CommandGate, keys: dict[str, Key]) -> None:
    real = signed(keys, "floorperson", "verify_inspection")
    forged = {**real, "signature": signed(keys, "floorperson", "verify_inspection")["signature"]}
    assert isinstance(gate.check("verify_inspection", raw(forged), NOW), Rejected)
    assert isinstance(gate.check("verify_inspection", raw(real), NOW), Accepted)


def test_seen_commands_are_pruned_once_they_would_be_stale_anyway(gate: CommandGate, keys: dict[str, Key]) -> None:
    for n in range(3):
        assert isinstance(
            gate.check(
                "close_table", raw(signed(keys, issued_at=NOW + timedelta(seconds=n))), NOW + timedelta(seconds=n)
            ),
            Accepted,
        )
    assert gate.store.count() == 3
    later = NOW + timedelta(seconds=30 + 60 + 1.5)  # max age + the margin kept for clock steps
    assert isinstance(gate.check("close_table", raw(signed(keys, issued_at=later)), later), Accepted)
    assert gate.store.count() == 2  # the first two went; the third and the new one stay


# -- config -----------------------------------------------------------------------------------------------------


def test_config_takes_supervisors_and_freshness(keys: dict[str, Key]) -> None:
    cfg = config_with([keys["floorperson"].entry()], max_age_seconds=10, max_clock_skew_seconds=2)
    assert cfg.supervisors[0].role == "floorperson"
    assert (cfg.commands.max_age_seconds, cfg.commands.max_clock_skew_seconds) == (10, 2)
    assert config_with([]).commands.max_age_seconds == 30


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"public_key": "not base64!"}, "supervisors[0].public_key: is not base64"),
        ({"public_key": base64.b64encode(b"x" * 31).decode()}, "decodes to 31 bytes, an Ed25519 public key has 32"),
        ({"role": "pit_boss"}, "supervisors[0].role"),
        ({"key_id": "has space"}, "supervisors[0].key_id"),
    ],
)
def test_bad_supervisor_entries_are_named(keys: dict[str, Key], change: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_with([{**keys["floorperson"].entry(), **change}])
    assert message in str(err.value)


def test_a_key_id_or_a_key_listed_twice_is_refused(keys: dict[str, Key]) -> None:
    with pytest.raises(ConfigError, match="key_id 'floor-ann' is also supervisors\\[0\\]'s"):
        config_with([keys["floorperson"].entry(), keys["stranger"].entry()])
    with pytest.raises(ConfigError, match="same public_key as floor-ann"):
        config_with([keys["floorperson"].entry(), {**keys["floorperson"].entry(), "key_id": "ann2"}])
    with pytest.raises(ConfigError, match=r"commands\.max_age_seconds"):
        config_with([], max_age_seconds=0)


# -- fuzzing ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_gate(tmp_path_factory: pytest.TempPathFactory, keys: dict[str, Key]) -> CommandGate:
    return make_gate(tmp_path_factory.mktemp("fuzz") / "journal.sqlite", keys)


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(payload=st.binary(max_size=600), topic_verb=st.sampled_from(["close_table", "verify_deck", "", "x" * 50]))
def test_any_bytes_get_a_rejection_never_an_exception(fuzz_gate: CommandGate, payload: bytes, topic_verb: str) -> None:
    result = fuzz_gate.check(topic_verb, payload, NOW)
    assert isinstance(result, Rejected) and result.reason
    json.dumps(result.payload())  # journalable as it is


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
FIELDS = ["command_id", "table_id", "verb", "args", "issued_at", "nonce", "key_id", "signature"]


@FUZZ
@given(data=st.data())
def test_any_json_object_near_a_command_gets_an_answer(
    fuzz_gate: CommandGate, keys: dict[str, Key], data: st.DataObject
) -> None:
    """Start from a real signed command, then drop, replace or add fields with arbitrary JSON."""
    cmd: dict[str, Any] = signed(
        keys,
        data.draw(st.sampled_from(["floorperson", "supervisor", "technician"])),
        data.draw(st.sampled_from(sorted(VERBS))),
    )
    for name in data.draw(st.lists(st.sampled_from([*FIELDS, "extra"]), max_size=3)):
        if data.draw(st.booleans()):
            cmd.pop(name, None)
        else:
            cmd[name] = data.draw(JSONISH)
    result = fuzz_gate.check(str(cmd.get("verb"))[:40], json.dumps(cmd).encode(), NOW)
    assert isinstance(result, Accepted | Rejected)


@FUZZ
@given(data=st.data())
def test_a_changed_byte_never_makes_a_different_command_acceptable(
    fuzz_gate: CommandGate, keys: dict[str, Key], data: st.DataObject
) -> None:
    cmd = signed(keys, "supervisor", "verify_deck", args={"deck": "A", "note": "n"})
    payload = bytearray(json.dumps(cmd, separators=(",", ":")).encode())
    i = data.draw(st.integers(0, len(payload) - 1))
    payload[i] = data.draw(st.integers(0, 255).filter(lambda b: b != payload[i]))
    result = fuzz_gate.check("verify_deck", bytes(payload), NOW)
    if isinstance(result, Accepted):
        # Only a change the parser reads back as the same command can pass (e.g. the unused low bits of the
        # signature's last base64 digit), and it is then that very command, carried out once at most.
        same = {k: v for k, v in cmd.items() if k != "signature"}
        assert result.command.model_dump(mode="json", exclude={"signature", "issued_at"}) == {
            k: v for k, v in same.items() if k != "issued_at"
        }


# -- the log's rate limit ----------------------------------------------------------------------------------------


def test_rejection_log_lines_are_rate_limited_and_say_how_many_were_held_back() -> None:
    now = [0.0]
    limit = RateLimit(burst=3, window=60.0, clock=lambda: now[0])
    assert [limit.allow() for _ in range(5)] == [0, 0, 0, None, None]
    now[0] = 61.0
    assert limit.allow() == 2  # the first line of the new window says two were not logged
    assert limit.allow() == 0


# -- lone surrogates, depth, the batch's replay records (issue 12, items 4-5) -------------------------------------

SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()) | SURROGATES, max_size=12)


def _journalable(r: Rejected) -> None:
    """What the listener does with a rejection: the event's payload as the journal stores it (UTF-8 JSON) and
    the reply as it is published."""
    json.dumps(r.payload(), ensure_ascii=False).encode("utf-8")
    CommandReply(
        command_id=r.command_id, table_id=TABLE, verb=r.verb, outcome="rejected", reason=r.reason, code=r.code, ts=NOW
    ).model_dump_json()


@FUZZ
@given(data=st.data())
def test_any_text_in_any_field_gets_a_rejection_that_can_be_journaled_and_sent(
    fuzz_gate: CommandGate, keys: dict[str, Key], data: st.DataObject
) -> None:
    cmd: dict[str, Any] = signed(keys)
    for name in data.draw(st.lists(st.sampled_from([*FIELDS, "extra"]), min_size=1, max_size=3)):
        cmd[name] = data.draw(ANY_TEXT | st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=2))
    result = fuzz_gate.check("close_table", json.dumps(cmd).encode(), NOW)
    if isinstance(result, Rejected):  # else what was drawn was the command's own value
        _journalable(result)


@pytest.mark.parametrize("field", ["command_id", "verb", "key_id", "nonce", "args", "signature"])
def test_a_lone_surrogate_anywhere_is_refused_and_named_as_its_escape(
    gate: CommandGate, keys: dict[str, Key], field: str
) -> None:
    good = signed(keys)
    value: Any = {"note": "\ud800"} if field == "args" else "\ud800"
    result = gate.check("close_table", raw({**good, field: value}), NOW)
    assert isinstance(result, Rejected) and result.code == "not_json"
    assert "lone UTF-16 surrogate" in result.reason and "args.note" if field == "args" else field in result.reason
    expected_id = "\\ud800" if field == "command_id" else good["command_id"]
    assert (result.command_id, result.key_id) == (expected_id, "\\ud800" if field == "key_id" else "super-bob")
    _journalable(result)


def test_a_surrogate_pair_is_a_character_and_signs_like_any_other(gate: CommandGate, keys: dict[str, Key]) -> None:
    cmd = signed(keys, "floorperson", "verify_deck", args={"note": "deck \U0001f0a1"})
    result = gate.check("verify_deck", json.dumps(cmd).encode(), NOW)  # ensure_ascii: sent as \ud83c\udca1
    assert isinstance(result, Accepted)


def test_json_deeper_than_any_command_is_refused_before_it_is_walked(gate: CommandGate, keys: dict[str, Key]) -> None:
    note: Any = "x"
    for _ in range(MAX_DEPTH):
        note = {"n": note}
    result = gate.check("close_table", raw(signed(keys, args={"note": note})), NOW)
    assert isinstance(result, Rejected) and result.code == "not_json"
    assert f"more than {MAX_DEPTH} levels deep" in result.reason and "args.note.n" in result.reason
    deep = gate.check("close_table", b"[" * 8000 + b"]" * 8000, NOW)
    assert isinstance(deep, Rejected) and deep.code == "not_json" and "nested too deeply" in deep.reason


def test_a_batch_commits_its_replay_records_once_and_none_when_one_fails(tmp_path: Path, keys: dict[str, Key]) -> None:
    path = tmp_path / "journal.sqlite"
    gate = make_gate(path, keys)
    other = ReplayStore(path, TABLE)  # another connection to the same file
    with gate.store.batch():
        assert isinstance(gate.check("close_table", raw(signed(keys)), NOW), Accepted)
        assert isinstance(gate.check("close_table", raw(signed(keys)), NOW), Accepted)
        assert other.count() == 0  # nothing committed before the batch ends
    assert other.count() == 2
    # A record that cannot be made (here: another writer holds the lock) fails the whole batch.
    other._require().execute("BEGIN IMMEDIATE")
    gate.store._require().execute("PRAGMA busy_timeout = 0")
    with (
        pytest.raises(ReplayStoreError, match="database is locked"),
        gate.store.batch(),
        pytest.raises(sqlite3.OperationalError),
    ):
        gate.check("close_table", raw(signed(keys)), NOW)
    other._require().execute("ROLLBACK")
    assert other.count() == 2
