"""bench/event_latency.py --sims-process: the simulated devices and people in a process of their own.

The child (this script, run by ChildPeople) opens the seven-seat table's simulators on ptys, prints their ports as
one JSON line, and plays the people as bench/footprint.py does: they follow the table's events over MQTT, as anyone
on the floor can, and act on the simulators. It stops when the table closes or its stdin does. The measuring process
runs the controller (drivers, service, journal writer, publisher) with nothing else on its loop but a listener that
closes the table once the last round is under way, as the simulated dealer does in the in-process mode
(controller.people.floor).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
from collections.abc import Coroutine
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiomqtt
import benchlib
from footprint import people

from controller.engine.inputs import CloseTable
from controller.shell.logs import configure_logging
from controller.shell.service import TableService
from drivers.sim.table import SimulatedTable


async def serve(url: str, table_id: str, seed: int, pace: float) -> None:
    """The child: simulators and people until the table closes or stdin does."""
    config = benchlib.seven_seat_config(table_id)
    host, port = url.removeprefix("mqtt://").rsplit(":", 1)
    rng = random.Random(seed)
    async with (
        SimulatedTable(config.game.seats, rng) as sims,
        aiomqtt.Client(host, int(port), identifier=f"bench-people-{config.table_id}") as mqtt,
    ):
        # Subscribed before the ports are out: the table cannot open before the people listen.
        await mqtt.subscribe(f"tablectl/{config.table_id}/event", qos=1)
        floor, events = people(config, sims, rng, pace)
        print(json.dumps(dict(sims.ports)), flush=True)
        players = asyncio.create_task(floor.run())
        follow = asyncio.create_task(_follow(mqtt, events))
        eof = asyncio.create_task(_stdin_closed())
        await asyncio.wait((players, follow, eof), return_when=asyncio.FIRST_COMPLETED)
        for task in (players, follow, eof):
            task.cancel()
        await asyncio.gather(players, follow, eof, return_exceptions=True)


async def _follow(mqtt: aiomqtt.Client, events: asyncio.Queue[Any]) -> None:
    async for msg in mqtt.messages:
        body = json.loads(bytes(msg.payload))
        events.put_nowait(SimpleNamespace(type=body["type"], payload=body["payload"], sealed=None))


async def _stdin_closed() -> None:
    await asyncio.to_thread(sys.stdin.buffer.read)


class ChildPeople:
    """The parent's handle on the child: its ports once it listens; closing its stdin stops it."""

    def __init__(self, url: str, table_id: str, seed: int, pace: float) -> None:
        self.args = [sys.executable, str(Path(__file__).resolve()), "--serve", url, "--table-id", table_id]
        self.args += ["--seed", str(seed), "--pace", str(pace)]
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> dict[str, str]:
        self.proc = await asyncio.create_subprocess_exec(
            *self.args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        assert self.proc.stdout is not None
        async with asyncio.timeout(30):
            line = await self.proc.stdout.readline()
        if not line:
            raise SystemExit("bench: the simulators' process ended before it listened")
        return {str(k): str(v) for k, v in json.loads(line).items()}

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                async with asyncio.timeout(10):
                    await self.proc.wait()
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


def closer(rounds: int) -> Any:
    """The runner's companion in the measuring process: closes the table once the last round is under way (what the
    simulated dealer does in the in-process mode, controller.people.floor) and shows progress."""

    def companions(service: TableService) -> list[Coroutine[Any, Any, None]]:
        events = service.subscribe("bench-closer", "lossless")

        async def watch() -> None:
            started = 0
            while True:
                ev = await events.get()
                if ev.type == "betting.opened":
                    started += 1
                elif ev.type == "no_more_bets" and started >= rounds:
                    service.submit(CloseTable())
                elif ev.type == "round.completed" and int(ev.payload["round_no"]) % 5 == 0:
                    benchlib.progress(f"{ev.payload['round_no']}/{rounds} rounds")

        return [watch()]

    return companions


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", required=True, help="the broker's URL")
    ap.add_argument("--table-id", required=True, help="the measured table's id (its event topic)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pace", type=float, default=0.0)
    args = ap.parse_args()
    configure_logging(json=False, level="warning")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.serve, args.table_id, args.seed, args.pace))
    return 0


if __name__ == "__main__":
    sys.exit(main())
