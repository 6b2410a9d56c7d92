"""The console's Reports page: `tablectl report`'s shift, gaming-day and period reports (floor/report/) for a logged-in
supervisor, as the same HTML with its charts, or its CSV to download.

The report is floor/report's own: the period from floor/days.py, the figures from floor.report.figures.gather (its
SQL), the page from floor.report.html.to_html and the CSV from floor.report.render.to_csv; nothing is copied here.
It is made and drawn in a worker thread on a connection of its own (psycopg blocks; the charts take time too), at
most REPORTS_AT_ONCE at a time, so the event loop (the live stream, the other requests) never waits on it. A
request that names no period, a day that is no date, a shift the config does not list, a range whose end is before
its start: a 400 naming the problem and how to put it right, before the archive is asked anything.
"""

from __future__ import annotations

import asyncio
import html
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date

import structlog
from aiohttp import web

from controller.core.shown import one_line
from floor.config import FloorConfig
from floor.console.auth import Session
from floor.console.plumbing import http_error
from floor.console.records import ArchiveUnavailable, Conn, ConsoleRecords
from floor.days import day_period, range_period, shift_period
from floor.report.build import build
from floor.report.figures import Scope, gather
from floor.report.html import to_html
from floor.report.render import to_csv
from floor.rounds import SummaryPending

log = structlog.get_logger("tablectl.console")
REPORTS_AT_ONCE = 2  # of the default executor's threads, which the console's other archive reads share
REPORT_PATH = "/api/reports/report"
# The report's page is shown in a frame of the console: its own inline style sheet and SVG charts, and no script.
REPORT_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "frame-ancestors 'self'; form-action 'none'; base-uri 'none'",
    "X-Frame-Options": "SAMEORIGIN",
}
ROLE = "supervisor"
_DATE = re.compile("[0-9]{4}-[0-9]{2}-[0-9]{2}")
_FILE = re.compile("[^A-Za-z0-9_.-]")  # what a file name in a Content-Disposition may not carry as it is
_NAME = re.compile("[A-Za-z0-9_.:-]{1,64}")  # a table id or a chapter as the floor's configs spell them
FORMATS = ("html", "csv")


class ReportRequestError(ValueError):
    """A report asked for in a way that cannot be answered: the text names the problem and the fix."""


@dataclass(frozen=True, slots=True)
class Asked:
    scope: Scope
    format: str
    name: str  # the period as a file name's part: day-2026-11-21, shift-swing-2026-11-21, 2026-11-01-to-2026-11-30


def _date(query: Mapping[str, str], key: str) -> date:
    text = query.get(key, "")
    try:
        if _DATE.fullmatch(text):  # fromisoformat alone takes 20261121 and 2026-W47-6 too
            return date.fromisoformat(text)
    except ValueError:
        pass
    raise ReportRequestError(f"{key} {text[:40]!r} is not a date: write YYYY-MM-DD, e.g. 2026-11-21")


def _name(query: Mapping[str, str], key: str, example: str) -> str | None:
    text = query.get(key) or None
    if text is not None and not _NAME.fullmatch(text):
        raise ReportRequestError(f"{key} {text[:40]!r} is not a {key} name: letters, digits, . _ : -, e.g. {example}")
    return text


def parse_request(query: Mapping[str, str], config: FloorConfig) -> Asked:
    """What is asked for, as `tablectl report` reads its flags (floor/cli/report.py): day, or shift and day, or from
    and to; a table or a game; html or csv."""
    gd = config.gaming_day
    if query.get("from") or query.get("to"):
        if query.get("day") or query.get("shift"):
            raise ReportRequestError("a period takes from and to only: leave day and shift empty")
        first, last = _date(query, "from"), _date(query, "to")
        if last < first:
            raise ReportRequestError(f"to {last} is before from {first}: give the earlier gaming day as from")
        period, name = range_period(first, last, gd), f"{first}-to-{last}"
    elif query.get("day"):
        day = _date(query, "day")
        if query.get("shift"):
            try:
                shift = config.shift(query["shift"][:64])
            except KeyError as err:
                raise ReportRequestError(f"{err.args[0]}: pick one of those, or none for the whole day") from None
            period, name = shift_period(day, shift, gd), f"shift-{shift.name}-{day}"
        else:
            period, name = day_period(day, gd), f"day-{day}"
    else:
        raise ReportRequestError("say which period: a day (YYYY-MM-DD), a shift and its day, or from and to")
    table, game = _name(query, "table", "ms-table-01"), _name(query, "game", "655a")
    if table is not None and game is not None:
        raise ReportRequestError("a report is of one table or of one game's tables: give table or game, not both")
    fmt = query.get("format") or "html"
    if fmt not in FORMATS:
        raise ReportRequestError(f"format {fmt[:20]!r} is not one the console gives: html or csv")
    return Asked(Scope(period, table, game), fmt, name + (f"-{table}" if table else f"-{game}" if game else ""))


