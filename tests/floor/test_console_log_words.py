"""The table page's live log (`#tv-log`) in a real headless Chromium draws the words the console's view makes
(floor/console/views.py log_line): a restart after a stop on purpose says the stop (it read like a crash's), and a
rejected command and an ignored input say why. The events are the real engine's (tests/engine's pure table: betting
open, stopped by SIGTERM, restarted; a fault cleared that the shoe does not hold) and the command gate's own
rejection (controller/supervisor/gate.py), archived by the floor's writer in a real PostgreSQL cluster and heard by
a console on a loopback port."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from controller.core.events import DomainEvent
from controller.engine.inputs import MarkOutOfOrder, Recover, StopRecord, Tick
from controller.store import snapshot
from controller.supervisor.gate import Rejected
from drivers.interfaces import DeviceFaultCleared, DeviceOffline
from floor.messages import Incoming
from tests.engine.covers import shoe_table
from tests.engine.mississippi_table import make
from tests.floor.archiving import events_published, msg
from tests.floor.chromium import chromium, page_errors
from tests.floor.marked_table import TABLE, Archiver, Page, birth, first_console

pytestmark = [pytest.mark.floor, pytest.mark.browser]
WHY = "the key's role (floorperson) may not use mark_out_of_order"


def said() -> list[Incoming]:
    t = make()
    t.state = snapshot.decode(snapshot.encode(t.state))
    t.feed(Recover(after_stop=StopRecord(40, "SIGTERM")))
    t.feed(DeviceFaultCleared("shoe", code="jam"))
    rejected = DomainEvent("command.rejected", None, Rejected("role_not_allowed", WHY, "c0ffee", "mark_out_of_order",
                                                             "fp-1").payload())  # fmt: skip
    published = events_published(TABLE, [*t.events, rejected], date(2026, 11, 27))
    parsed = [msg(m) for m in published]
    return [m for m in parsed if isinstance(m, Incoming)]


def test_the_table_s_live_log_says_the_stop_a_restart_follows_and_why_nothing_was_done(
    archiver: Archiver, floor_dsn: str
) -> None:
    with chromium("1400,1000", {"browser": "ALL"}) as browser:
        page = Page(browser)
        with first_console(page, archiver, floor_dsn, [birth(), *said()]):
            page.open_table(TABLE)
            recovered = page.text('#tv-log li[data-type="table.recovered"] span:nth-child(4)')
            assert recovered.endswith("after the stop at seq 40 (SIGTERM)"), recovered
            ignored = page.text('#tv-log li[data-type="input.ignored"] span:nth-child(4)')
            assert ignored.startswith("fault jam cleared by the shoe ignored in betting: "), ignored
            rejected = page.text('#tv-log li[data-type="command.rejected"] span:nth-child(4)')
            assert rejected == f"mark_out_of_order rejected (role_not_allowed): {WHY}"
            assert page_errors(browser) == []


COVERED = "nm-cover"


def covered_and_restarted() -> list[Incoming]:
    """655a's automated-shoe table falling back to the hand, its shoe covered in betting ("no more bets" refused,
    .9(a)(1)), stopped by SIGTERM and started again."""
    t = shoe_table("655a")
    t.feed(MarkOutOfOrder("shoe"))
    t.state = snapshot.decode(snapshot.encode(t.state))
    t.feed(Recover(after_stop=StopRecord(40, "SIGTERM")))
    parsed = [msg(m) for m in events_published(COVERED, list(t.events), date(2026, 11, 27))]
    return [m for m in parsed if isinstance(m, Incoming)]


def test_the_table_s_live_log_says_no_more_bets_refused_at_the_restart_and_what_lifts_it(
    archiver: Archiver, floor_dsn: str
) -> None:
    """remedy26: the restart's line says the refusal pending and its remedy, each way on cited, in words."""
    with chromium("1400,1000", {"browser": "ALL"}) as browser:
        page = Page(browser)
        with first_console(page, archiver, floor_dsn, [birth(COVERED, "automated_shoe"), *covered_and_restarted()]):
            page.open_table(COVERED)
            recovered = page.text('#tv-log li[data-type="table.recovered"] span:nth-child(4)')
            said = recovered.split('after the stop at seq 40 (SIGTERM), "no more bets" refused (655a.9(a)(1)) until: ')
            assert len(said) == 2, recovered
            assert said[1].startswith("put the shoe back in service (655a.13(g); the deck is in it"), said[1]
            assert "a floorperson directs a reshuffle (655a.5(a))" in said[1], said[1]
            assert page_errors(browser) == []


UNANSWERING = "nm-offline"
OFFLINE_WHY = (
    "the shoe is offline (port gone) since 2026-11-27 10:41:07 UTC: reconnect it so that it identifies again, or leave "
    "it covered"
)


def covered_shoe_offline() -> list[Incoming]:
    """655a's automated-shoe table falling back to the hand, its shoe covered, then offline: back_in_service refused."""
    t = shoe_table("655a")
    t.feed(MarkOutOfOrder("shoe"))
    t.feed(Tick(datetime(2026, 11, 27, 10, 41, 7, tzinfo=UTC)))
    t.feed(DeviceOffline("shoe", reason="port gone"))
    t.feed(MarkOutOfOrder("shoe", out=False))
    parsed = [msg(m) for m in events_published(UNANSWERING, list(t.events), date(2026, 11, 27))]
    return [m for m in parsed if isinstance(m, Incoming)]


def test_the_table_s_live_log_says_why_a_shoe_not_answering_is_not_put_back_in_service(
    archiver: Archiver, floor_dsn: str
) -> None:
    """back26: the refusal's line says the reason, since when and what to do, and cites 13(g)."""
    with chromium("1400,1000", {"browser": "ALL"}) as browser:
        page = Page(browser)
        with first_console(page, archiver, floor_dsn, [birth(UNANSWERING, "automated_shoe"), *covered_shoe_offline()]):
            page.open_table(UNANSWERING)
            refused = page.text('#tv-log li[data-type="input.refused"] span:nth-child(4)')
            assert refused == f"back in service shoe refused in betting: {OFFLINE_WHY}", refused
            rule = page.text('#tv-log li[data-type="input.refused"] span.rule')
            assert rule == "[655a.13(g)]", rule
            assert page_errors(browser) == []
