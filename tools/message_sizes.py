"""The largest MQTT messages the tables send, measured: the broker's packet limit (systemd/mosquitto/mosquitto.conf)
rests on them.

Plays every table config in configs/ through the real demo (simulated devices on pseudo-terminals, the engine, the
journal, the publisher) against a private mosquitto, with every seat taken and every wager the table offers placed
at its maximum (the fullest settlement a table can publish: seven seats, every optional wager, the longest amounts),
and records every message a subscriber to `#` receives. Prints the largest per topic kind and per event type, with
the size mosquitto holds to `max_packet_size` (topic and packet id too). `--linked` adds the linked-progressive demo
(three tables and their link controller, on a private PostgreSQL) for the link's topics.

    .venv/bin/python tools/message_sizes.py [--rounds 12] [--linked]
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TABLE_CONFIGS = sorted(p for p in (REPO / "configs").glob("*.toml") if p.name not in {"floor.toml", "link.toml"})

# Run in the demo's process before its main(): every seat plays every wager the table offers, at its maximum.
FULL_TABLE = """
import sys
from controller.games.players import DemoPlayers
from controller.games.mississippi_stud.players import MississippiStudPlayers

def full(self, rules, spec, rng):
    offers = list(spec.offers(rules))
    main = [o for o in offers if o.spot in spec.main_wagers] or offers[:1]
    optional = [o for o in offers if o not in main]
    high = min(o.max_cents for o in main)
    out = {}
    for seat in range(1, spec.seats(rules) + 1):
        for extra in ({o.spot: o.max_cents for o in optional}, {o.spot: o.min_cents for o in optional}, {}):
            w = {o.spot: high for o in main} | extra
            if spec.player_problem(w) is None:
                out[seat] = w
                break
    return out

DemoPlayers.wagers = full
MississippiStudPlayers.wagers = full
from controller.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


# How many ports start_broker tries: a port taken between free_port() and the broker's bind (another process's
# server) is a rare race; five in a row is something else. floor/ports.py does the same for the project, which
# tools/ may not import (pyproject.toml, import-linter).
PORT_ATTEMPTS = 5
ADDRESS_IN_USE = "Address already in use"  # mosquitto's words for EADDRINUSE


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_broker(tmp: Path, mosquitto: str) -> tuple[subprocess.Popen[bytes], int]:
    """A private mosquitto on a free loopback port, and that port; on a fresh port when another process bound the one
    picked before the broker did. SystemExit naming the ports and the fix when each was taken, or the broker's words
    when it failed otherwise."""
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name}\n"  # as root, mosquitto would drop to `mosquitto`
    tried: list[int] = []
    said = ""
    while len(tried) < PORT_ATTEMPTS:
        port = free_port()
        tried.append(port)
        conf = tmp / f"mosquitto-{port}.conf"
        log = tmp / f"mosquitto-{port}.log"  # a file, not a pipe: nobody reads it while the demos run
        conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 1000000\n{user}")
        with log.open("wb") as err:
            broker = subprocess.Popen([mosquitto, "-c", str(conf)], stderr=err)
        said = wait_running(broker, log)
        if not said:
            return broker, port
        if ADDRESS_IN_USE not in said:
            raise SystemExit(f"mosquitto did not start on 127.0.0.1:{port}:\n{said}")
        print(f"port {port} was taken before mosquitto bound it: trying another", file=sys.stderr, flush=True)
    ports = ", ".join(map(str, tried))
    raise SystemExit(
        f"another process held each port tried ({ports}): find it with `ss -ltnp`; mosquitto said:\n{said}"
    )


def wait_running(broker: subprocess.Popen[bytes], log: Path) -> str:
    """Nothing ("") once the broker says it is running (a port that merely accepts may be another process's); what it
    said when it exited instead."""
    deadline = time.monotonic() + 10
    while True:
        text = log.read_text(errors="replace")
        if " running" in text:
            return ""
        if broker.poll() is not None:
            return log.read_text(errors="replace").strip() or f"mosquitto exited with {broker.returncode}"
        if time.monotonic() > deadline:
            broker.kill()
            broker.wait()
            raise SystemExit(f"mosquitto did not say it was running within 10 s:\n{text}")
        time.sleep(0.05)


def counted(topic: str, payload: int) -> int:
    """A QoS 1 PUBLISH (MQTT 3.1.1) as mosquitto 2.0 holds it to max_packet_size: its first byte and its remaining
    length (topic length, topic, packet id, payload)."""
    return 1 + 2 + len(topic.encode()) + 2 + payload


def kind(topic: str) -> str:
    parts = topic.split("/")
    if len(parts) > 2 and parts[1] == "link":
        return "link/" + "/".join(parts[3:4])
    return "/".join(parts[2:3]) + ("/<id>" if len(parts) > 3 and parts[2] in {"device", "progressive"} else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=12, help="rounds per table config (default 12)")
    ap.add_argument("--linked", action="store_true", help="also the linked-progressive demo")
    args = ap.parse_args()
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    with tempfile.TemporaryDirectory() as tmp:
        broker, port = start_broker(Path(tmp), mosquitto)
        out = Path(tmp) / "messages.txt"
        sub = subprocess.Popen(
            ["mosquitto_sub", "-p", str(port), "-t", "#", "-v", "-q", "1", "-c", "-i", "sizes"],
            stdout=out.open("w"),
        )
        url = f"mqtt://127.0.0.1:{port}"
        runs = [["--config", str(c)] for c in TABLE_CONFIGS] + ([["--linked"]] if args.linked else [])
        try:
            for i, run in enumerate(runs, 1):
                print(f"[{i}/{len(runs)}] demo {' '.join(run)}", file=sys.stderr, flush=True)
                journal = ["--journal", f"{tmp}/t{i}.sqlite"] if run[0] == "--config" else []
                cmd = [sys.executable, "-c", FULL_TABLE, "demo", *run, "--rounds", str(args.rounds)]
                cmd += ["--pace", "0", "--seed", str(i), "--quiet", "--broker", url, *journal]
                done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
                if done.returncode != 0:
                    print(f"  exit {done.returncode}: {done.stderr[-600:]}", file=sys.stderr)
            time.sleep(1.0)  # let the subscriber drain what the broker still holds for it
        finally:
            sub.terminate()
            sub.wait()
            broker.terminate()
            broker.wait()
        report(out.read_text(errors="replace").splitlines())
    return 0


def report(lines: list[str]) -> None:
    by_kind: dict[str, tuple[int, str]] = defaultdict(lambda: (0, ""))
    by_type: dict[str, tuple[int, str]] = defaultdict(lambda: (0, ""))
    for line in lines:
        topic, _, payload = line.partition(" ")
        size = len(payload.encode())
        k = kind(topic)
        if size > by_kind[k][0]:
            by_kind[k] = (size, topic)
        if k == "event":
            try:
                t = str(json.loads(payload).get("type"))
            except ValueError:
                continue
            if size > by_type[t][0]:
                by_type[t] = (size, topic)
    print(f"{len(lines)} messages")
    print("largest payload per topic (bytes; the PUBLISH as max_packet_size counts it):")
    for k, (size, topic) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        print(f"  {k:28} {size:7}  {counted(topic, size):7}")
    print("largest events by type:")
    for t, (size, _) in sorted(by_type.items(), key=lambda kv: -kv[1][0])[:10]:
        print(f"  {t:40} {size:7}")


if __name__ == "__main__":
    sys.exit(main())
