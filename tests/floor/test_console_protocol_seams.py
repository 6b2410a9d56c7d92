"""The parts of aiohttp's server protocol that ConsoleProtocol (floor/console/plumbing.py) leans on without aiohttp
offering them as extension points (aio-libs/aiohttp#3287: no supported hook reaches the protocol's own 400s, and none
tells a running handler that its body went bad after its headers). Each test fails naming what changed and what to
fix, before a floor would serve its 400s without the console's headers or wait out request_timeout_s on a bad chunk.
The behaviour itself is held by tests/floor/test_console_bad_requests.py over real sockets."""

from __future__ import annotations

import inspect
import re
import tomllib
from pathlib import Path

import aiohttp
import attr
from aiohttp import http_parser, web, web_protocol
from aiohttp.web_protocol import _ErrInfo
from packaging.requirements import Requirement
from packaging.version import Version

from floor.config import parse_floor_config
from floor.console.plumbing import ConsoleProtocol
from floor.console.server import ConsoleServer
from floor.console.wire import PURE_BODY_WORDS

ROOT = Path(__file__).resolve().parents[2]
FIX = "then adapt ConsoleProtocol in floor/console/plumbing.py (and docs/console.md, 'Threat model') to it"


def test_aiohttp_is_the_tested_minor_and_the_pin_allows_no_other() -> None:
    """pyproject.toml pins aiohttp to the minor these seams were checked against: a new minor is a deliberate bump,
    made with this file and tests/floor/test_console_bad_requests.py green."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [Requirement(d) for d in deps if Requirement(d).name == "aiohttp"]
    installed = Version(aiohttp.__version__)
    assert installed in pin.specifier, f"aiohttp {installed} is installed, outside the pin {pin}: reinstall (dev.py)"
    assert (installed.major, installed.minor) == (3, 14), f"aiohttp {installed}: re-check these seams, {FIX}"
    assert Version("3.15") not in pin.specifier and Version("3.13.99") not in pin.specifier, (
        f"the pin {pin} allows an aiohttp minor other than the tested 3.14: pin it to '>=3.14,<3.15'"
    )


def test_the_constructor_takes_the_manager_the_loop_and_the_consoles_options() -> None:
    params = inspect.signature(web.RequestHandler.__init__).parameters
    options = ConsoleServer(parse_floor_config('[database]\ndsn = "dbname=none"\n')).handler_options()
    missing = [name for name in ("manager", "loop", *options) if name not in params]
    assert missing == [], (
        f"aiohttp's RequestHandler.__init__ no longer takes {missing}: ConsoleProtocol passes them; {FIX}"
    )
    assert params["manager"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, f"RequestHandler's manager moved; {FIX}"
    assert params["loop"].kind is inspect.Parameter.KEYWORD_ONLY, f"RequestHandler's loop moved; {FIX}"


def test_handle_error_is_still_where_the_protocol_builds_its_error_answers() -> None:
    params = list(inspect.signature(web.RequestHandler.handle_error).parameters)
    assert params == ["self", "request", "status", "exc", "message"], (
        f"aiohttp's RequestHandler.handle_error takes {params}, not (request, status, exc, message): ConsoleProtocol "
        f"overrides it to give aiohttp's own 400s the console's headers; {FIX}"
    )
    assert "handle_error" in vars(ConsoleProtocol) and "data_received" in vars(ConsoleProtocol)
    assert "self.handle_error(" in inspect.getsource(web_protocol), (
        f"aiohttp's protocol no longer answers a request it cannot parse through handle_error(); {FIX}"
    )


def test_a_request_it_cannot_parse_is_still_queued_as_an_errinfo() -> None:
    """data_received() learns that a body went bad after its headers from the 400 aiohttp queues for after the running
    handler: the last of `_messages`, an `_ErrInfo` with the parser's message."""
    assert "_messages" in web.RequestHandler.__slots__, f"aiohttp's RequestHandler keeps no `_messages` queue; {FIX}"
    fields = [a.name for a in attr.fields(_ErrInfo)]
    assert fields == ["status", "exc", "message"], f"aiohttp's _ErrInfo has fields {fields}; {FIX}"
    source = inspect.getsource(web.RequestHandler.data_received)
    assert "self._messages.append(" in source and "_ErrInfo(" in source, (
        f"aiohttp's data_received no longer queues a parser error as an _ErrInfo on _messages; {FIX}"
    )


def test_the_pure_parsers_body_problems_are_those_wire_py_knows() -> None:
    """aiohttp's pure-Python parser words a chunk size that is not hex with the client's bytes alone; floor/console/
    wire.py tells it from the parser's other wordings of a bad body (PURE_BODY_WORDS) and names it as the C parser
    does. A wording it does not know would be named so too, wrongly; a new raw one would be sent back."""
    source = inspect.getsource(http_parser.HttpPayloadParser)
    worded = re.findall(r'TransferEncodingError\(\s*f?"([^"{]*)', source)
    unknown = [w for w in worded if not w.startswith(PURE_BODY_WORDS)]
    assert worded and unknown == [], f"aiohttp's pure-Python parser words a bad body {unknown}: add it to wire.py"
    assert source.count("TransferEncodingError(") == len(worded) + 1, (
        f"aiohttp's pure-Python parser no longer words exactly one chunk problem with the client's bytes; {FIX}"
    )
