"""The publisher's CPU per round: a seven-seat round's events published by EventPublisher, against bare aiomqtt.

Measured: the event loop thread's CPU, user and system (getrusage RUSAGE_THREAD) while EventPublisher publishes a
round's --events events to a private mosquitto in steps of --step events, each step handed over as the journal's writer
thread does (`offer`, the default) or announced for the publisher to read back from the outbox (`--path outbox`),
until the publisher has every PUBACK of the step; everything the publisher does for them counts (JSON bodies,
packets, PUBACKs, the retained anchor after each batch, outbox marks). The journal commits that produce the events are
not counted (made before the clock starts, on the same thread).

Baseline, in the same process and the same rounds (interleaved): a bare aiomqtt client publishing the same bodies on
its own connection to the same broker, QoS 1, each step's publishes gathered and awaited. The issue's budget is 5 ms
for a whole round of the controller (issue 19 item 3): the publisher's share must stay well under it.

    .venv/bin/python bench/publish_cpu.py [--rounds 30] [--events 66] [--step 2] [--path offer|outbox]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import aiomqtt
import benchlib

from controller.config.table import MqttSettings
from controller.core.events import DomainEvent, JournaledEvent
from controller.mqtt.messages import event_body
from controller.mqtt.publisher import EventPublisher
from controller.shell.logs import configure_logging
from controller.store.journal import Journal

TABLE = "bench-publish"
BUDGET_MS = 5.0  # the controller's whole round (issue 19)
TAIL = 0.7  # seconds a block's clock runs on after its last PUBACK: longer than the publisher's MARK_DELAY


def cpu() -> tuple[float, float]:
    """This thread's user and system CPU seconds (the kernel's TCP work for loopback sends is charged to the sender)."""
    use = resource.getrusage(resource.RUSAGE_THREAD)
    return use.ru_utime, use.ru_stime


def step_events(first: int, count: int) -> list[DomainEvent]:
    # The size of a 643a settlement event (643a.11: a seat's hand, its wagers and what each paid).
    return [
        DomainEvent(
            "hand.settled",
            "643a.11(a)",
            {
                "seat": n % 7 + 1,
                "cards": ["Jc", "Ah", "3s"],
                "community": ["8h", "4h"],
                "hand": "high_card",
                "paytable": "643a.12(a)",
                "paid": 0,
                "wagers": [
                    {"wager": w, "amount": 500, "outcome": "lose", "paid": 0, "returned": 0, "collected": 500}
                    for w in ("first", "second", "third")
                ],
            },
            round_id=f"{TABLE}-r{first:06d}",
        )
        for n in range(first, first + count)
    ]


class Acked:
    """Resolves once the publisher has had every event up to a seq acknowledged (its anchor's hook)."""

    def __init__(self, pub: EventPublisher) -> None:
        anchor = pub._anchor
        self.upto = 0
        self.waiting: tuple[int, asyncio.Future[None]] | None = None
        real = anchor.acknowledged

        def acknowledged(last: JournaledEvent) -> None:
            real(last)
            self.upto = max(self.upto, last.seq)
            if self.waiting is not None and self.upto >= self.waiting[0] and not self.waiting[1].done():
                self.waiting[1].set_result(None)

        anchor.acknowledged = acknowledged  # type: ignore[method-assign]

    async def until(self, seq: int) -> None:
        if self.upto >= seq:
            return
        fut = asyncio.get_running_loop().create_future()
        self.waiting = (seq, fut)
        await asyncio.wait_for(fut, 10)


Cpu = list[tuple[float, float]]  # per block: (user, system) milliseconds a round


async def run(args: argparse.Namespace, url: str, directory: Path) -> tuple[Cpu, Cpu]:
    """Blocks of --block rounds, the publisher's and the bare client's in turn; each block's clock runs on for TAIL
    seconds after its last PUBACK, so whatever the publisher does after a batch (the anchor, the outbox marks once idle)
    is counted in its own block. The journal commits that make the events are timed and taken out."""
    journal = Journal(directory / "journal.db", TABLE, "bench-boot")
    settings = MqttSettings(broker=url, prefix="bench")
    pub = EventPublisher(journal, settings, TABLE)
    acked = Acked(pub)
    task = asyncio.create_task(pub.run())
    ours: Cpu = []
    bare: Cpu = []
    host, port = url.removeprefix("mqtt://").rsplit(":", 1)
    seq = 0

    async def block(rounds: int, mq: aiomqtt.Client | None) -> tuple[float, float]:
        nonlocal seq
        appends = 0.0
        u0, s0 = cpu()
        for _ in range(rounds):
            for first in range(0, args.events, args.step):
                a0 = sum(cpu())
                evs = journal.append(step_events(seq + 1, min(args.step, args.events - first)), datetime.now(UTC))
                appends += sum(cpu()) - a0
                seq = evs[-1].seq
                if mq is None:
                    if args.path == "offer":
                        pub.offer(evs)
                    else:
                        pub.notify()
                    await acked.until(seq)
                else:
                    bodies = [event_body(ev, False) for ev in evs]  # the bare client needs the bodies too: counted
                    await asyncio.gather(*(mq.publish("bench/bare/event", b, qos=1) for b in bodies))
        await asyncio.sleep(TAIL)
        u1, s1 = cpu()
        user, system = u1 - u0, s1 - s0
        # The commits' CPU comes off user and system in proportion (getrusage splits a thread's time by ticks anyway).
        keep = max(0.0, 1 - appends / (user + system)) if user + system else 0.0
        return user * keep * 1000 / rounds, system * keep * 1000 / rounds

    try:
        async with aiomqtt.Client(host, int(port), identifier="bench-bare", protocol=aiomqtt.ProtocolVersion.V5) as mq:
            mq.pending_calls_threshold = 1000
            # Warm-up (not counted): both connected, every code path run once.
            await block(args.warmup, None)
            await block(args.warmup, mq)
            blocks = max(1, args.rounds // args.block)
            for n in range(blocks):
                benchlib.progress(f"block {n + 1}/{blocks}: {args.block} rounds each way")
                ours.append(await block(args.block, None))
                bare.append(await block(args.block, mq))
    finally:
        await pub.close()
        await asyncio.gather(task, return_exceptions=True)
        journal.close()
    return ours, bare


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--events", type=int, default=66, help="events a round (a seven-seat 643a round: 66)")
    ap.add_argument("--step", type=int, default=2, help="events a step (a round's steps hand over about 2 each)")
    ap.add_argument("--path", choices=("offer", "outbox"), default="offer")
    ap.add_argument("--block", type=int, default=10, help="rounds a block; the publisher's and bare blocks alternate")
    args = ap.parse_args()
    configure_logging(level="warning")
    print(benchlib.machine())
    with benchlib.mosquitto() as url, tempfile.TemporaryDirectory(prefix="bench-publish-") as tmp:
        ours, bare = asyncio.run(run(args, url, Path(tmp)))
    ou, os_ = (statistics.median(x) for x in zip(*ours, strict=True))
    bu, bs = (statistics.median(x) for x in zip(*bare, strict=True))
    steps = -(-args.events // args.step)
    print(
        f"{len(ours)} blocks of {args.block} rounds each way, {args.events} events a round in {steps} steps of "
        f"{args.step} (path: {args.path}); medians of the blocks"
    )
    print(
        f"baseline: bare aiomqtt publishing the same bodies, QoS 1: {bu + bs:.2f} ms of CPU a round "
        f"({bu:.2f} user, {bs:.2f} system)"
    )
    share = f"{(ou + os_) / BUDGET_MS:.0%} of the controller's 5 ms budget"
    print(
        f"EventPublisher: {ou + os_:.2f} ms of CPU a round ({ou:.2f} user, {os_:.2f} system); "
        f"{(ou + os_) / (bu + bs):.2f}x the baseline, user {ou / bu:.2f}x; {share}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
