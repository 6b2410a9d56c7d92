"""The floor console in a real browser (issue 17, "done when"): Debian's Chromium, headless, driven by Selenium
through chromium-driver, against `tablectl floor` (its console on a loopback port), a real PostgreSQL, a real
mosquitto and a real table process (tests/floor/console_table.py).

A supervisor enrols a key made in the browser (WebCrypto Ed25519, non-extractable, in IndexedDB), the
administrator approves it with `tablectl floor console approve`, the table's config lists its [[supervisors]]
entry; the supervisor logs in by signing a challenge, watches a round complete, sees a jackpot pending on the tile,
validates it (the table pays it and reseeds the meter), clears a tilt and marks the shuffler out of order (the
table's dealing method changes). Every byte the browser received (each response body, each server-sent event) is
scanned for card identities before their round's settlement. Screenshots go to the test's temp dir, or to docs/console/
when TABLECTL_SCREENSHOTS=docs (how the docs' pictures are refreshed), so a test run leaves the checkout clean.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller.config.keys import decode_public_key
from controller.supervisor.envelope import canonical_bytes
from tests.broker import Mosquitto, fresh_id
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.conftest import console_floor, table_config, wait_for
from tests.mqtt.conftest import card_tokens, is_settlement
from tests.tablectl_runs import tablectl

pytestmark = [pytest.mark.floor, pytest.mark.e2e, pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
DOCS_SHOTS = ROOT / "docs" / "console"


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1400,1000", {"performance": "ALL", "browser": "ALL"}) as driver:
        driver.execute_cdp_cmd("Network.enable", {})
        yield driver


class Received:
    """Every body the browser received, in order, from Chromium's network log (CDP)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.bodies: list[tuple[str, str]] = []

    def collect(self) -> None:
        for entry in self.driver.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            params = msg.get("params", {})
            if msg["method"] == "Network.eventSourceMessageReceived":
                self.bodies.append((f"sse {params.get('eventName')}", params.get("data", "")))
            elif msg["method"] == "Network.loadingFinished":
                try:
                    got = self.driver.execute_cdp_cmd("Network.getResponseBody", {"requestId": params["requestId"]})
                except Exception:  # the stream itself, or a body the browser dropped: SSE messages are above
                    continue
                self.bodies.append((f"response {params['requestId']}", got.get("body", "")))


def card_leaks(bodies: list[tuple[str, str]]) -> list[str]:
    """Card identities in a body before the body (or an earlier one) showed that round's settlement."""
    settled: set[str] = set()
    leaks = []

    def rounds(value: object) -> Iterator[tuple[str, str]]:
        if isinstance(value, dict):
            if isinstance(value.get("round_id"), str) and isinstance(value.get("type"), str):
                yield value["round_id"], value["type"]
            for v in value.values():
                yield from rounds(v)
        elif isinstance(value, list):
            for v in value:
                yield from rounds(v)

    def scan(value: object, where: str, context: str | None) -> None:
        if isinstance(value, dict):
            context = value["round_id"] if isinstance(value.get("round_id"), str) else context
            for k, v in value.items():
                # The log-in's CSRF token is random base64url: "-5d-" in it is no card (it failed a CI run).
                if k != "csrf":
                    scan(v, f"{where}.{k}", context)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                scan(v, f"{where}[{i}]", context)
        elif isinstance(value, str) and context not in settled:
            for _, card in card_tokens(value):
                leaks.append(f"{where}: card {card!r} of round {context!r} before its settlement")

    for name, body in bodies:
        try:
            value = json.loads(body)
        except ValueError:
            # a page, script or style: no card may appear in it at all
            leaks += [f"{name}: {card!r}" for _, card in card_tokens(body)]
            continue
        settled |= {rid for rid, t in rounds(value) if is_settlement(t)}
        scan(value, name, None)
    return leaks


