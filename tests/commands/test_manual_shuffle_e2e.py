"""End to end: a technician marks the shuffler out of order by a signed command over the real broker, and the
table keeps playing: the simulated dealer shuffles by hand and presses "shuffled" on the dealer panel, whose
press travels the real pty and the reference dealer-panel driver (655a.5(c)(2), (d), .13(g)); with the shuffler
out the stub is counted, keyed on the panel (655a.8(f), .10(d)-(e)). Only the people are simulated."""

from __future__ import annotations

import pytest

from tests.commands.conftest import DaemonFactory, Key, MakeTableConfig, SupervisorFactory

pytestmark = pytest.mark.e2e


async def test_shuffler_out_of_order_the_dealer_shuffles_by_hand_and_the_table_plays_on(
    daemon_factory: DaemonFactory,
    supervisor_factory: SupervisorFactory,
    keys: dict[str, Key],
    table_config: MakeTableConfig,
    unique_id: str,
) -> None:
    prefix = f"panel-{unique_id}"
    config = table_config(unique_id, prefix, keys)
    sup = supervisor_factory(prefix, unique_id)
    tech, boss = keys["technician"], keys["supervisor"]

    async with daemon_factory(config) as table:
        first = await table.wait_for(lambda e: e.type == "round.completed", what="a first round on the shuffler")
        assert any(e.type == "shuffle.started" and e.payload["device"] == "shuffler" for e in table.events)

        reply = await sup.send(tech.sign(unique_id, "mark_out_of_order", args={"device": "shuffler"}))
        assert reply["outcome"] == "applied", reply
        # The command's own effect comes first after `command.accepted`; when the mark lands mid-shuffle the step
        # also asks for the manual shuffle at once, after it.
        marked = next(e for e in map(table.by_seq, reply["event_seqs"]) if e.type != "command.accepted")
        assert (marked.type, marked.rule, marked.payload["device"]) == ("device.out_of_order", "655a.13(g)", "shuffler")
        assert marked.payload["takes_over"] == "manual shuffle and cut"

        # The manual shuffle is asked for, and the dealer's "shuffled" on the panel completes it.
        asked = await table.wait_for(
            lambda e: e.type == "shuffle.started" and e.payload["device"] == "manual",
            after=marked.seq,
            what="a manual shuffle asked for",
        )
        done = await table.wait_for(
            lambda e: e.type == "shuffle.completed",
            after=asked.seq,
            what="the dealer's manual shuffle confirmed from the panel",
        )
        assert (done.rule, done.payload["device"], done.payload["cut"]) == ("655a.5(c)(2)", "manual", "655a.5(d)")
        assert done.payload["card_count"] is None  # nobody counted the cards: the stub will be counted

        # The table plays on: the stub count comes due (every 5 rounds of the deck without a counting shuffler),
        # the dealer keys it on the panel, and it makes 52.
        counted = await table.wait_for(
            lambda e: e.type in ("stub.counted", "stub_count.mismatch"),
            after=marked.seq,
            what="a stub count keyed on the panel",
        )
        assert (counted.type, counted.rule) == ("stub.counted", "655a.10(e)")
        later = await table.wait_for(
            lambda e: e.type == "round.completed" and e.payload["round_no"] >= first.payload["round_no"] + 6,
            after=counted.seq,
            what="rounds played after the stub count",
        )

        after = [e for e in table.events if marked.seq < e.seq <= later.seq]
        assert not [e for e in after if e.type == "shuffle.started" and e.payload["device"] == "shuffler"]
        manual = [e for e in after if e.type == "shuffle.completed"]
        assert manual and all(e.payload["device"] == "manual" for e in manual)
        # Every round opened after the manual shuffle was asked for began with one, confirmed by the dealer (a round
        # whose stations were being unlocked when the mark came plays the deck the shuffler had already shuffled).
        opened = [e for e in after if e.type == "betting.opened" and e.seq > asked.seq]
        assert len(manual) == len(opened) >= 5
        assert not [e for e in after if e.type in ("input.refused", "round.voided", "table.blocked")]

        reply = await sup.send(boss.sign(unique_id, "close_table"))
        assert reply["outcome"] == "applied"
        assert await table.stopped() >= 7
