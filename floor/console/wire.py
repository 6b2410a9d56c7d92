"""What the console makes of the bytes aiohttp's parser reads for it (floor/console/plumbing.py's ConsoleProtocol):
each request in a feed of its own where that is safe, and the parser's wording of a problem without the client's
bytes, whichever of aiohttp's two parsers reads them (its C parser, or the pure-Python one under
AIOHTTP_NO_EXTENSIONS=1 or where the C parser is not built; tests/floor/test_console_wire.py runs the console under
both)."""

from __future__ import annotations

import re

from aiohttp import http_parser
from aiohttp.http_exceptions import HttpProcessingError, InvalidURLError, TransferEncodingError

# aiohttp's pure-Python parser (AIOHTTP_NO_EXTENSIONS=1, or a platform without its C parser) words a chunk size that
# is not hex with the client's bytes alone; its other problems of a body begin with one of these.
PURE_PARSER = http_parser.HttpRequestParser is http_parser.HttpRequestParserPy
PURE_BODY_WORDS = (
    "Unexpected LF in chunk-extension",
    "Bad chunk-size line ending",
    "Bad trailer line ending",
    "Chunk size mismatch",
    "Not enough data",
    "Got more than",
    "Can not decode",
)

# aiohttp's wordings that quote its own words, not the client's bytes: kept whole (the cut below would stop at the ').
WHOLE = ("Missing 'Host' header",)


def problem_in(error: str | BaseException, body: bool = False) -> str:
    """aiohttp's wording of what it could not parse, up to where it quotes the client's bytes (b'...' or '...'),
    which are neither sent back nor logged: printable ASCII, at most 160 characters. `body`: a problem of a body,
    which the pure-Python parser may word with the client's bytes alone (PURE_PARSER): named as the C parser names it
    instead, as is its URL refused (worded with the client's path alone)."""
    if PURE_PARSER and isinstance(error, InvalidURLError):
        return "Invalid URL"
    message = error.message if isinstance(error, HttpProcessingError) else str(error)
    if message.startswith(WHOLE):
        return message.split("\n", 1)[0][:160]
    # str() of an HttpProcessingError, as a payload error holds it
    message = re.sub(r"^[0-9]{3}, message:[ \t\r\n]*", "", message)
    problem = re.split(r"""[: \t]*b?['"]""", message.split("\n", 1)[0], maxsplit=1)[0].strip().rstrip(":")
    if PURE_PARSER and (body or isinstance(error, TransferEncodingError)) and not problem.startswith(PURE_BODY_WORDS):
        return "Invalid character in chunk size"
    return "".join(ch if " " <= ch <= "~" else "?" for ch in problem)[:160]


# A request head that frames a body, or after which the client sends nothing more: requests_apart() stops there.
FRAMED = re.compile(rb"(?im)^(?:content-length|transfer-encoding|upgrade)[ \t]*:|^connection[ \t]*:[^\r\n]*\bclose\b")


def requests_apart(data: bytes) -> list[bytes]:
    """`data` cut after each request head that frames no body (a GET's), so that aiohttp's parser reads each such
    request in a feed of its own. Its parser drops every request parsed in a feed that ends in an error (and both of
    its parsers do): a good GET pipelined with a malformed request in one packet went unanswered, the client getting
    the 400 alone. Cutting is always safe (the parser reads a stream in any pieces); a head with a body, or one saying
    `Connection: close`, is fed whole with what follows, as before, so its body's problems are answered as before."""
    pieces, start = [], 0
    while (end := data.find(b"\r\n\r\n", start) + 4) > 3 and end < len(data) and not FRAMED.search(data, start, end):
        pieces.append(data[start:end])
        start = end
    pieces.append(data[start:])
    return pieces
