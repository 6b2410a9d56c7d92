"""While the floor cannot reach its broker, every page is told so, with since when and why; and told again when the
floor has its broker back. Before, the page said "live" (its own link to the console was up) while every tile froze
as last heard, and the broker's wills called every table lost: nothing told "the floor is cut off" from "every table
went down at once".

Real parts: `tablectl floor`'s service (FloorService) with its console on a loopback port, a real PostgreSQL, a
private mosquitto stopped and started again under it, the event stream read over HTTP as a browser reads it after a
log-in signed with a key of FLOOR.toml's [[console.supervisors]]."""

from __future__ import annotations

import base64

import aiohttp
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from floor.config import parse_floor_config
from floor.console.auth import login_bytes
from floor.service import FloorService
from tests.broker import fresh_id, own_mosquitto
from tests.floor.event_stream import Stream
from tests.floor.service_running import running

pytestmark = [pytest.mark.floor]
KEY = Ed25519PrivateKey.generate()


async def test_every_page_is_told_while_the_floor_has_lost_its_broker(floor_dsn: str) -> None:
    with own_mosquitto() as broker:
        config = parse_floor_config(
            f'[database]\ndsn = "{floor_dsn}"\n[mqtt]\nbroker = "{broker.url}"\nprefix = "{fresh_id("lost")}"\n'
            f'client_id = "{fresh_id("floor")}"\n[console]\nlisten = "127.0.0.1:0"\n'
            f'[[console.supervisors]]\nkey_id = "sue.sup"\nrole = "supervisor"\npublic_key = "{public_key_b64(KEY)}"\n'
        )
        service = FloorService(config)
        async with running(service, console=True):
            assert service.console is not None
            url = service.console.url.rstrip("/")
            async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
                h = {"Origin": url}
                c = await (await http.post(f"{url}/api/login/challenge", json={"key_id": "sue.sup"}, headers=h)).json()
                sig = base64.b64encode(KEY.sign(login_bytes(c["challenge"], "sue.sup", url))).decode()
                body = {"key_id": "sue.sup", "challenge": c["challenge"], "signature": sig}
                assert (await http.post(f"{url}/api/login", json=body, headers=h)).status == 200
                stream = Stream(await http.get(f"{url}/api/stream"))
                floor = await stream.next_where("floor", lambda f: True)
                assert floor.get("broker_lost", "absent") is None, floor.get("broker_lost", "absent")

                broker.stop()
                lost = await stream.next_where("update", lambda u: u.get("broker_lost") is not None)
                assert lost["broker_lost"]["error"], lost
                since = lost["broker_lost"]["since"]
                # A page that connects now gets it with the whole floor.
                late = Stream(await http.get(f"{url}/api/stream"))
                again = await late.next_where("floor", lambda f: True)
                assert again["broker_lost"]["since"] == since, again["broker_lost"]

                broker.start()
                back = await stream.next_where("update", lambda u: "broker_lost" in u, within=60)
                assert back["broker_lost"] is None, back
