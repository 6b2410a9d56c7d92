"""structlog set-up: readable lines for a person at a terminal, JSON lines for tools, and JSON lines with a
syslog priority prefix for journald.

Under systemd, stderr is a stream to journald, which reads a leading `<N>` as the line's priority
(SyslogLevelPrefix=, on by default), so `journalctl -p warning -u tablectl` shows warnings and worse. The
rest of the line stays JSON for tools (`journalctl -o cat | jq`). Records from the standard library's
logging (asyncio, third-party libraries) go through the same renderer, so they get a priority too.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Literal, TextIO, cast

import structlog
from structlog.types import EventDict, Processor, WrappedLogger

from controller.core.digits import ascii_int
from controller.core.shown import shown, shown_lines

LogFormat = Literal["console", "json", "journal"]
LOG_FORMATS: tuple[LogFormat, ...] = ("console", "json", "journal")

# sd-daemon(3) / syslog(3) priorities by structlog level name.
SYSLOG_PRIORITY = {
    "critical": 2,
    "exception": 3,
    "error": 3,
    "warning": 4,
    "warn": 4,
    "notice": 5,
    "info": 6,
    "debug": 7,
    "notset": 7,
}


class _Stderr:
    """Whatever sys.stderr is when a line is written, not when logging was configured (a caller or a test
    harness may swap it, and a closed stream must not take logging down with it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def connected_to_journald(stream: TextIO | None = None, environ: dict[str, str] | None = None) -> bool:
    """True when `stream` (stderr) is the journald stream systemd set up: $JOURNAL_STREAM names its device and
    inode. Compared rather than trusted, as systemd.exec(5) asks: a child whose stderr was redirected inherits
    the variable but not the stream."""
    env = os.environ if environ is None else environ
    value = env.get("JOURNAL_STREAM", "")
    if not value:
        return False
    try:
        dev, ino = (ascii_int(part) for part in value.split(":"))
        st = os.fstat((stream or sys.stderr).fileno())
    except (ValueError, OSError, AttributeError):  # malformed, or a stream without a descriptor (tests)
        return False
    return (st.st_dev, st.st_ino) == (dev, ino)


def default_format() -> LogFormat:
    if connected_to_journald():
        return "journal"
    return "console" if sys.stderr.isatty() else "json"


class SyslogPrefixedJSON:
    """JSON line with the record's syslog priority in front: `<4>{"event": ..., "level": "warning", ...}`."""

    def __init__(self) -> None:
        self._json = structlog.processors.JSONRenderer()

    def __call__(self, logger: WrappedLogger, method_name: str, event_dict: EventDict) -> str:
        level = str(event_dict.get("level", method_name)).lower()
        line = self._json(logger, method_name, event_dict)
        text = line.decode("utf-8") if isinstance(line, bytes) else line
        return f"<{SYSLOG_PRIORITY.get(level, 6)}>{text}"


# What ConsoleRenderer prints as text, not as a value's repr(): the message and the line's own columns.
_TEXT = frozenset({"event", "timestamp", "level", "logger", "logger_name"})
# Text it prints with its line breaks: a traceback (format_exc_info) and a stack.
_MULTILINE = frozenset({"exception", "stack"})


class _Shown:
    """A value ConsoleRenderer prints by its repr(), which is this text, already escaped."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def terminal_safe(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    """Every control and format character escaped as controller/core/shown.py escapes it, for ConsoleRenderer, which
    prints a str value with no space, quote, `=`, CR or LF as it is, and the message, the keys, a traceback and a
    standard library record's text always so: a table's id, a refused topic, a supervisor's reason or a driver's
    message holding `\\x1b[2J`, U+202E or a C1 CSI cleared, recoloured or reversed the operator's terminal. A str
    value that needs it is shown by its repr() (quoted, escaped), as ConsoleRenderer already shows one with a space;
    another type's repr() is escaped too (a class's own __repr__ need not escape). The JSON and journald renderers
    escape by themselves (ensure_ascii), so this goes before ConsoleRenderer only: before them it would change the
    values tools read."""
    safe: EventDict = {}
    for key, value in event_dict.items():
        if isinstance(value, str):
            if key in _MULTILINE:
                value = shown_lines(value)
            elif key in _TEXT:
                value = shown(value)
            elif not value.isprintable():
                value = _Shown(repr(value))  # repr() escapes exactly what shown() does, and quotes
        elif not isinstance(value, (bool, int, float, type(None), _Shown)):
            text = repr(value)
            if not text.isprintable():
                value = _Shown(shown(text))
        safe[shown(key) if isinstance(key, str) else key] = value
    return safe


def _renderer(fmt: LogFormat) -> list[Processor]:
    """The last processors of the chain: the renderer, and for the console the escaping it needs."""
    if fmt == "journal":
        return [SyslogPrefixedJSON()]
    if fmt == "json":
        return [structlog.processors.JSONRenderer()]
    return [terminal_safe, structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())]


def configure_logging(*, json: bool | None = None, level: str = "info", fmt: LogFormat | None = None) -> None:
    """Logs go to stderr so that stdout stays the table's live log (or the JSON a command prints).

    fmt wins over json (the older switch: True is "json"); neither picks journal under journald, JSON lines
    when stderr is not a terminal, and readable lines at a terminal.
    """
    if fmt is None:
        fmt = "json" if json else default_format()
    renderer = _renderer(fmt)
    threshold = logging.getLevelName(level.upper())
    stamp = structlog.processors.TimeStamper(fmt="iso", utc=True)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            stamp,
            structlog.processors.format_exc_info,
            *renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.PrintLoggerFactory(file=cast(TextIO, _Stderr())),
        cache_logger_on_first_use=False,
    )
    _route_stdlib_logging(renderer, threshold, stamp)


class _StructlogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the root handler we installed, so that configuring again replaces it instead of adding one."""


def _route_stdlib_logging(renderer: list[Processor], threshold: int, stamp: Processor) -> None:
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StructlogHandler)]:
        root.removeHandler(handler)
    handler = _StructlogHandler(cast(Any, _Stderr()))
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                stamp,
                structlog.processors.format_exc_info,
            ],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderer],
        )
    )
    root.addHandler(handler)
    # Libraries log at their own levels; below warning they are noise for an operator unless debugging.
    root.setLevel(threshold if threshold <= logging.DEBUG else max(threshold, logging.WARNING))
