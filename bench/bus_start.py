"""A multi-drop line's start: from the wager-bus driver's start to its seven stations online, on one paced line.

Measured, per trial: the reference wager-bus driver (in this process) starts every seat at once, as the controller
does, against a WagerBusSim on a real pty paced at 115200 baud; the clock stops when the last station is online. The
line is tapped both ways, so the run also says what crossed it: the bytes on each pair and their wire time, and the
frames on the stations' shared return pair (where the identities queue one after another) by kind, and how often the
host sent `identify` again (a station's ACK past its timeout; docs/protocol.md section 2, "Identify a few stations at
a time").

Then the table's opening, as the controller sends it when the table opens: an `unlock` and a `light` (out) to every
station at once, each station's in that order; and a round's lock-out and reopening (`lock`, then `unlock`, to every
station; on a v3/v4 line the GROUP lock's slot pairs are each proven by a lock of its own after the window,
docs/protocol.md section 13, "The proof of a pair", and those bytes count too). Timed from the first command to the
last answer, with the bytes each way.

Baseline: the same start with the host kept to protocol 1 (`protocol = 1`: an identify that offers nothing, every
identity in v1 JSON), run alternately with protocol 3 (the identity in v3, its firmware_hash as 32 bytes;
docs/protocol.md section 10, "Negotiation" rule 2) and the default, protocol 4 (the identity in the ANSWER that
acknowledges the identify, and the opening's unlock and lights in GROUP frames: section 14) in the same process.
Issue 19: the bus's extra time to READY.

    .venv/bin/python bench/bus_start.py [--trials 10] [--stations 7]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field

import benchlib

from controller.shell.logs import configure_logging
from drivers.interfaces import WAGER_BUS_ID, DeviceEvent, DeviceOnline
from drivers.reference.framing import FrameParser, Kind, ProtocolError, decode_message
from drivers.reference.wager_bus import BusWagerStation, ReferenceWagerBus
from drivers.registry import create_driver
from drivers.sim.line import LineTiming
from drivers.sim.wager_bus import WagerBusSim


def _command(payload: bytes) -> str | None:
    try:
        cmd = decode_message(payload).get("cmd")
    except ProtocolError:
        return None
    return cmd if isinstance(cmd, str) else None


@dataclass
class Start:
    """One start: seconds to every station online, bytes each way ({from_host: n}), the return pair's frames by kind
    and version, the identify frames the host sent; then the opening's and a round's seconds and bytes each way."""

    elapsed: float
    sent: dict[bool, int]
    frames: Counter[str]
    identifies: int
    opening: float = 0.0
    opening_bytes: dict[bool, int] = field(default_factory=dict)
    round_bytes: dict[bool, int] = field(default_factory=dict)


async def one_start(stations: int, protocol: int) -> Start:
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
                # v4: the identity is the ANSWER (a REPLY with a payload) that acknowledges the identify.
                size = {Kind.DATA: "identity", Kind.REPLY: "identity ANSWER"}.get(frame.kind, frame.kind.name)
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
        result = Start(time.monotonic() - start, dict(sent), Counter(frames), identifies[0])
        await open_and_play_a_round(sim, driver, sent, result)
    finally:
        await asyncio.gather(*(s.stop() for s in driver.stations.values()))
        await sim.stop()
    return result


async def open_and_play_a_round(
    sim: WagerBusSim, driver: ReferenceWagerBus, sent: dict[bool, int], result: Start
) -> None:
    """The table's opening (each station's `unlock`, then its `light` out, every station at once, as the controller
    sends them), timed, then a round's lock and reopening; the bytes of each into `result`."""

    async def opening(station: BusWagerStation) -> None:
        await station.unlock()
        await station.light_off()

    await quiet(sim)
    before = dict(sent)
    start = time.monotonic()
    await asyncio.gather(*(opening(s) for s in driver.stations.values()))
    result.opening = time.monotonic() - start
    await quiet(sim)
    result.opening_bytes = {way: sent[way] - before[way] for way in sent}
    before = dict(sent)
    await asyncio.gather(*(s.lock() for s in driver.stations.values()))
    await asyncio.gather(*(s.unlock() for s in driver.stations.values()))
    await quiet(sim)
    result.round_bytes = {way: sent[way] - before[way] for way in sent}


async def quiet(sim: WagerBusSim) -> None:
    """Return once no station awaits an ACK and both pairs delivered what was queued on them (the ACKs of the last
    answers may still be crossing when the driver has what it waited for)."""
    for station in sim.stations.values():
        if station._link is not None:
            async with station._link._send_lock:
                pass
    endpoint = sim._endpoint
    assert endpoint is not None
    for direction in (endpoint.outbound, endpoint.inbound):
        drained: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        direction.after(functools.partial(_settle, drained))
        await drained


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--stations", type=int, default=7)
    args = ap.parse_args()
    configure_logging(json=False, level="warning")  # the figures are the output; logs only if something fails
    print(f"machine: {benchlib.machine()}")
    wire = LineTiming()
    protocols = (1, 3, 4)
    results: dict[int, list[float]] = {p: [] for p in protocols}
    openings: dict[int, list[float]] = {p: [] for p in protocols}
    resent: dict[int, list[int]] = {p: [] for p in protocols}
    seen: dict[int, Start] = {}
    for trial in range(args.trials):
        for protocol in protocols:  # alternately: the load of a shared machine falls on each alike
            start = await one_start(args.stations, protocol)
            results[protocol].append(start.elapsed)
            openings[protocol].append(start.opening)
            resent[protocol].append(start.identifies - args.stations)
            seen[protocol] = start
        benchlib.progress(
            f"trial {trial + 1}/{args.trials}: " + ", ".join(f"v{p} {results[p][-1] * 1e3:.1f} ms" for p in protocols)
        )
    labels = ((1, "baseline: host kept to protocol 1"), (3, "host kept to protocol 3"), (4, "default: protocol 4"))
    for protocol, label in labels:
        sent, frames = seen[protocol].sent, seen[protocol].frames
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
        last = seen[protocol]
        print(
            f"{label}: opening (unlock + light to each) p50 {statistics.median(openings[protocol]) * 1e3:.1f} ms, "
            f"max {max(openings[protocol]) * 1e3:.1f} ms; host->stations {last.opening_bytes[True]} bytes, return pair "
            f"{last.opening_bytes[False]} bytes; a round's lock and unlock: host->stations {last.round_bytes[True]}"
            f" bytes, return pair {last.round_bytes[False]} bytes"
        )
    for protocol in (3, 4):
        ratio = statistics.median(results[protocol]) / statistics.median(results[1])
        opening = statistics.median(openings[protocol]) / statistics.median(openings[1])
        print(f"protocol {protocol} over protocol 1: start to all online p50 {ratio:.2f}x, opening {opening:.2f}x")
    ratio = statistics.median(results[4]) / statistics.median(results[3])
    opening = statistics.median(openings[4]) / statistics.median(openings[3])
    print(f"protocol 4 over protocol 3: start p50 {ratio:.2f}x, opening p50 {opening:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
