"""The engine's side of supervisor commands, pure and synchronous: a signed input journals who commanded it in
the same step as what it did; tilts are acknowledged (block stays) and cleared (block goes, play resumes);
a jackpot validation is answered with input.ignored until the progressive meters exist."""

from __future__ import annotations

from controller.engine.inputs import (
    AcknowledgeTilt,
    ClearTilt,
    Input,
    MarkOutOfOrder,
    OpenTable,
    Signed,
    ValidateJackpot,
)
from controller.engine.round import RoundEngine
from controller.engine.state import Phase, TableState
from controller.engine.tilts import is_tilt
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from tests.engine.conftest import PureTable

RULES = MississippiStudRules.model_validate({"chapter": "655a"})
CID = "0" * 31 + "1"


def table(blocks: dict[str, str] | None = None) -> PureTable:
    """An open table; `blocks` are present when it opens (as another part raises critical_state at start)."""
    engine = RoundEngine(MississippiStudSpec(), RULES)
    t = PureTable(engine, TableState("t1", blocks=dict(blocks or {})))
    t.feed(OpenTable())
    return t


def signed(inp: Input, verb: str, key_id: str = "super-bob", role: str = "supervisor") -> Signed:
    return Signed(inp, CID, verb, key_id, role)


def test_a_signed_input_is_journaled_with_its_signer_before_what_it_did() -> None:
    t = table()
    assert t.state.phase is Phase.BETTING
    out = t.feed(signed(MarkOutOfOrder("shuffler"), "mark_out_of_order", "tech-cy", "technician"))
    assert [(e.type, e.rule) for e in out][:2] == [("command.accepted", None), ("device.out_of_order", "655a.13(g)")]
    assert dict(out[0].payload) == {
        "command_id": CID,
        "verb": "mark_out_of_order",
        "key_id": "tech-cy",
        "role": "technician",
    }
    assert t.state.out_of_order == {"shuffler": "manual shuffle and cut"}


def test_the_out_of_order_mark_says_what_655a_13_g_says_not_who_it_does_not_name() -> None:
    """655a.13(g): the device "shall be covered or have a sign indicating that [it] is out of order placed on the
    device"; the chapter names no dealer, and the mark comes from a technician's signed command: the event's reason
    is the regulation's words and the signer is named by command.accepted, not guessed."""
    t = table()
    out = t.feed(signed(MarkOutOfOrder("shoe"), "mark_out_of_order", "tech-cy", "technician"))
    marked = next(e for e in out if e.type == "device.out_of_order")
    assert marked.rule == "655a.13(g)"
    assert marked.payload["reason"] == "covered or has a sign indicating that it is out of order placed on the device"
    assert "dealer" not in str(marked.payload)
    assert (out[0].payload["key_id"], out[0].payload["role"]) == ("tech-cy", "technician")


def test_a_signed_input_the_phase_does_not_allow_is_still_recorded_as_accepted() -> None:
    t = table()
    out = t.feed(signed(MarkOutOfOrder("shoe", out=False), "back_in_service"))
    assert [e.type for e in out] == ["command.accepted", "input.ignored"]
    assert out[1].payload["reason"] == "it is not marked out of order"


def test_critical_state_tilt_is_acknowledged_then_cleared_and_play_resumes() -> None:
    t = table({"critical_state": "stored round state failed validation: seq 41 missing"})
    assert t.state.phase is Phase.BLOCKED and t.types()[-1] == "table.blocked"

    ack = t.feed(
        signed(
            AcknowledgeTilt("critical_state", "floor-ann", "floorperson"),
            "acknowledge_tilt",
            "floor-ann",
            "floorperson",
        )
    )
    assert [e.type for e in ack] == ["command.accepted", "tilt.acknowledged"]
    assert dict(ack[1].payload) == {
        "tilt": "critical_state",
        "by": "floor-ann",
        "role": "floorperson",
        "reason": "stored round state failed validation: seq 41 missing",
        "remedy": "a supervisor clears the tilt",
    }
    assert t.state.phase is Phase.BLOCKED and "critical_state" in t.state.blocks

    cleared = t.feed(
        signed(ClearTilt("critical_state", "super-bob", "supervisor", "restored from backup"), "clear_tilt")
    )
    assert [e.type for e in cleared][:4] == [
        "command.accepted",
        "tilt.cleared",
        "table.block_cleared",
        "shuffle.started",
    ]
    assert cleared[1].payload["note"] == "restored from backup"
    assert cleared[2].payload["by"] == "supervisor super-bob" and cleared[2].payload["remaining"] == {}
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is Phase.BETTING and t.state.blocks == {}  # type: ignore[comparison-overlap]


def test_other_tilts_are_named_tilt_colon_something() -> None:
    assert is_tilt("critical_state") and is_tilt("tilt:journal")
    assert not is_tilt("tilt:") and not is_tilt("deck_removed") and not is_tilt("device:shoe")
    t = table({"tilt:journal": "journal fsync failed", "critical_state": "bad meters"})
    out = t.feed(ClearTilt("tilt:journal", "super-bob", "supervisor"))
    assert [e.type for e in out] == ["tilt.cleared", "table.block_cleared", "table.blocked"]
    assert t.state.blocks == {"critical_state": "bad meters"} and t.state.phase is Phase.BLOCKED


def test_a_block_with_a_remedy_of_its_own_is_not_cleared_as_a_tilt() -> None:
    t = table({"deck_removed": "shuffler counted 51 cards; a new deck must be verified"})
    out = t.feed(ClearTilt("deck_removed", "super-bob", "supervisor"))
    assert [e.type for e in out] == ["input.refused"]
    assert "'deck_removed' is not a tilt" in out[0].payload["reason"]
    assert "deck_removed" in t.state.blocks


def test_a_tilt_that_is_not_raised_is_ignored() -> None:
    t = table({"tilt:sign": "progressive sign silent"})
    out = t.feed(AcknowledgeTilt("critical_state", "floor-ann", "floorperson"))
    assert [e.type for e in out] == ["input.ignored"]
    assert out[0].payload["reason"] == "no tilt 'critical_state' is raised (raised: tilt:sign)"


def test_validating_a_jackpot_that_does_not_await_validation_is_refused() -> None:
    t = table()
    out = t.feed(
        signed(
            ValidateJackpot(3, "mega", "e17", "floor-ann", "floorperson"),
            "validate_jackpot",
            "floor-ann",
            "floorperson",
        )
    )
    assert [e.type for e in out] == ["command.accepted", "input.refused"]
    assert out[1].payload["reason"] == "no jackpot 'e17' awaits validation (awaiting: none)"


def test_a_signed_input_inside_another_is_not_carried_out() -> None:
    t = table()
    out = t.feed(signed(signed(MarkOutOfOrder("shuffler"), "mark_out_of_order"), "mark_out_of_order"))
    assert [e.type for e in out] == ["command.accepted", "input.ignored"]
    assert t.state.out_of_order == {}
