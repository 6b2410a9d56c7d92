"""Relaying a signed command to its table: the envelope's bytes as the browser sent them, on the topic
`tablectl command send` uses, and the table's reply (docs/commands.md).

The floor neither signs nor judges: the table checks the signature, role, freshness and replay (its CommandGate),
so a console that relayed a forged or changed envelope would only get a rejection. A connection of its own per
command (clean session, a fresh client id): the archive's persistent session stays for archiving.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import uuid
from typing import Any

import aiomqtt

from floor.config import FloorConfig, read_secret


async def relay_command(
    config: FloorConfig,
    table_id: str,
    verb: str,
    raw: bytes,
    envelope: dict[str, Any],
    within: float,
    *,
    base: str | None = None,
) -> dict[str, Any]:
    """The table's reply (as it published it), or {"outcome": "no_reply", "reason": why}. `base` addresses
    another command desk than the table's (a link's `<prefix>/link/<link_id>/cmd`)."""
    m = config.mqtt
    address = m.address
    base = base or f"{m.prefix}/{table_id}/cmd"
    tls = None
    if address.tls:
        tls = aiomqtt.TLSParameters(ca_certs=str(m.ca_file) if m.ca_file else None, cert_reqs=ssl.CERT_REQUIRED)
    try:
        async with asyncio.timeout(within):
            async with aiomqtt.Client(
                address.host,
                address.port,
                identifier=f"tablectl-console-{uuid.uuid4().hex[:12]}",
                username=m.username,
                password=read_secret(m.password_file, "mqtt.password_file"),
                tls_params=tls,
                timeout=min(within, 10.0),
            ) as client:
                # Subscribed (SUBACK) before publishing, so the reply cannot come before we listen.
                await client.subscribe(f"{base}/reply", qos=1)
                await client.publish(f"{base}/{verb}", raw, qos=1)
                async for message in client.messages:
                    try:
                        reply = json.loads(
                            bytes(message.payload)
                            if isinstance(message.payload, bytes | bytearray)
                            else str(message.payload)
                        )
                    except (TypeError, ValueError, RecursionError):  # not a reply: the table's comes with the id
                        continue
                    if isinstance(reply, dict) and reply.get("command_id") == envelope.get("command_id"):
                        return reply
    except TimeoutError:
        return {
            "outcome": "no_reply",
            "reason": f"no reply from {table_id} within {within:g} s: is it running? The command may still be "
            "carried out; it cannot be carried out twice",
        }
    except aiomqtt.MqttError as err:
        return {"outcome": "no_reply", "reason": f"the broker cannot be reached: {err}"}
    return {"outcome": "no_reply", "reason": "the broker closed the connection"}
