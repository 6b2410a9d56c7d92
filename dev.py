#!/usr/bin/env python3
"""Bootstrap for tablectl development: `python3 dev.py demo` and `python3 dev.py test`.

Needs only Python 3.11+ and the standard library: it creates .venv, installs the project into it, makes
sure mosquitto and PostgreSQL are available (installing them with apt-get when it can), then runs the demo or
the tests.
Re-running is fast: the install is repeated only when pyproject.toml changes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parent
# The service starters live in tools/devservers.py (stdlib only, like this file): imported from the repository root
# whichever directory dev.py is run from.
sys.path.insert(0, str(REPO))
from tools.devservers import (  # noqa: E402
    DEMO_BROKER,
    PrivateBroker,
    apt_install,
    ensure_chromium,
    ensure_mosquitto,
    ensure_postgres,
    listening,
    say,
)

VENV = REPO / ".venv"
VENV_PY = VENV / "bin" / "python"
STAMP = VENV / ".tablectl-installed"
PYPROJECT = REPO / "pyproject.toml"

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


def fail(msg: str, code: int = 1) -> int:
    print(f"dev.py: error: {msg}", file=sys.stderr, flush=True)
    return code


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


# --- running children ------------------------------------------------------------------------------------


def run_child(cmd: list[str], env: dict[str, str] | None = None) -> int:
    """Run cmd in the foreground; Ctrl-C and SIGTERM go to it, and we wait for it to finish cleanly."""
    proc: subprocess.Popen[bytes] | None = None
    asked: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        asked.append(signum)
        if proc is not None and proc.poll() is None:
            proc.send_signal(signum)

    # In before the child is: a SIGTERM while it is spawned is forwarded once it exists, never lost (start26).
    previous = signal.signal(signal.SIGTERM, forward)
    try:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env)
        if asked:
            proc.send_signal(asked[0])
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


class StoppedEarly(BaseException):
    """A SIGTERM while dev.py prepares the demo (its venv, its broker), before `tablectl demo` runs."""


def _stopped_early(_signum: int, _frame: FrameType | None) -> None:
    raise StoppedEarly


def cmd_demo(args: list[str]) -> int:
    """`tablectl demo ARGS` on a broker (a private mosquitto if none listens). A Ctrl-C or SIGTERM before the demo runs
    stops here with one line, the private broker stopped, and a shell's status for it (130; the signal's own); once it
    runs, `tablectl demo` takes them itself (its StartSignals) and its status is this one's."""
    previous = signal.signal(signal.SIGTERM, _stopped_early)
    try:
        return _demo(args)
    except (StoppedEarly, KeyboardInterrupt) as stop:
        by = "SIGTERM" if isinstance(stop, StoppedEarly) else "SIGINT"
        say(f"stopped by {by} before `tablectl demo` started: nothing was played or journaled")
        if by == "SIGINT":
            return 130
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGTERM)
        return 128 + signal.SIGTERM  # not reached: the process ends by the signal
    finally:
        signal.signal(signal.SIGTERM, previous)


def _demo(args: list[str]) -> int:
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
    try:
        broker = _private_broker(mosquitto) if mosquitto is not None and not listening(host, port) else None
        if broker is not None or listening(host, port):
            say("watch the table's messages with:  mosquitto_sub -v -t 'tablectl/#'")
        return run_child([str(VENV / "bin" / "tablectl"), "demo", *args])
    finally:
        if broker is not None:
            say("stopping the private mosquitto")
            broker.stop()


def _private_broker(mosquitto: str) -> PrivateBroker | None:
    broker = PrivateBroker(mosquitto)
    if broker.wait_ready():
        return broker
    say(f"mosquitto did not start; its log:\n{broker.log.read_text(errors='replace')}")
    say("continuing without an MQTT broker")
    broker.stop()
    return None


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
    # The whole suite names its 15 slowest tests, so a CI log shows what keeps it near its 15 minutes (README)
    slowest = [] if args else ["--durations=15"]
    workers = [] if own else ["-n", "2", "--dist", "loadgroup"]
    code = run_child([str(VENV_PY), "-m", "pytest", *workers, *slowest, *args], env=bytecode_kept())
    if code == 5:
        return fail("pytest collected no tests (exit code 5); check the arguments and the tests/ directory")
    return code


PACKAGES = ("controller", "drivers", "floor", "link", "leash")


def bytecode_kept() -> dict[str, str]:
    """The tests' environment, with bytecode written and the packages compiled beforehand.

    The suite starts hundreds of Python processes (tables, demos, floors, links, CLI verbs) and each xdist worker
    imports ~330 test modules. Where PYTHONDONTWRITEBYTECODE is set (some CI images set it), every one of them
    compiled what it imported from source, and pytest rewrote every test module's asserts anew in each worker:
    about 8 s of CPU per worker's collection and a quarter of a second per process started (CONTRIBUTING.md)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    compiled = subprocess.run(
        [str(VENV_PY), "-m", "compileall", "-q", "-j", "0", *PACKAGES],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        check=False,
    )
    if compiled.returncode != 0:
        say("compileall could not compile every module (see above); the tests compile what they import")
    return env


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
