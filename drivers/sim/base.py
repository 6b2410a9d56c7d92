"""Common machinery of the simulated devices: pty, link, identify/ping, outbound queue."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from typing import Any

import structlog

from drivers.link import Link, LinkError
from drivers.protocol import HOST_ADDRESS, ProtocolError, decode_message
from drivers.sim.pty import PtyEndpoint
from drivers.tasks import cancel_and_wait

log = structlog.get_logger(__name__)

FIRMWARE = "1.0.0-sim"


class SimDevice:
    """A simulated device speaking reference protocol v1 on the master side of a real pty."""

    model = "SIM"

    def __init__(self, device_id: str, address: int = 1) -> None:
        self.device_id = device_id
        self.address = address
        self._endpoint: PtyEndpoint | None = None
        self._link: Link | None = None
        self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None

    @property
    def port(self) -> str:
        if self._endpoint is None:
            raise RuntimeError(f"simulator {self.device_id} is not started")
        return self._endpoint.path

    @property
    def identity(self) -> dict[str, str]:
        return {
            "model": self.model,
            "serial": self.device_id,
            "firmware": FIRMWARE,
            "firmware_hash": hashlib.sha256(f"{self.model}/{FIRMWARE}".encode()).hexdigest(),
        }

    async def start(self) -> None:
        self._endpoint = PtyEndpoint()
        self._link = Link(
            self._endpoint,
            self._endpoint,
            local_address=self.address,
            peer_address=HOST_ADDRESS,
            on_data=self._on_data,
            name=f"sim:{self.device_id}",
        )
        self._link.start()
        self._sender = asyncio.get_running_loop().create_task(
            self._send_loop(), name=f"sim-send:{self.device_id}"
        )

    async def stop(self) -> None:
        await cancel_and_wait(self._sender)
        self._sender = None
        if self._link is not None:
            await self._link.close()
            self._link = None
        if self._endpoint is not None:
            self._endpoint.close()

    async def send(self, message: Mapping[str, Any]) -> None:
        """Send one event now and wait for the host's ACK (raises LinkError if none comes)."""
        if self._link is None:
            raise RuntimeError(f"simulator {self.device_id} is not started")
        await self._link.send(message)

    def reply(self, message: dict[str, Any]) -> None:
        """Queue an answer to a command; answers leave in order after the command's ACK."""
        self._outbox.put_nowait(message)

    async def hang(self) -> None:
        """Fault injection: stop answering (no ACKs, no events) while the port stays plugged in."""
        await cancel_and_wait(self._sender)
        if self._link is not None:
            await self._link.close("hung by fault injection", close_transport=False)

    def inject_garbage(self, data: bytes) -> None:
        """Write raw bytes into the line between frames (line-noise fault injection)."""
        if self._endpoint is not None:
            self._endpoint.write(data)

    async def _send_loop(self) -> None:
        while True:
            message = await self._outbox.get()
            try:
                await self.send(message)
            except LinkError as exc:
                log.warning("simulator reply not acknowledged", device=self.device_id, error=str(exc))
            except Exception:
                log.exception("simulator reply failed", device=self.device_id, message=message)

    def _on_data(self, payload: bytes) -> None:
        try:
            message = decode_message(payload)
        except ProtocolError as exc:
            self.reply({"evt": "fault", "code": "bad_command", "detail": str(exc)})
            return
        command = message.get("cmd")
        if command == "identify":
            self.reply({"evt": "identity", **self.identity})
        elif command == "ping":
            self.reply({"evt": "pong"})
        else:
            try:
                handled = self.handle(str(command), message)
            except (TypeError, ValueError, KeyError) as exc:
                self.reply({"evt": "fault", "code": "bad_command", "detail": f"{command}: {exc}"})
                return
            if not handled:
                self.reply({"evt": "fault", "code": "bad_command", "detail": f"unknown command {command!r}"})

    def handle(self, command: str, message: Mapping[str, Any]) -> bool:
        """Handle a device-specific command; False if this device does not know it."""
        return False
