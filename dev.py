#!/usr/bin/env python3
"""Bootstrap for tablectl development: `python3 dev.py demo` and `python3 dev.py test`.

Needs only Python 3.11+ and the standard library: it creates .venv, installs the project into it, makes
sure mosquitto and PostgreSQL are available (installing them with apt-get when it can), then runs the demo or
the tests.
Re-running is fast: the install is repeated only when pyproject.toml changes.
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
from types import FrameType

REPO = Path(__file__).resolve().parent
VENV = REPO / ".venv"
VENV_PY = VENV / "bin" / "python"
STAMP = VENV / ".tablectl-installed"
PYPROJECT = REPO / "pyproject.toml"
DEMO_BROKER = ("127.0.0.1", 1883)
# The shipped broker's packet limit, read from where the controller keeps it (dev.py runs before the project is
# installed, so it does not import it): the demo's broker meets what production meets.
_LIMIT = re.search(r"^MAX_PACKET_SIZE = ([0-9]+)$", (REPO / "controller/config/broker.py").read_text(), re.MULTILINE)
MAX_PACKET_SIZE = int(_LIMIT.group(1)) if _LIMIT else 65536

USAGE = """\
usage: python3 dev.py VERB [ARGS...]

verbs:
  demo [ARGS...]   play a whole table on simulated devices (runs `tablectl demo ARGS...`); uses the MQTT
                   broker on 127.0.0.1:1883, starting a private mosquitto there if none is running.
                   `demo --floor`: the floor in a browser (simulated tables, a linked progressive, the
                   console), on a private PostgreSQL and mosquitto it starts itself
  test [ARGS...]   run the test suite (`pytest -n 2 --dist loadgroup ARGS...`; `-n 0`: one process) on real servers
  check            run the static checks alone: import-linter's layer contracts, ruff format and ruff
                   check, mypy --strict, the sizes of CONTRIBUTING.md (`test` without arguments runs them first)

