"""The services `dev.py` makes sure of: apt-get (as root or with passwordless sudo), mosquitto (and the demo's
private broker), PostgreSQL and Chromium. Kept apart from dev.py so each stays comfortably within CONTRIBUTING.md's
size limit.

Run by the system python3 before any venv exists (dev.py imports it by path, as tools.devservers from the repository
root): the standard library only. The leash (leash/) is run by path too, never imported (pyproject.toml: tools/ imports
none of the project).
"""

from __future__ import annotations

import os
import re
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO_BROKER = ("127.0.0.1", 1883)
# The shipped broker's packet limit, read from where the controller keeps it (dev.py runs before the project is
# installed, so it does not import it): the demo's broker meets what production meets.
_LIMIT = re.search(r"^MAX_PACKET_SIZE = ([0-9]+)$", (REPO / "controller/config/broker.py").read_text(), re.MULTILINE)
MAX_PACKET_SIZE = int(_LIMIT.group(1)) if _LIMIT else 65536


def say(msg: str) -> None:
    print(f"dev.py: {msg}", flush=True)


# --- privileges and apt ----------------------------------------------------------------------------------


def root_prefix() -> list[str] | None:
    """The command prefix that runs apt-get as root, or None if we cannot without asking for a password."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo"):
        ok = subprocess.run(
            ["sudo", "-n", "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        if ok.returncode == 0:
            return ["sudo", "-n"]
    return None


def apt_install(packages: list[str]) -> bool:
    prefix = root_prefix()
    if prefix is None or not shutil.which("apt-get"):
        return False
    # `env` because sudo resets the environment; without it apt may stop to ask questions.
    apt = [*prefix, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
    say(f"installing {' '.join(packages)} with apt-get ...")
    for cmd in ([*apt, "update"], [*apt, "install", "-y", *packages]):
        if subprocess.run(cmd, stdin=subprocess.DEVNULL).returncode != 0:
            say(f"`{' '.join(cmd)}` failed")
            return False
    return True


# --- mosquitto -------------------------------------------------------------------------------------------


def find_mosquitto() -> str | None:
    # Debian installs the broker in /usr/sbin, which an ordinary user's PATH lacks.
    candidates = ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")
    return shutil.which("mosquitto") or next((c for c in candidates if os.access(c, os.X_OK)), None)


def ensure_mosquitto() -> str | None:
    found = find_mosquitto()
    if found:
        return found
    say("mosquitto (the MQTT broker) is not installed")
    if apt_install(["mosquitto", "mosquitto-clients"]) and (found := find_mosquitto()):
        return found
    print(
        "dev.py: mosquitto is needed and could not be installed automatically (not root, no passwordless\n"
        "        sudo, or no apt-get). Install it with:\n"
        "            sudo apt-get install mosquitto mosquitto-clients",
        file=sys.stderr,
        flush=True,
    )
    return None


def listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


class PrivateBroker:
    """A mosquitto for the demo's lifetime, configured in a temp dir, in its own session so the
    terminal's Ctrl-C reaches the demo (which then says goodbye over MQTT) and not the broker."""

    def __init__(self, binary: str) -> None:
        leash = runpy.run_path(str(REPO / "leash" / "__init__.py"), run_name="tablectl_leash")  # stdlib only: no venv
        for line in leash["sweep"]():  # what a killed earlier run left behind
            say(f"swept {line}")
        self.dir = Path(tempfile.mkdtemp(prefix="tablectl-demo-broker-"))
        self.log = self.dir / "mosquitto.log"
        conf = self.dir / "mosquitto.conf"
        host, port = DEMO_BROKER
        conf.write_text(
            f"listener {port} {host}\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\n"
            f"max_packet_size {MAX_PACKET_SIZE}\n"
        )
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [binary, "-c", str(conf)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        # Should dev.py be killed (kill -9, a closed terminal), its watchdog stops the broker and deletes the dir.
        leash["Leash"].mine().hold(self.proc.pid, signal.SIGTERM)
        leash["Leash"].mine().own(self.dir)

    def wait_ready(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if listening(*DEMO_BROKER):
                return True
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- PostgreSQL ------------------------------------------------------------------------------------------


def find_postgres() -> str | None:
    """PostgreSQL's server binaries directory (Debian: /usr/lib/postgresql/<version>/bin, not on PATH)."""
    root = Path("/usr/lib/postgresql")
    found = sorted(
        (p for p in root.glob("*/bin") if (p / "initdb").exists()), key=lambda p: int("0" + p.parent.name.split(".")[0])
    )
    if found:
        return str(found[-1])
    initdb = shutil.which("initdb")
    return str(Path(initdb).resolve().parent) if initdb else None


def ensure_postgres() -> str | None:
    """The floor's tests start private PostgreSQL clusters (floor/pgcluster.py); install Debian's if missing."""
    found = find_postgres()
    if found:
        return found
    say("PostgreSQL (the floor's database) is not installed")
    if apt_install(["postgresql"]):
        found = find_postgres()
        if found:
            return found
    print(
        "dev.py: PostgreSQL is needed and could not be installed automatically (not root, no passwordless\n"
        "        sudo, or no apt-get). Install it with:\n"
        "            sudo apt-get install postgresql",
        file=sys.stderr,
        flush=True,
    )
    return None


# --- Chromium ---------------------------------------------------------------------------------------------


def ensure_chromium() -> bool:
    """The console's browser test drives Debian's Chromium headless through chromium-driver (tests/floor)."""
    if shutil.which("chromium") and shutil.which("chromedriver"):
        return True
    say("Chromium and chromium-driver (the console's browser test) are not installed")
    return apt_install(["chromium", "chromium-driver"]) and bool(shutil.which("chromedriver"))
