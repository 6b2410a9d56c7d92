"""Logs: JSON lines with a syslog priority prefix under journald (so `journalctl -p` filters), plain JSON
lines for tools, readable lines at a terminal. The daemon's real stderr is read from a subprocess; whether
stderr is journald's stream is decided the way systemd.exec(5) says, by $JOURNAL_STREAM's device:inode."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from controller.shell.logs import connected_to_journald

# Logs one line per level, through structlog and through the standard library (asyncio, libraries).
EMIT = """
import logging, sys
import structlog
from controller.shell.logs import configure_logging
fmt = sys.argv[1] if len(sys.argv) > 1 else None
configure_logging(fmt=fmt, level="debug")
log = structlog.get_logger("tablectl.test")
log.debug("d", n=1)
log.info("i", n=2)
log.warning("w", n=3)
log.error("e", n=4)
log.critical("c", n=5)
try:
    1 / 0
except ZeroDivisionError:
    log.exception("x", n=6)
logging.getLogger("asyncio").error("stdlib e")
logging.getLogger("somelib").warning("stdlib w")
logging.getLogger("somelib").info("stdlib i")
"""

EXPECTED_PRIORITY = {"d": 7, "i": 6, "w": 4, "e": 3, "c": 2, "x": 3, "stdlib e": 3, "stdlib w": 4, "stdlib i": 6}


def _emit(tmp_path: Path, *args: str, env: dict[str, str] | None = None, stderr_file: Path | None = None) -> str:
    script = tmp_path / "emit.py"
    script.write_text(EMIT)
    base = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
    if stderr_file is None:
        return subprocess.run(
            [sys.executable, str(script), *args],
            env=base | (env or {}),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stderr
    with stderr_file.open("w") as f:
        subprocess.run([sys.executable, str(script), *args], env=base | (env or {}), stderr=f, timeout=60, check=True)
    return stderr_file.read_text()


def _prefixed(stderr: str) -> dict[str, tuple[int, dict[str, object]]]:
    out = {}
    for line in stderr.splitlines():
        if not line.startswith("<"):
            continue  # a traceback's continuation lines are inside the JSON, so none should be here
        prio, _, body = line[1:].partition(">")
        record = json.loads(body)
        out[str(record["event"])] = (int(prio), record)
    return out


def test_journal_format_prefixes_each_level_with_its_syslog_priority(tmp_path: Path) -> None:
    err = _emit(tmp_path, "journal")
    lines = err.splitlines()
    assert all(line.startswith("<") for line in lines), lines
    got = _prefixed(err)
    assert {event: prio for event, (prio, _) in got.items()} == EXPECTED_PRIORITY
    assert got["w"][1]["n"] == 3 and got["w"][1]["level"] == "warning"
    assert "ZeroDivisionError" in str(got["x"][1]["exception"])
    assert got["stdlib e"][1]["logger"] == "asyncio"


def test_journald_is_detected_by_the_stream_it_gave_us(tmp_path: Path) -> None:
    # systemd sets JOURNAL_STREAM to the device:inode of the stream it connected stderr to; a file stands in
    # for that stream here (what matters is that the numbers match the descriptor's).
    err_file = tmp_path / "stderr.log"
    err_file.touch()
    st = err_file.stat()
    err = _emit(tmp_path, env={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}, stderr_file=err_file)
    assert _prefixed(err)["w"][0] == 4
    # Inherited by a process whose stderr went elsewhere: not journald, so plain JSON lines (not a terminal).
    err = _emit(tmp_path, env={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino + 1}"})
    records = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert [r["event"] for r in records][:3] == ["d", "i", "w"]
    assert not [line for line in err.splitlines() if line.startswith("<")]


def test_json_and_console_formats(tmp_path: Path) -> None:
    err = _emit(tmp_path, "json")
    first = json.loads(err.splitlines()[0])
    assert first["event"] == "d" and first["level"] == "debug"
    console = _emit(tmp_path, "console")
    assert not console.lstrip().startswith(("{", "<"))
    assert "[warning  ] w" in console and "n=3" in console


@pytest.mark.parametrize("value", ["", "garbage", "1:2:3", "12:x"])
def test_a_malformed_journal_stream_is_not_journald(value: str) -> None:
    assert not connected_to_journald(sys.stderr, {"JOURNAL_STREAM": value})


def test_cli_takes_log_format(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "--log-format",
            "journal",
            "settle",
            "--config",
            str(tmp_path / "missing.toml"),
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "cannot read config" in proc.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "controller.cli", "--log-format", "syslog", "demo"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "invalid choice: 'syslog'" in bad.stderr


HOSTILE = "clear\x1b[2J back\r over\u202edesrever c1\x9b[31m sep\u2028 bell\x07"
HOSTILE_EMIT = """
import logging, sys
import structlog
from controller.shell.logs import configure_logging
configure_logging(level="info")  # no format given: a terminal on stderr picks the console
log = structlog.get_logger("tablectl.test")
hostile = sys.argv[1]
log.warning("refused", reason=hostile, short="\\x1b[2J\\u202e", fields={"note": hostile}, **{"k" + hostile: 1})
log.warning(hostile)
try:
    raise ValueError(hostile)
except ValueError:
    log.exception("failed", n=6)
logging.getLogger("somelib").warning("stdlib %s", hostile)
print("DONE", file=sys.stderr, flush=True)
"""


def test_console_logs_at_a_terminal_escape_what_the_terminal_would_act_on(tmp_path: Path) -> None:
    """At a real pseudo-terminal (os.openpty(), output post-processing off so a CR is the value's own) the console
    renderer's lines escape the control and format characters of every value, key, message, traceback and standard
    library record: before, ConsoleRenderer printed `\\x1b[2J` (clear the screen), CR, U+202E and the C1 CSI raw.
    The renderer's own colour codes stay (they are ours); a traceback stays lines."""
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE_EMIT)
    leader, follower = os.openpty()
    attrs = termios.tcgetattr(follower)
    attrs[1] &= ~termios.OPOST  # no \n -> \r\n: any CR read is one the logs wrote
    termios.tcsetattr(follower, termios.TCSANOW, attrs)
    env = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
    proc = subprocess.Popen([sys.executable, str(script), HOSTILE], stderr=follower, stdin=subprocess.DEVNULL, env=env)
    os.close(follower)
    out = b""
    try:
        while b"DONE" not in out:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
    text = out.decode("utf-8")
    assert "DONE" in text, text
    for raw in ("\x1b[2J", "\r", "\u202e", "\x9b", "\u2028", "\x07"):
        assert raw not in text, (raw, text)
    escaped = "clear\\x1b[2J back\\r over\\u202edesrever c1\\x9b[31m sep\\u2028 bell\\x07"
    # The message, the key, the exception's and the stdlib record's as text; reason= and fields= by their repr().
    assert text.count(escaped) == 6, text
    assert f"reason={HOSTILE!r}" in _plain(text) and "short='\\x1b[2J\\u202e'" in _plain(text), text
    assert "Traceback (most recent call last):\n" in text and f"ValueError: {escaped}\n" in text
    assert "\x1b[" in text  # the renderer's own colours at a terminal


def _plain(text: str) -> str:
    """The text without the console renderer's colour codes (ESC [ ... m)."""
    return re.sub("\x1b\\[[0-9;]*m", "", text)