Each verb first creates .venv and installs tablectl with its test dependencies into it (only again when
pyproject.toml changes), and makes sure mosquitto (and, for `test`, PostgreSQL: the floor's tests start
private clusters) is installed (with apt-get, as root or with passwordless sudo; otherwise it says what to
install).
"""

VERBS = ("demo", "test", "check")


def say(msg: str) -> None:
    print(f"dev.py: {msg}", flush=True)


def fail(msg: str, code: int = 1) -> int:
    print(f"dev.py: error: {msg}", file=sys.stderr, flush=True)
    return code


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


# --- .venv -----------------------------------------------------------------------------------------------


def venv_works() -> bool:
    if not VENV_PY.exists():
        return False
    probe = subprocess.run(
        [str(VENV_PY), "-m", "pip", "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return probe.returncode == 0


def have_ensurepip() -> bool:
    # Debian splits ensurepip out of the python3 package; without it `python3 -m venv` makes a venv
    # with no pip in it.
    probe = subprocess.run(
        [sys.executable, "-c", "import ensurepip, venv"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return probe.returncode == 0


def ensure_venv() -> bool:
    if not venv_works():
        venv_pkg = f"python3.{sys.version_info.minor}-venv"
        if not have_ensurepip() and not apt_install([venv_pkg]):
            fail(
                "Python's venv module (with ensurepip) is not available. On Debian/Ubuntu install it with:\n"
                f"    sudo apt-get install python3-venv    (or {venv_pkg})\n"
                "then run this command again."
            )
            return False
        say(f"setting up .venv with {sys.executable} (Python {sys.version.split()[0]}) ...")
        # --clear: a half-made .venv (e.g. from a run without ensurepip) must not be reused.
        if subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)]).returncode != 0:
            fail(f"could not create {VENV}; see the messages above")
            return False
        STAMP.unlink(missing_ok=True)
    if STAMP.exists() and STAMP.stat().st_mtime >= PYPROJECT.stat().st_mtime:
        return True
    say("installing tablectl and its test dependencies into .venv (pip install -e '.[test]') ...")
    cmd = [str(VENV_PY), "-m", "pip", "install", "--disable-pip-version-check", "-e", f"{REPO}[test]"]
    if subprocess.run(cmd, cwd=REPO, stdin=subprocess.DEVNULL).returncode != 0:
        fail("pip install failed; see the messages above (is the network reachable?)")
        return False
    STAMP.touch()
    say(".venv is ready")
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


# --- running children ------------------------------------------------------------------------------------


def run_child(cmd: list[str]) -> int:
    """Run cmd in the foreground; Ctrl-C and SIGTERM go to it, and we wait for it to finish cleanly."""
    proc = subprocess.Popen(cmd, cwd=REPO)

    def forward(signum: int, _frame: FrameType | None) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:
                # The terminal already sent SIGINT to the child (same process group): let it shut down.
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)
    # A child killed by signal N reports -N; shells report 128+N.
    return 128 - code if code < 0 else code


def cmd_demo(args: list[str]) -> int:
    mosquitto = ensure_mosquitto()
    broker: PrivateBroker | None = None
    host, port = DEMO_BROKER
    if "--floor" in args or "--linked" in args:
        # These start their own private mosquitto (unless given --broker) and PostgreSQL.
        if ensure_postgres() is None:
            return fail("`demo --floor` and `demo --linked` keep their books in a private PostgreSQL (see above)")
        return run_child([str(VENV / "bin" / "tablectl"), "demo", *args])
    if listening(host, port):
        say(f"using the MQTT broker already listening on {host}:{port}")
    elif mosquitto is None:
        say("continuing without an MQTT broker: the demo plays on and its events stay in the journal")
    else:
        say(f"starting a private mosquitto on {host}:{port} for the demo ...")
        broker = PrivateBroker(mosquitto)
        if not broker.wait_ready():
            say(f"mosquitto did not start; its log:\n{broker.log.read_text(errors='replace')}")
            say("continuing without an MQTT broker")
            broker.stop()
            broker = None
    if broker is not None or listening(host, port):
        say("watch the table's messages with:  mosquitto_sub -v -t 'tablectl/#'")
    try:
        return run_child([str(VENV / "bin" / "tablectl"), "demo", *args])
    finally:
        if broker is not None:
            say("stopping the private mosquitto")
            broker.stop()


def ensure_chromium() -> bool:
    """The console's browser test drives Debian's Chromium headless through chromium-driver (tests/floor)."""
    if shutil.which("chromium") and shutil.which("chromedriver"):
        return True
    say("Chromium and chromium-driver (the console's browser test) are not installed")
    return apt_install(["chromium", "chromium-driver"]) and bool(shutil.which("chromedriver"))


def cmd_test(args: list[str]) -> int:
    if ensure_mosquitto() is None:
        return fail("the tests need a real mosquitto (see above)")
    if ensure_postgres() is None:
        return fail("the floor's tests need PostgreSQL (see above)")
    if not ensure_chromium():
        say("continuing without Chromium: the console's browser test fails under CI=true, else is skipped")
    if not args:
        # The whole suite starts with the static checks, so CI fails on a broken layer, an unformatted file or
        # a type error as it does on a failing test. With arguments (a subset while working) they are skipped.
        checks = cmd_check([])
        if checks != 0:
            return fail("the static checks failed (see above); `python3 dev.py check` runs them alone", code=checks)
    # 2 xdist workers (README: why; not in addopts: a child pytest is 1 process); a user's later -n 0 or --dist wins
    own = any(a.endswith("no:xdist") or a in ("--pdb", "--trace") for a in args)
    code = run_child([str(VENV_PY), "-m", "pytest", *([] if own else ["-n", "2", "--dist", "loadgroup"]), *args])
    if code == 5:
        return fail("pytest collected no tests (exit code 5); check the arguments and the tests/ directory")
    return code


PY_TREES = ("controller", "drivers", "floor", "link", "leash", "tests", "bench", "tools", "dev.py")
# The static checks, in the order a contributor wants to hear of them; each prints its own findings.
CHECKS: tuple[tuple[str, list[str]], ...] = (
    ("layers (import-linter contracts in pyproject.toml)", ["lint-imports"]),
    ("formatting (ruff format --check)", ["ruff", "format", "--check", "--quiet", *PY_TREES]),
    ("lint (ruff check)", ["ruff", "check", "--quiet", *PY_TREES]),
    ("types (mypy --strict)", ["mypy"]),  # what it checks comes from [tool.mypy] in pyproject.toml
    ("sizes (CONTRIBUTING.md: 400 lines a file, 60 a function)", ["python", str(REPO / "tools" / "sizes.py")]),
)


def cmd_check(args: list[str]) -> int:
    if args:
        return fail("`check` takes no arguments", code=2)
    bin_dir = VENV / "bin"
    failed = []
    for name, (tool, *rest) in CHECKS:
        say(f"check: {name}")
        if run_child([str(bin_dir / tool), *rest]) != 0:
            failed.append(name)
    if failed:
        say(f"failed: {'; '.join(failed)}")
        return 1
    say("static checks passed")
    return 0


def main(argv: list[str]) -> int:
    # Kept although ruff assumes 3.11: this file is run by whatever python3 the machine has.
    if sys.version_info < (3, 11):  # noqa: UP036
        return fail(f"tablectl needs Python 3.11 or newer; this is {sys.version.split()[0]}")
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if argv else 2
    verb, args = argv[0], argv[1:]
    if verb not in VERBS:
        print(USAGE, end="", file=sys.stderr)
        return fail(f"unknown verb {verb!r}; valid verbs: {', '.join(VERBS)}", code=2)
    if not ensure_venv():
        return 1
    if verb == "demo":
        return cmd_demo(args)
    if verb == "test":
        return cmd_test(args)
    return cmd_check(args)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
