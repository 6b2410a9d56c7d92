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


def _renderer(fmt: LogFormat) -> Processor:
    if fmt == "journal":
        return SyslogPrefixedJSON()
    if fmt == "json":
        return structlog.processors.JSONRenderer()
    return structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())


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
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.PrintLoggerFactory(file=cast(TextIO, _Stderr())),
        cache_logger_on_first_use=False,
    )
    _route_stdlib_logging(renderer, threshold, stamp)


class _StructlogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the root handler we installed, so that configuring again replaces it instead of adding one."""


def _route_stdlib_logging(renderer: Processor, threshold: int, stamp: Processor) -> None:
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
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root.addHandler(handler)
    # Libraries log at their own levels; below warning they are noise for an operator unless debugging.
    root.setLevel(threshold if threshold <= logging.DEBUG else max(threshold, logging.WARNING))
