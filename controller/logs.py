"""structlog set-up: readable lines for a person at a terminal, JSON lines for journald and tools."""

from __future__ import annotations

import logging
import sys

import structlog


class _Stderr:
    """Whatever sys.stderr is when a line is written, not when logging was configured (a caller or a test
    harness may swap it, and a closed stream must not take logging down with it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(*, json: bool | None = None, level: str = "info") -> None:
    """Logs go to stderr so that stdout stays the table's live log (or the JSON a command prints)."""
    if json is None:
        json = not sys.stderr.isatty()
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