class ReportDesk:
    """The Reports page's two requests: what can be asked (shifts, tables, games) and a report."""

    def __init__(
        self,
        config: FloorConfig,
        records: ConsoleRecords,
        session: Callable[[web.Request], Session],
        tables: Callable[[], dict[str, str | None]],
    ) -> None:
        self.config = config
        self.records = records  # its connection asked for first and cut at the console's stop, as every request's
        self.session = session
        self.tables = tables  # table id -> its chapter, as the floor knows them now
        self.running = asyncio.Semaphore(REPORTS_AT_ONCE)

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/api/reports", self.options)
        app.router.add_get("/api/reports/check", self.check)
        app.router.add_get(REPORT_PATH, self.report)
        # After the console's own headers (security_headers, added before): a report's page is framed and styled.
        app.on_response_prepare.append(report_headers)

    def _supervisor(self, request: web.Request) -> Session:
        s = self.session(request)
        if s.role != ROLE:
            raise http_error(
                403, f"reports are a supervisor's; this session is a {s.role}: log in with a supervisor's key"
            )
        return s

    async def options(self, request: web.Request) -> web.Response:
        self._supervisor(request)
        tables = self.tables()
        return web.json_response(
            {
                "shifts": [s.name for s in self.config.shifts],
                "tables": sorted(tables),
                "games": sorted({c for c in tables.values() if c}),
            }
        )

    def _asked(self, request: web.Request) -> Asked:
        try:
            return parse_request(request.query, self.config)
        except ReportRequestError as err:
            raise http_error(400, str(err)) from None

    async def check(self, request: web.Request) -> web.Response:
        """The request read as report() reads it, the archive not asked: the page checks before it frames the
        report, so that a mistake is told in the page, not as an error's JSON in the frame."""
        self._supervisor(request)
        return web.json_response({"report": self._asked(request).name})

    async def report(self, request: web.Request) -> web.Response:
        s = self._supervisor(request)
        asked = self._asked(request)
        started = time.monotonic()
        async with self.running:
            try:
                text = await self.records.run(lambda conn: self._make(conn, asked))
            except (ArchiveUnavailable, SummaryPending) as err:
                log.warning("report failed", key_id=s.key_id, report=asked.name, error=one_line(err))
                if isinstance(err, SummaryPending):  # the archive answered: it takes the row (unreachable: the log)
                    await self._audit(request, s, asked, "failed", time.monotonic() - started, one_line(err))
                return failed_page(asked, err)
        seconds = time.monotonic() - started
        log.info("report served", key_id=s.key_id, report=asked.name, format=asked.format, seconds=round(seconds, 3))
        await self._audit(request, s, asked, "served", seconds)
        if asked.format == "csv":
            disposition = f'attachment; filename="{_FILE.sub("_", self.config.name)}-{asked.name}.csv"'
            return web.Response(
                text=text, content_type="text/csv", charset="utf-8", headers={"Content-Disposition": disposition}
            )
        return web.Response(text=text, content_type="text/html", charset="utf-8")

    async def _audit(
        self, request: web.Request, s: Session, asked: Asked, outcome: str, seconds: float, problem: str | None = None
    ) -> None:
        """The report in console_audit (action `report`): who, which period and scope, the format, when (the row's
        `at`). A report only reads the archive, so one whose row cannot be written (the archive gone meanwhile) is
        still served; the floor's log keeps it then, as the `report served` line did alone before."""
        scope, period = asked.scope, asked.scope.period
        what = {
            "report": asked.name,
            "format": asked.format,
            "period": {
                "label": period.label,
                "start": period.start.isoformat(),
                "end": period.end.isoformat(),
                "first_day": period.first_day.isoformat(),
                "last_day": period.last_day.isoformat(),
            },
            "table": scope.table_id,
            "game": scope.chapter,
            "seconds": round(seconds, 3),
        }
        whose = f"table {scope.table_id}" if scope.table_id else f"game {scope.chapter}" if scope.chapter else "floor"
        said = f"{asked.format} report of the {whose}, {period.label}" + (f": {problem}" if problem else "")
        try:
            await self.records.audit(
                request, "report", outcome, key_id=s.key_id, role=s.role, table_id=scope.table_id,
                reason=said[:1000], reply=what,
            )  # fmt: skip
        except ArchiveUnavailable as err:
            log.error("report not audited: the archive did not take its row", key_id=s.key_id, report=asked.name,
                      outcome=outcome, problem=err.problem)  # fmt: skip

    def _make(self, conn: Conn, asked: Asked) -> str:
        """The report made and rendered, in the worker thread: drawing the charts takes time too."""
        report = build(gather(conn, asked.scope, self.config.report.work_mem), asked.scope, self.config.name)
        return to_csv(report) if asked.format == "csv" else to_html(report)


ARCHIVE_FIX = (
    "check that the floor's archive (its PostgreSQL) is up and reachable from the floor "
    "(`tablectl floor --config FLOOR.toml status`, the floor's log), then make the report again"
)


def failed_page(asked: Asked, err: ArchiveUnavailable | SummaryPending) -> web.Response:
    """A report that failed after its check passed (the archive went down between the two): a page the console's
    frame shows as it is, naming the problem and the fix, where an error's JSON would have been shown raw."""
    if isinstance(err, SummaryPending):
        problem, fix = "the archive's round summary is not ready", str(err)
    else:
        problem, fix = err.problem, ARCHIVE_FIX
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Report not made</title>'
        "<style>body{font-family:sans-serif;margin:2em}h1{color:#a00;font-size:1.3em}</style></head><body>"
        f'<h1>The report {html.escape(asked.name)} could not be made</h1><p class="problem">Problem: '
        f'{html.escape(problem)}</p><p class="fix">Fix: {html.escape(fix)}</p></body></html>'
    )
    # 503 as a page, for the frame and for the CSV's link alike: a browser shows it rather than saving it as a file.
    return web.Response(status=503, text=page, content_type="text/html", charset="utf-8")


async def report_headers(request: web.Request, response: web.StreamResponse) -> None:
    """After the console's own headers: a report's page keeps the ones that let the console frame it and style it."""
    if request.path == REPORT_PATH and response.content_type == "text/html":
        response.headers.update(REPORT_HEADERS)
