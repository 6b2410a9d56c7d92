"""What a demo starts for itself: a private PostgreSQL (floor.pgcluster, a temp dir), a private mosquitto on a free
loopback port unless --broker names one, and a signing key of its own. `tablectl demo --floor` (floor/cli/demo.py)
and `tablectl demo --linked` (link/cli/demo.py) share them, so both start, word and stop them alike.
"""

from __future__ import annotations

import base64
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from controller.cli.verb import UsageError
from controller.config.broker import MAX_PACKET_SIZE
from floor.pgcluster import ClusterError, PgCluster
from floor.ports import ADDRESS_IN_USE, PortsTaken, PortTaken, free_port, on_a_free_port
from leash import Leash

BROKER_STARTUP_S = 10.0


def start_postgres(demo: str) -> PgCluster:
    """A throwaway cluster (fsync off) in its own temp dir, readable by the postgres account when root; started."""
    print(f"tablectl demo {demo}: starting a private PostgreSQL ...", file=sys.stderr, flush=True)
    try:
        cluster = PgCluster.create(durable=False)
    except ClusterError as err:
        raise UsageError(f"{err} (python3 dev.py demo installs PostgreSQL)") from None
    try:
        cluster.start()
    except ClusterError as err:
        cluster.remove()
        raise UsageError(f"{err} (python3 dev.py demo installs PostgreSQL)") from None
    return cluster