def test_enrol_log_in_watch_validate_clear_and_switch(
    browser: Any, mosquitto: Mosquitto, pg_cluster: Any, tmp_path: Path
) -> None:
    """The console shows the major meter back at its $1,000 reseed once the hit is paid (655a.12(c)(3)), and the dealing
    method the table switched to once the shuffler is marked out of order (655a.13(g))."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    shots = DOCS_SHOTS if os.environ.get("TABLECTL_SCREENSHOTS") == "docs" else tmp_path
    prefix = fresh_id("console")
    dsn = pg_cluster.create_database("console_browser")
    floor, port = console_floor(tmp_path, dsn, mosquitto.url, prefix)
    table: subprocess.Popen[bytes] | None = None

    # The tiles are drawn again at each update: an element found a moment ago may be gone; look again.
    wait = waiting(browser, 60)

    def text(css: str) -> str:
        return str(wait.until(lambda d: d.find_element(By.CSS_SELECTOR, css).text))

    def click(css: str) -> None:
        wait.until(lambda d: d.execute_script("document.querySelector(arguments[0]).click(); return true;", css))

    received = Received(browser)
    try:
        wait_for(lambda: "console at http://" in floor.log(), 60, f"the console; floor log:\n{floor.log()}")
        wait_for(lambda: "subscribed to the tables" in floor.log(), 30, "the floor's subscription")
        url = f"http://127.0.0.1:{port}/"
        browser.get(url)

        # Enrol: the key is made in this browser; the page shows the [[supervisors]] entry.
        wait.until(ec.visibility_of_element_located((By.ID, "enrol-key-id"))).send_keys("ann.sup")
        browser.find_element(By.ID, "enrol-role").send_keys("supervisor")
        browser.find_element(By.ID, "enrol-button").click()
        entry = wait.until(ec.visibility_of_element_located((By.ID, "entry"))).text
        assert 'key_id = "ann.sup"' in entry and 'role = "supervisor"' in entry
        public = re.search(r'public_key = "([A-Za-z0-9+/=]{44})"', entry)
        assert public is not None, entry
        # Non-extractable: the browser itself refuses to export the private key.
        refused = browser.execute_async_script(
            "const done = arguments[0]; indexedDB.open('tablectl-console').onsuccess = (e) => {"
            " e.target.result.transaction('keys').objectStore('keys').get('me').onsuccess = async (r) => {"
            " const k = r.target.result.privateKey; try { await crypto.subtle.exportKey('pkcs8', k);"
            " done('exported'); } catch (err) { done(k.extractable + ' ' + err.name); } }; };"
        )
        assert refused == "false InvalidAccessError"
        browser.save_screenshot(str(shots / "enrol.png"))

        # Not approved yet: log-in is refused, and says how to approve.
        browser.find_element(By.ID, "login-button").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "key-error"), "console approve ann.sup"))
        approve = tablectl("floor", "--config", floor.config, "console", "approve", "ann.sup")
        assert approve.returncode == 0, approve.stderr
        assert "approved as supervisor" in approve.stdout

        # The table obeys the key once its config lists the entry (the administrator's step).
        tconf = table_config("con-ms-1", "demo.toml", prefix, tmp_path)
        tconf.write_text(tconf.read_text() + "\n" + entry)
        browser.find_element(By.ID, "login-button").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "whoami"), "ann.sup (supervisor)"))
        table = subprocess.Popen(
            [sys.executable, str(Path(__file__).parent / "console_table.py"), str(tconf), str(tmp_path / "t.sqlite"),
             mosquitto.url, "40"],
            stdout=(floor.logs / "table.log").open("wb"), stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip

        # A round completes: the tile counts it, and the table's live log shows it with its rule.
        tile = '.tile[data-table="con-ms-1"]'
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, f"{tile} .rounds"), "1 round"))

        # Round 2: the jackpot is pending on the tile and on top of the alerts.
        wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, f"{tile} .jackpot")))
        assert "seat 3 major" in text(f"{tile} .jackpot")
        # The round is held for the validation: the tile says so, whatever the other seats' settlements said.
        assert text(f"{tile} .phase") == "jackpot pending"
        alert = '.alert[data-kind="jackpot"][data-table="con-ms-1"]'
        browser.save_screenshot(str(shots / "floor-jackpot.png"))
        click(f'{alert} button[data-verb="validate_jackpot"]')
        assert "Validate the progressive payout" in browser.find_element(By.ID, "confirm-text").text
        assert browser.find_element(By.ID, "confirm-rule").text == "655a.11(i)(1)(iii)"
        browser.find_element(By.ID, "confirm-ok").click()
        wait.until(lambda d: d.find_element(By.ID, "reply").get_attribute("data-outcome") == "applied")
        wait.until(ec.invisibility_of_element_located((By.CSS_SELECTOR, f"{tile} .jackpot")))
        # Paid and reseeded: the major meter is back at its $1,000 seed (655a.12(c)(3)).
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, f"{tile} .meters"), "major $1,000.00"))

        # The tilt raised after round 2: cleared by the supervisor.
        tilt = '.alert[data-kind="tilt"][data-table="con-ms-1"]'
        wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, tilt)))
        click(f'{tilt} button[data-verb="clear_tilt"]')
        assert "Clear the tilt" in browser.find_element(By.ID, "confirm-text").text
        browser.find_element(By.ID, "confirm-ok").click()
        wait.until(lambda d: d.find_element(By.ID, "reply").get_attribute("data-outcome") == "applied")
        wait.until(ec.invisibility_of_element_located((By.CSS_SELECTOR, tilt)))

        # The table view: live log with rules, devices, recent rounds from the archive; mark the shuffler out of order.
        before = text(f"{tile} .method")
        assert before == "automated_shoe, shuffler"
        click(tile)
        wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, '#tv-log li[data-type="round.completed"]')))
        wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#tv-rounds .round")))
        assert browser.find_elements(By.CSS_SELECTOR, '#tv-devices tr[data-device="shuffler"]')
        click('#tv-actions button[data-verb="mark_out_of_order"]')
        assert "13(g)" in browser.find_element(By.ID, "confirm-rule").text
        browser.find_element(By.ID, "confirm-ok").click()
        wait.until(lambda d: d.find_element(By.ID, "reply").get_attribute("data-outcome") == "applied")
        wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, '#tv-log li[data-type="device.out_of_order"]')))
        browser.save_screenshot(str(shots / "table.png"))
        browser.find_element(By.ID, "tv-close").click()
        # The shuffler covered, the dealer shuffles by hand and cuts (655a.13(g)); the shoe still deals.
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, f"{tile} .method"), "manual shuffle"))
        browser.save_screenshot(str(shots / "floor.png"))

        received.collect()
        assert page_errors(browser) == []
        assert len(received.bodies) > 20
        assert card_leaks(received.bodies) == []
        # The scan sees cards where they may be: the settled rounds the table view recalled.
        assert any(True for _, body in received.bodies for _ in card_tokens(body))

        # The browser signs the very bytes `tablectl command send` signs: its canonical form of an envelope with
        # awkward text equals controller.supervisor.envelope.canonical_bytes, and its signature verifies there.
        env = browser.execute_async_script(
            r"""const done = arguments[0]; window.tablectlConsole.envelope("con-ms-1", "verify_deck",
              {note: 'caf\u00e9 \u2028 "q" \\ \n \u0001 \u{1F0A1}', deck: "A"})
              .then((e) => { const u = {...e}; delete u.signature;
                             done([e, window.tablectlConsole.canonical(u)]); });"""
        )
        body, js_canonical = env
        assert js_canonical.encode() == canonical_bytes(body)
        public_key = decode_public_key(public.group(1))
        public_key.verify(base64.b64decode(body["signature"]), canonical_bytes(body))
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", body["issued_at"])

        # Every log-in and action is in the archive's audit, with the table's reply.
        with psycopg.connect(dsn) as conn:
            audit = conn.execute("SELECT action, outcome, verb FROM console_audit ORDER BY id").fetchall()
        assert ("login", "refused", None) in audit and ("login", "accepted", None) in audit
        assert [a for a in audit if a[0] == "command"] == [
            ("command", "applied", "validate_jackpot"),
            ("command", "applied", "clear_tilt"),
            ("command", "applied", "mark_out_of_order"),
        ]
    finally:
        if table is not None:
            table.kill()
            table.wait()
        floor.stop()
        print(floor.log()[-3000:])


def test_a_linked_jackpot_on_every_linked_tile_validated_through_the_link(
    browser: Any, mosquitto: Mosquitto, pg_cluster: Any, tmp_path: Path
) -> None:
    """The link's retained topics are published by this test as `tablectl link` publishes them (the controller is
    tested in tests/link/); the test also answers on the link's command topic as the link's CommandDesk does, after
    checking the relayed envelope's signature with the key the browser enrolled."""
    import threading

    import paho.mqtt.client as paho
    from paho.mqtt.enums import CallbackAPIVersion
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    from controller.mqtt.contract import SupervisorCommand
    from controller.supervisor.envelope import loads, signature_problem
    from link import protocol

    prefix = fresh_id("linkui")
    dsn = pg_cluster.create_database("console_link")
    floor, port = console_floor(tmp_path, dsn, mosquitto.url, prefix, "demo_approve_all = true\n")
    wait = waiting(browser, 60)
    base = f"{prefix}/link/mega"
    public: dict[str, str] = {}
    relayed: list[dict[str, Any]] = []
    answered = threading.Event()
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"link-desk-{prefix}")

    def publish(topic: str, body: str, retain: bool = False) -> None:
        client.publish(topic, body, qos=1, retain=retain).wait_for_publish(10)

    def desk(c: paho.Client, userdata: object, msg: paho.MQTTMessage) -> None:
        obj = loads(msg.payload.decode())
        cmd = SupervisorCommand.model_validate(obj)
        problem = signature_problem(obj, cmd, decode_public_key(public["key"]))
        relayed.append(obj)
        if problem is None:
            c.publish(f"{base}/jackpot", protocol.PendingJackpots(link_id="mega", pending=[]).model_dump_json(),
                      qos=1, retain=True)  # fmt: skip
        reply = {"command_id": cmd.command_id, "verb": cmd.verb, "accepted": problem is None,
                 "code": "done" if problem is None else "bad_signature", "reason": problem}  # fmt: skip
        c.publish(f"{base}/cmd/reply", json.dumps(reply), qos=1)
        answered.set()

    client.on_message = desk
    client.connect("127.0.0.1", mosquitto.port)
    client.loop_start()
    try:
        wait_for(lambda: "console at http://" in floor.log(), 60, f"the console; floor log:\n{floor.log()}")
        wait_for(lambda: "subscribed to the tables" in floor.log(), 30, "the floor's subscription")
        client.subscribe(f"{base}/cmd/validate_jackpot", qos=1)
        for n, table in enumerate(("lk-1", "lk-2", "lk-3"), start=1):
            publish(f"{prefix}/{table}/event", json.dumps({
                "event_id": f"e{n}", "boot_id": "b", "seq": 1, "ts": "2026-11-26T12:00:00.000000Z", "table_id": table,
                "round_id": f"{table}-r1", "type": "betting.opened", "rule": "655a.6", "payload": {}}))  # fmt: skip
        browser.get(f"http://127.0.0.1:{port}/")
        wait.until(ec.visibility_of_element_located((By.ID, "enrol-key-id"))).send_keys("lin.floor")
        browser.find_element(By.ID, "enrol-role").send_keys("floorperson")
        browser.find_element(By.ID, "enrol-button").click()
        entry = wait.until(ec.visibility_of_element_located((By.ID, "entry"))).text
        found = re.search(r'public_key = "([A-Za-z0-9+/=]{44})"', entry)
        assert found is not None
        public["key"] = found.group(1)
        browser.find_element(By.ID, "login-button").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "whoami"), "lin.floor (floorperson)"))
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".tile")) == 3)
        # A tile not touched by what follows stays the same node: the page patches tiles, it does not redraw.
        browser.execute_script("document.querySelector('.tile[data-table=\"lk-3\"]').dataset.mark = 'kept';")

        # What the link refused, as a link that took junk on its request topic says it (the panel's refusals line).
        refusals = protocol.LinkRefusals(
            total=3, counts={"request_malformed": 2, "command bad_signature": 1}, last_kind="request_malformed",
            last_at="2026-11-26T12:00:01+00:00", last_topic=f"{prefix}/link/mega/request/lk-9",
            last_reason="Invalid JSON: expected value at line 1 column 1",
        )  # fmt: skip
        state = protocol.LinkState(
            link_id="mega", status="open", tilt=None, database="up", seq=41,
            tables={"lk-1": protocol.TableLease(asset_number="T-1001", leased=True),
                    "lk-2": protocol.TableLease(asset_number="T-1002", leased=False)},
            refusals=refusals,
        )  # fmt: skip
        publish(f"{base}/state", state.model_dump_json(), retain=True)
        meter = protocol.LinkMeter(link_id="mega", level="mega", display_cents=5_012_345, seq=41)
        publish(f"{base}/progressive/mega", meter.model_dump_json(), retain=True)
        # As a link with [link] jackpot_meter_after publishes it: the meter after the hit is on the panel's line.
        hit = protocol.HitOut(table_id="lk-2", asset_number="T-1002", round_id="lk-2-r7", seat=5, level="mega",
                              order=41, amount_cents=5_230_000, meter_before_cents=5_230_000,
                              meter_after_cents=1_234_500)  # fmt: skip
        publish(f"{base}/jackpot", protocol.PendingJackpots(link_id="mega", pending=[hit]).model_dump_json(), True)

        panel = '.link-panel[data-link="mega"]'
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, f'{panel} li[data-level="mega"]'), "$50,123.45"))
        assert "open" in browser.find_element(By.CSS_SELECTOR, f"{panel} .link-status").text
        assert browser.find_element(By.CSS_SELECTOR, f'{panel} tr[data-table="lk-2"]').get_attribute(
            "data-leased") == "false"  # fmt: skip
        for table in ("lk-1", "lk-2"):  # the pending hit on every linked tile
            css = f'.tile[data-table="{table}"] .jackpot.linked'
            wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), "lk-2 seat 5 mega $52,300.00"))
        assert not browser.find_elements(By.CSS_SELECTOR, '.tile[data-table="lk-3"] .jackpot')
        pending = browser.find_element(By.CSS_SELECTOR, f'{panel} .jackpot[data-order="41"]').text
        assert pending.endswith("(win #41), meter after $12,345.00"), pending
        healthy = browser.find_element(By.CSS_SELECTOR, '.tile[data-table="lk-1"] .link').get_attribute("class")
        unleased = browser.find_element(By.CSS_SELECTOR, '.tile[data-table="lk-2"] .link')
        assert healthy == "link ok" and "no lease" in unleased.text and unleased.get_attribute("class") == "link bad"
        first = browser.find_element(By.CSS_SELECTOR, "#alerts li:first-child")
        assert first.get_attribute("data-kind") == "link_jackpot" and first.get_attribute("data-target-id") == "mega"
        assert "the meter after it $12,345.00" in first.text, first.text
        assert browser.execute_script("return document.querySelector('.tile[data-table=\"lk-3\"]').dataset.mark;") == (
            "kept"
        )
        line = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, f"{panel} .link-refused"))).text
        assert line.startswith("3 refused (") and "request_malformed 2" in line and "lk-9" in line, line
        browser.save_screenshot(str(tmp_path / "floor-linked.png"))
        if os.environ.get("TABLECTL_SCREENSHOTS") == "docs":
            browser.save_screenshot(str(DOCS_SHOTS / "floor-linked.png"))

        # Validate through the link: signed here with the enrolled key, relayed untouched, judged by the link.
        browser.execute_script(
            "document.querySelector('#alerts li:first-child button[data-verb=\"validate_jackpot\"]').click();"
        )
        assert "Validate the linked hit" in browser.find_element(By.ID, "confirm-text").text
        assert "on link mega" in browser.find_element(By.ID, "confirm-text").text
        browser.find_element(By.ID, "confirm-ok").click()
        wait.until(lambda d: d.find_element(By.ID, "reply").get_attribute("data-outcome") == "applied")
        assert answered.is_set() and len(relayed) == 1
        assert relayed[0]["table_id"] == "mega" and relayed[0]["key_id"] == "lin.floor"
        assert relayed[0]["args"] == {"table_id": "lk-2", "round_id": "lk-2-r7", "seat": 5, "level": "mega"}
        wait.until(ec.invisibility_of_element_located((By.CSS_SELECTOR, ".tile .jackpot.linked")))
        assert not browser.find_elements(By.CSS_SELECTOR, '#alerts li[data-kind="link_jackpot"]')
        # A floorperson sees no link verbs but the validation: opening and closing the link is a supervisor's.
        assert not browser.find_elements(By.CSS_SELECTOR, f'{panel} button[data-verb="close_link"]')
        with psycopg.connect(dsn) as conn:
            audit = conn.execute("SELECT table_id, verb, outcome FROM console_audit WHERE action = 'command'")
            assert audit.fetchall() == [("link:mega", "validate_jackpot", "applied")]
        assert page_errors(browser) == []
    finally:
        client.loop_stop()
        client.disconnect()
        floor.stop()
        print(floor.log()[-3000:])
