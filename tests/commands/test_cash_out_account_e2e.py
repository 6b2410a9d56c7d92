"""`cash_out_account` at a real table (run_table in this process: simulated terminals and devices on real ptys, a real
journal file, a real mosquitto, signed commands): a player whose terminal went offline is paid by an attendant on a
floorperson's authority (605a.2(d)(1)), exactly once across restarts, including one between the authorisation (the
command recorded as seen) and the payout (the engine's step); the terminal, back, shows the zero balance and its own
cash-out pays nothing. Nobody deals here (the table waits in betting), so every movement is the test's."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import CommandSettings, Supervisor, TableConfig
from controller.core.events import JournaledEvent
from controller.supervisor.gate import Accepted, CommandGate
from controller.supervisor.replay import ReplayStore
from tests.commands.conftest import Daemon, DaemonFactory, Key, MakeTableConfig, SupervisorFactory
from tests.commands.gate_inputs import raw

pytestmark = pytest.mark.e2e

RULE = "605a.2(d)(1)"
SEAT = 2


def terminal_table(table_config: MakeTableConfig, table_id: str, prefix: str, keys: dict[str, Key]) -> TableConfig:
    """The commands' demo table offering the Five Card Hand Bonus, a wager terminal at each seat (655a.7(d)(5))."""
    base = table_config(table_id, prefix, keys, five_card_hand_bonus=True, five_card_hand_bonus_wager_cents=100)
    data = base.model_dump()
    seats = data["game"]["seats"]
    data["devices"]["wager_terminals"] = [
        {"driver": "reference-wager-terminal", "port": "simulated", "seat": n} for n in range(1, seats + 1)
    ]
    return TableConfig.model_validate(data)


def of(table: Daemon, kind: str) -> list[JournaledEvent]:
    return [e for e in table.events if e.type == kind]


async def ready(table: Daemon) -> None:
    await table.wait_for(lambda e: e.type == "betting.opened", what="betting open")


async def test_an_offline_terminals_account_is_paid_once_across_a_crash_between_authorisation_and_payout(
    daemon_factory: DaemonFactory,
    supervisor_factory: SupervisorFactory,
    keys: dict[str, Key],
    table_config: MakeTableConfig,
    unique_id: str,
    tmp_path: Path,
) -> None:
    prefix = f"cashout-{unique_id}"
    config = terminal_table(table_config, unique_id, prefix, keys)
    journal = tmp_path / "journal.sqlite"
    sup = supervisor_factory(prefix, unique_id)
    floor, tech = keys["floorperson"], keys["technician"]
    args: dict[str, Any] = {"seat": SEAT, "reason": "terminal 2 offline since 21:40 (ticket TR-118)"}

    # 1. The player buys in at the terminal; the terminal then goes dark.
    async with daemon_factory(config, journal, terminals=True, dealer=False) as table:
        await ready(table)
        assert table.sims is not None
        terminal = table.sims.terminals[SEAT]
        await terminal.buy_in(7_500, "cash")
        await table.wait_for(lambda e: e.type == "account.requested", what="the buy-in asked for")
        await terminal.dealer_confirm("buy_in")
        bought = await table.wait_for(lambda e: e.type == "account.bought_in", what="the buy-in")
        assert bought.payload["balance"] == 7_500
        await terminal.unplug()
        await table.wait_for(
            lambda e: e.type == "device.offline" and e.payload["device_id"] == f"wager_terminal_{SEAT}",
            bought.seq,
            "the terminal offline",
        )
        # The technician who will repair the terminal may not pay the player.
        refused = await sup.send(tech.sign(unique_id, "cash_out_account", args=args))
        assert (refused["outcome"], refused["code"]) == ("rejected", "role_not_allowed")

    # 2. The crash between the authorisation and the payout: the command verified and recorded as seen (the gate's
    # fsync'd record comes first, docs/commands.md), the daemon dead before it stepped the engine. Nothing was paid.
    lost = floor.sign(unique_id, "cash_out_account", args=args)
    sups = [Supervisor.model_validate(keys[r].entry()) for r in ("floorperson", "supervisor", "technician")]
    gate = CommandGate(unique_id, sups, CommandSettings(), ReplayStore(journal, unique_id))
    assert isinstance(gate.check("cash_out_account", raw(lost), datetime.now(UTC)), Accepted)

    async with daemon_factory(config, journal, terminals=True, dealer=False) as table:
        await ready(table)
        again = await sup.send(lost)  # the floorperson, with no reply, sends the same command again
        assert (again["outcome"], again["code"]) == ("rejected", "replayed")
        assert not of(table, "account.cashed_out")
        command = floor.sign(unique_id, "cash_out_account", args=args)
        paid = await sup.send(command)
        assert paid["outcome"] == "applied", paid
        accepted, cashed = (table.by_seq(s) for s in paid["event_seqs"])
        assert (accepted.type, accepted.payload["key_id"], accepted.payload["verb"]) == (
            "command.accepted",
            "floor-ann",
            "cash_out_account",
        )
        assert (cashed.type, cashed.rule) == ("account.cashed_out", RULE)
        assert {k: cashed.payload[k] for k in ("seat", "amount", "balance", "paid_by", "authorised_by", "reason")} == {
            "seat": SEAT,
            "amount": 7_500,
            "balance": 0,
            "paid_by": "attendant",
            "authorised_by": "floor-ann",
            "reason": args["reason"],
        }
        assert cashed.payload["totals"]["cashed_out"] == 7_500

    # 3. Restarted after the payout (its reply may never have reached the floorperson): the same command again is a
    # replay, a new one finds nothing to pay, and the terminal (plugged in again) shows the zero balance; asked
    # there, the cash-out pays nothing.
    async with daemon_factory(config, journal, terminals=True, dealer=False) as table:
        await ready(table)
        assert table.service is not None and table.sims is not None
        assert table.service.state.accounts.cashed_out == 7_500 and table.service.state.accounts.balance(SEAT) == 0
        replayed = await sup.send(command)
        assert (replayed["outcome"], replayed["code"]) == ("rejected", "replayed")
        anew = await sup.send(floor.sign(unique_id, "cash_out_account", args=args))
        assert anew["outcome"] == "ignored" and "empty" in str(anew["reason"]), anew
        terminal = table.sims.terminals[SEAT]
        await terminal.cash_out("chips")
        asked = await table.wait_for(lambda e: e.type == "account.request_refused", what="the terminal's cash-out")
        assert asked.payload["reason"] == "the game account is empty"
        # Shown at the restart and with the refusal: never anything but the zero balance.
        assert terminal.shown and {balance for balance, _ in terminal.shown} == {0}
        assert not of(table, "account.cashed_out") and table.service.state.accounts.cashed_out == 7_500