def start_mosquitto(
    workdir: Path,
    *,
    max_queued_messages: int | None = None,
    extra: str = "",
    ports: Callable[[], int] = free_port,
    persistent: bool = False,
) -> tuple[subprocess.Popen[str], str]:
    """A broker on a free loopback port (from `ports`), anonymous, running: the process and its mqtt:// URL (`extra`:
    more config lines; the benches start theirs here too, without persistence; `persistent`: sessions, queues and
    retained topics kept in `workdir` across a restart, as the demo's). A port taken before the broker
    binds it (another demo's or test's server) is replaced by a fresh one (floor.ports); the broker's log is kept in
    `workdir`/mosquitto.log."""
    binary = shutil.which("mosquitto") or next(
        (p for p in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto") if os.access(p, os.X_OK)), None
    )
    if binary is None:
        raise UsageError("mosquitto is not installed: apt-get install mosquitto, or give --broker mqtt://HOST:PORT")
    try:
        extra = (_persistence(workdir) if persistent else "persistence false\n") + extra
        return on_a_free_port(lambda port: _mosquitto_on(binary, workdir, port, max_queued_messages, extra), ports)
    except PortsTaken as err:
        raise UsageError(f"the demo's private mosquitto could not listen: {err}") from None


def _mosquitto_on(
    binary: str, workdir: Path, port: int, max_queued_messages: int | None, extra: str
) -> tuple[subprocess.Popen[str], str]:
    conf = workdir / "mosquitto.conf"
    # The shipped broker's packet limit (controller.config.broker), so the demo meets what production meets. Its log
    # on stderr says when it is running, or that its port is taken.
    text = f"listener {port} 127.0.0.1\nallow_anonymous true\nmax_packet_size {MAX_PACKET_SIZE}\n"
    text += "log_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\nlog_type information\n"
    text += "set_tcp_nodelay true\n"  # as systemd/mosquitto/mosquitto.conf: no 40 ms Nagle stalls
    if max_queued_messages is not None:
        text += f"max_queued_messages {max_queued_messages}\n"
    conf.write_text(text + extra)
    logfile = workdir / "mosquitto.log"
    # Its log goes straight to the file, kept for whoever looks: no reader thread to die and leave the pipe to fill.
    with logfile.open("a", encoding="utf-8") as log:
        began = log.tell()
        # Its own session, as the private PostgreSQL's (floor.pgcluster): the terminal's Ctrl-C goes to the demo's
        # process group, and a broker in it died at once, so the floor service, still running until the demo stopped
        # it, logged "broker connection lost" at error level on a clean stop. The demo stops it last (private_servers).
        proc = subprocess.Popen(
            [binary, "-c", str(conf)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            text=True,
            start_new_session=True,
        )
    # Stopped with the demo however it ends, a kill -9 included (leash/).
    Leash.mine().hold(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + BROKER_STARTUP_S
    while True:
        said = _read_from(logfile, began)
        # "... running" is logged once every listener socket is open: clients can connect now.
        if any(" running" in line and "mosquitto version" in line for line in said):
            return proc, f"mqtt://127.0.0.1:{port}"
        code = proc.poll()
        if code is not None:
            Leash.mine().drop(proc.pid)
            said = _read_from(logfile, began)
            if any(ADDRESS_IN_USE in line for line in said):
                raise PortTaken(port, "".join(said[-10:]).strip())
            raise UsageError(f"the demo's private mosquitto exited with {code} while starting:\n{''.join(said[-20:])}")
        if time.monotonic() > deadline:
            stop_mosquitto(proc)
            raise UsageError(
                f"the demo's private mosquitto did not say it was running within {BROKER_STARTUP_S:.0f} s; its log: "
                f"{logfile}"
            )
        time.sleep(0.01)  # a broker starts in tens of ms; its log file is all there is to watch


# How often the demo's broker saves its sessions, queues and retained topics besides at a clean stop (seconds): a
# broker that crashes (kill -9) loses what came since its last save, so the demo keeps that window short.
AUTOSAVE_S = 10


def _persistence(workdir: Path) -> str:
    """The floor's persistent session (floor/listener_client.py) and what the broker queued for it survive a restart
    of the demo's broker, as on a production broker (docs/floor.md, "The broker"): without it every table came back
    with a seq gap, the events published between the broker's return and the floor's new subscription. Kept in the
    demo's own temp dir. Run as root, mosquitto drops to the `mosquitto` user, which cannot write in that root-only
    dir (it then fails to save at every stop): it runs as whoever started the demo."""
    return (
        f"persistence true\npersistence_location {workdir}/\nautosave_interval {AUTOSAVE_S}\n"
        f"user {pwd.getpwuid(os.geteuid()).pw_name}\n"
    )


def _read_from(path: Path, offset: int) -> list[str]:
    with path.open(encoding="utf-8", errors="replace") as f:
        f.seek(offset)
        return f.readlines()


def stop_mosquitto(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    Leash.mine().drop(proc.pid)


@contextmanager
def private_servers(
    workdir: Path, demo: str, broker: str | None, *, max_queued_messages: int | None = None
) -> Iterator[tuple[PgCluster, str]]:
    """The demo's PostgreSQL and its broker's URL (a private mosquitto when `broker` is None); on exit the mosquitto
    is stopped and the cluster removed, whatever the demo did; and should the demo be killed, its watchdog stops them
    and deletes `workdir` (leash/)."""
    Leash.mine().own(workdir)
    cluster = start_postgres(demo)
    broker_proc = None
    try:
        if broker is None:
            broker_proc, broker = start_mosquitto(workdir, max_queued_messages=max_queued_messages, persistent=True)
        yield cluster, broker
    finally:
        if broker_proc is not None:
            stop_mosquitto(broker_proc)
        cluster.remove()


def signing_key(pem: Path | None = None) -> tuple[Ed25519PrivateKey, str]:
    """A new Ed25519 key and its [[supervisors]] public_key (the raw 32 bytes in base64, as
    controller.supervisor.envelope.public_key_b64 writes it; the floor may not import the supervisor side). With
    `pem`, the private key is also written there (PKCS#8, mode 0600) for `tablectl ... send --key`."""
    key = Ed25519PrivateKey.generate()
    if pem is not None:
        pem.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
        pem.chmod(0o600)
    public = base64.b64encode(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode("ascii")
    return key, public
