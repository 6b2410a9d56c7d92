"""A multi-drop line's start: from the wager-bus driver's start to its seven stations online, on one paced line.

Measured, per trial: the reference wager-bus driver (in this process) starts every seat at once, as the controller
does, against a WagerBusSim on a real pty paced at 115200 baud; the clock stops when the last station is online. The
line is tapped both ways, so the run also says what crossed it: the bytes on each pair and their wire time, and the
frames on the stations' shared return pair (where the identities queue one after another) by kind, and how often the
host sent `identify` again (a station's ACK past its timeout; docs/protocol.md section 2, "Identify a few stations at
a time").

Baseline: the same start with the host kept to protocol 1 (`protocol = 1`: an identify that offers nothing, every
identity in v1 JSON), run alternately with the default (v3: the identity in v3, its firmware_hash as 32 bytes;
docs/protocol.md section 10, "Negotiation" rule 2) in the same process. Issue 19: the bus's extra time to READY.

    .venv/bin/python bench/bus_start.py [--trials 10] [--stations 7]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import Counter

import benchlib

from controller.shell.logs import configure_logging
from drivers.interfaces import WAGER_BUS_ID, DeviceEvent, DeviceOnline
from drivers.reference.framing import FrameParser, Kind, ProtocolError, decode_message
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.registry import create_driver
from drivers.sim.line import LineTiming
from drivers.sim.wager_bus import WagerBusSim


def _command(payload: bytes) -> str | None:
    try:
        cmd = decode_message(payload).get("cmd")
    except ProtocolError:
        return None
    return cmd if isinstance(cmd, str) else None


async def one_start(stations: int, protocol: int) -> tuple[float, dict[bool, int], Counter[str], int]:
    """(seconds to every station online, bytes each way {from_host: n}, the return pair's frames by kind, version, the
    identify frames the host sent)."""
    sim = WagerBusSim("bench_bus", addresses={seat: seat for seat in range(1, stations + 1)}, timing=LineTiming())
    await sim.start()
    assert sim._endpoint is not None
    sent = {True: 0, False: 0}
    back, forth = FrameParser(), FrameParser()
    frames: Counter[str] = Counter()
    identifies = [0]

    def tap(from_host: bool, data: bytes) -> None:
        sent[from_host] += len(data)
        if from_host:
            # The host's identifies: one per station, any more was a resend (its ACK came past the host's timeout).
            for frame in forth.feed(data):
                if frame.kind == Kind.DATA and _command(frame.payload) == "identify":
                    identifies[0] += 1
        else:
            for frame in back.feed(data):
                size = "identity" if frame.kind == Kind.DATA else frame.kind.name
                frames[f"{size} v{frame.version}"] += 1

    sim._endpoint.tap = tap
    driver = create_driver(
        WAGER_BUS_ID,
        {
            "driver": "reference-wager-bus",
            "port": sim.port,
            "stations": [{"seat": seat, "address": seat} for seat in range(1, stations + 1)],
            "heartbeat_interval": 0,
            "protocol": protocol,
        },
    )
    assert isinstance(driver, ReferenceWagerBus)
    online: set[str] = set()
    everyone = asyncio.Event()

    def sink(event: DeviceEvent) -> None:
        if isinstance(event, DeviceOnline):
            online.add(event.device_id)
            if len(online) == stations:
                everyone.set()

    try:
        start = time.monotonic()
        await asyncio.gather(*(s.start(sink) for s in driver.stations.values()))
        async with asyncio.timeout(10):
            await everyone.wait()
        elapsed = time.monotonic() - start
    finally:
        await asyncio.gather(*(s.stop() for s in driver.stations.values()))
        await sim.stop()
    return elapsed, sent, frames, identifies[0]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--stations", type=int, default=7)
    args = ap.parse_args()
    configure_logging(json=False, level="warning")  # the figures are the output; logs only if something fails
    print(f"machine: {benchlib.machine()}")
    wire = LineTiming()
    results: dict[int, list[float]] = {1: [], 3: []}
    resent: dict[int, list[int]] = {1: [], 3: []}
    seen: dict[int, tuple[dict[bool, int], Counter[str]]] = {}
    for trial in range(args.trials):
        for protocol in (1, 3):  # alternately: the load of a shared machine falls on both alike
            elapsed, sent, frames, identified = await one_start(args.stations, protocol)
            results[protocol].append(elapsed)
            resent[protocol].append(identified - args.stations)
            seen[protocol] = (sent, frames)
        benchlib.progress(
            f"trial {trial + 1}/{args.trials}: v1 {results[1][-1] * 1e3:.1f} ms, v3 {results[3][-1] * 1e3:.1f} ms"
        )
    for protocol, label in ((1, "baseline: host kept to protocol 1"), (3, "default: protocol 3")):
        sent, frames = seen[protocol]
        samples = results[protocol]
        forward, back = sent[True], sent[False]
        print(
            f"{label}: {args.stations} stations online p50 {statistics.median(samples) * 1e3:.1f} ms, "
            f"max {max(samples) * 1e3:.1f} ms; host->stations {forward} bytes ({wire.frame_time(forward) * 1e3:.1f}"
            f" ms of wire), return pair {back} bytes ({wire.frame_time(back) * 1e3:.1f} ms): "
            + ", ".join(f"{n} {what}" for what, n in sorted(frames.items()))
        )
        again = resent[protocol]
        print(
            f"{label}: identify resent {sum(again)} times in {len(again)} starts "
            f"({sum(1 for n in again if n)} starts with a resend; per start {again})"
        )
    ratio = statistics.median(results[3]) / statistics.median(results[1])
    print(f"start to every station online, protocol 3 over protocol 1: p50 {ratio:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
