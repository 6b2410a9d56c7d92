"""A reader of the console's event stream (/api/stream): the link's console test reads it (tests/floor/
test_console_links.py), and so does the resend's end-to-end test (test_resend_e2e.py). Shared here, so that neither
test module imports the other."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp


class Stream:
    """The console's server-sent events as a browser receives them."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next_where(self, name: str, ok: Any, within: float = 30.0) -> dict[str, Any]:
        async with asyncio.timeout(within):
            event, data = "", ""
            while True:
                line = (await self.response.content.readline()).decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
                elif line == "" and event:
                    got = json.loads(data)
                    if event == name and ok(got):
                        return dict(got)
                    event, data = "", ""
