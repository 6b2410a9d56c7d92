"""A floor service whose broker keeps no session for it, and a console session reading its event stream: shared by
tests/floor/test_session_lost.py and test_session_ack.py (a test module imports no other test module)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import aiohttp
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from floor.config import FloorConfig, parse_floor_config
from floor.console.auth import login_bytes
from floor.console.floor_alerts import SESSION_GROUP
from floor.service import FloorService
from tests.broker import Mosquitto, fresh_id
from tests.floor.event_stream import Stream
from tests.floor.outage_table import publish

KEY = Ed25519PrivateKey.generate()
FLOOR_KEY = Ed25519PrivateKey.generate()  # a floorperson's, for what only a supervisor may do


async def log_in(http: aiohttp.ClientSession, url: str, key_id: str = "sue.sup") -> str:
    """A signed log-in of `key_id` in `http`'s cookie jar; its CSRF token."""
    h, key = {"Origin": url}, KEY if key_id == "sue.sup" else FLOOR_KEY
    c = await (await http.post(f"{url}/api/login/challenge", json={"key_id": key_id}, headers=h)).json()
    sig = base64.b64encode(key.sign(login_bytes(c["challenge"], key_id, url))).decode()
    body = {"key_id": key_id, "challenge": c["challenge"], "signature": sig}
    assert (await http.post(f"{url}/api/login", json=body, headers=h)).status == 200
    return str((await (await http.get(f"{url}/api/session")).json())["csrf"])


async def logged_in_stream(http: aiohttp.ClientSession, url: str) -> Stream:
    await log_in(http, url)
    return Stream(await http.get(f"{url}/api/stream"))


def names(table: str) -> Any:
    return lambda u: any(table in a["args"]["tables"] for a in u.get("alerts", {}).get(SESSION_GROUP, []))


def floor_config(dsn: str, broker: str, prefix: str, extra: str = "") -> FloorConfig:
    """A floor with its console, a supervisor and a floorperson on a private broker; `extra`: more TOML sections."""
    return parse_floor_config(
        f'[database]\ndsn = "{dsn}"\n[mqtt]\nbroker = "{broker}"\nprefix = "{prefix}"\n'
        f'client_id = "{fresh_id("floor")}"\n{extra}[console]\nlisten = "127.0.0.1:0"\n'
        f'[[console.supervisors]]\nkey_id = "sue.sup"\nrole = "supervisor"\npublic_key = "{public_key_b64(KEY)}"\n'
        f'[[console.supervisors]]\nkey_id = "fay.floor"\nrole = "floorperson"\n'
        f'public_key = "{public_key_b64(FLOOR_KEY)}"\n'
    )


async def lose_session(service: FloorService, broker: Mosquitto, prefix: str, table: str, seqs: range) -> None:
    """The broker restarted without persistence under the floor; `seqs` published before the floor is back, so they
    reach no one. Held in the floor's loop from the broker's start to the publish (no sleep decides the order)."""
    broker.stop()
    async with asyncio.timeout(30):
        while service.mqtt_up:  # noqa: ASYNC110 (the service has no event for it)
            await asyncio.sleep(0.05)
    before = service.generation
    broker.start()
    publish(broker.port, prefix, table, seqs)
    assert service.generation == before, "the floor reconnected before the outage's events: not the case"
