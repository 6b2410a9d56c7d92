"""What a supervisor sees of rounds and links without reloading (a real browser: Debian's headless Chromium, against
`tablectl floor` with its console, a real PostgreSQL and a real mosquitto).

- A table view left open shows each round as it finishes: before, its recent rounds were read once, when the view
  opened, and a round finished after appeared only on reload.
- The table's tile shows its last finished round: number, wagered, paid out, result in dollars, each seat's hand.
- A link's panel offers only the verb the link would take in its state: open_link while closed, close_link while
  open (link/commands.py refuses the other); before, both were offered whatever the state.

The table and the link are this test's MQTT client, publishing events and the link's retained state as they do
(controller/mqtt/contract.py, link/protocol.py): the floor cannot tell.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from floor.console.plumbing import COOKIE
from link import protocol
from tests.broker import Mosquitto, fresh_id
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.conftest import console_floor, wait_for
from tests.floor.console_login import log_in

pytestmark = [pytest.mark.floor, pytest.mark.e2e, pytest.mark.browser]
TABLE = "live-1"


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1400,1000", {"browser": "ALL"}) as driver:
        yield driver


class Round:
    """A Mississippi Stud round's events as the table publishes them (docs/events.md), numbered on from `seq`."""

    def __init__(self, no: int, seq: int) -> None:
        self.no, self.seq, self.round_id = no, seq, f"{TABLE}-r{no}"

    def event(self, type_: str, rule: str, payload: dict[str, Any]) -> str:
        self.seq += 1
        return json.dumps(
            {"event_id": f"{self.round_id}-{self.seq}", "boot_id": "b", "seq": self.seq,
             "ts": f"2026-11-27T12:{self.no:02d}:{self.seq % 60:02d}.000000Z", "table_id": TABLE,
             "round_id": self.round_id, "type": type_, "rule": rule, "payload": payload}
        )  # fmt: skip

    def events(self, ante: int, paid: int) -> list[str]:
        won = {"outcome": "win", "returned": ante, "collected": 0} if paid else {"outcome": "lose", "collected": ante}
        wagers = [{"wager": "ante", "amount": ante, "odds": "1 to 1", "paid": paid, "returned": 0, **won}]
        settled = {"seat": 1, "cards": ["KS", "KH", "2C"], "community": [], "hand": "pair of kings"}
        kept = ante - paid if not paid else 0  # what the table collected: the ante of a losing hand
        done = {"round_no": self.no, "players": 1, "paid": paid, "collected": kept, "table_result": kept - paid}
        return [
            self.event("betting.opened", "655a.7(c)", {"round_no": self.no, "seats": [1]}),
            self.event("no_more_bets", "655a.10(a)(2)", {"players": [1], "wagers": {"1": {"ante": ante}}}),
            self.event("hand.settled", "655a.11(h)(3)", {**settled, "wagers": wagers, "paid": paid}),
            self.event("round.completed", "655a.11(j)", done),
        ]


def link_state(status: str, seq: int) -> str:
    return protocol.LinkState(
        link_id="mega", status=status, tilt=None, database="up", seq=seq,
        tables={TABLE: protocol.TableLease(asset_number="T-1", leased=True)},
    ).model_dump_json()  # fmt: skip


def test_rounds_finish_live_in_the_open_view_and_on_the_tile_and_the_link_offers_what_applies(
    browser: Any, mosquitto: Mosquitto, pg_cluster: Any, tmp_path: Path
) -> None:
    import paho.mqtt.client as paho
    from paho.mqtt.enums import CallbackAPIVersion
    from selenium.webdriver.common.by import By

    prefix = fresh_id("liverounds")
    dsn = pg_cluster.create_database("console_live_rounds")
    floor, port = console_floor(tmp_path, dsn, mosquitto.url, prefix)
    origin = f"http://127.0.0.1:{port}"
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"table-{prefix}")
    client.connect(mosquitto.host, mosquitto.port)
    client.loop_start()
    wait = waiting(browser, 60)

    def publish(topic: str, bodies: list[str], retain: bool = False) -> None:
        for body in bodies:
            client.publish(f"{prefix}/{topic}", body, qos=1, retain=retain).wait_for_publish(10)

    def rounds() -> list[str]:
        return [e.get_attribute("data-round") for e in browser.find_elements(By.CSS_SELECTOR, "#tv-rounds .round")]

    tile = f'.tile[data-table="{TABLE}"]'
    panel = '.link-panel[data-link="mega"]'
    try:
        wait_for(lambda: "console at http://" in floor.log(), 60, f"the console; floor log:\n{floor.log()}")
        wait_for(lambda: "subscribed to the tables" in floor.log(), 30, "the floor's subscription")
        first = Round(1, 0)
        publish(f"{TABLE}/event", first.events(500, 500))
        publish("link/mega/state", [link_state("closed", 1)], retain=True)
        token = log_in(origin, dsn)  # a supervisor: the link's verbs are a supervisor's
        browser.execute_cdp_cmd("Network.setCookie", {"name": COOKIE, "value": token, "url": origin + "/"})
        browser.get(origin + "/")
        wait.until(lambda d: d.find_element(By.ID, "conn").text == "live")
        last = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f"{tile} .last-round"))
        assert last.text == (
            "last round 1: wagered $5.00, paid out $5.00, table result -$5.00\nseat 1: pair of kings"
        ), last.text

        # The link closed: open_link is offered, close_link is not; once it is open, the other way round.
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'{panel} button[data-verb="open_link"]'))
        assert not browser.find_elements(By.CSS_SELECTOR, f'{panel} button[data-verb="close_link"]')
        publish("link/mega/state", [link_state("open", 2)], retain=True)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'{panel} button[data-verb="close_link"]'))
        assert not browser.find_elements(By.CSS_SELECTOR, f'{panel} button[data-verb="open_link"]')
        publish("link/mega/state", [link_state("tilted", 3)], retain=True)  # cleared by its alert's button
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f"{panel} .link-status").get_attribute("data-status")
                   == "tilted")  # fmt: skip
        assert not browser.find_elements(By.CSS_SELECTOR, f"{panel} .link-actions button")

        # The view open: rounds 2 and 3 finish and come first in its recent rounds, without a reload.
        browser.find_element(By.CSS_SELECTOR, tile).click()
        wait.until(lambda d: rounds() == [f"{TABLE}-r1"])
        second = Round(2, first.seq)
        publish(f"{TABLE}/event", second.events(1000, 0))
        wait.until(lambda d: rounds() == [f"{TABLE}-r2", f"{TABLE}-r1"])
        third = Round(3, second.seq)
        publish(f"{TABLE}/event", third.events(2500, 2500))
        wait.until(lambda d: rounds() == [f"{TABLE}-r3", f"{TABLE}-r2", f"{TABLE}-r1"])
        newest = browser.find_element(By.CSS_SELECTOR, f'#tv-rounds .round[data-round="{TABLE}-r3"]').text
        assert "completed" in newest and "pair of kings" in newest and "ante $25.00 win paid $25.00" in newest, newest
        browser.save_screenshot(str(tmp_path / "live-rounds.png"))
        browser.find_element(By.ID, "tv-close").click()
        last = browser.find_element(By.CSS_SELECTOR, f"{tile} .last-round")
        assert last.text.startswith("last round 3: wagered $25.00, paid out $25.00"), last.text
        browser.save_screenshot(str(tmp_path / "tile-last-round.png"))
        assert page_errors(browser) == []
    finally:
        client.loop_stop()
        client.disconnect()
        floor.stop()
        print(floor.log()[-3000:])
