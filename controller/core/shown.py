"""Text from outside as a terminal may show it: MQTT topics, the fields of a table's or a publisher's messages, the
reasons that quote them, key ids a browser enrolled. Printed as received, an ESC sequence clears or rewrites the
operator's screen, a CR overwrites the start of a line, a bidi override (U+202E) reverses what follows, a newline
forges a line of its own. Every character repr() would escape (str.isprintable(): controls, format characters such
as the bidi overrides and zero-width joiners, line and paragraph separators, surrogates, unassigned code points) is
shown as repr shows it, `\\x1b`, `\\r`, `\\u202e`; the rest is left as it was, a backslash too (an escape shown is
then told from one received only by what the terminal does: nothing). JSON printed for a person or a pipe goes
through shown_json(): valid JSON that reads back to the same values, with the same characters as `\\uXXXX` escapes.

Pure text functions (controller.core: no I/O), so the daemons' console log renderer (controller/shell/logs.py) uses
them too, not only the CLIs (controller/cli/shown.py re-exports them).
"""

from __future__ import annotations

import json

_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def shown(text: object) -> str:
    """`text` with every character a terminal could act on escaped as repr() escapes it."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else _escaped(c) for c in s)


def shown_lines(text: str) -> str:
    """shown(), its newlines kept: a traceback or a multi-line message still reads as lines, each escaped."""
    return "\n".join(shown(line) for line in text.split("\n"))


def one_line(text: object) -> str:
    """A library's message of several lines (libpq's: the error, then a tab-indented hint) as one, its lines joined by
    "; ": a CLI's error reads as a sentence, not a hint shown as `\\tIs the server running...`."""
    return "; ".join(part.strip() for part in str(text).strip().split("\n") if part.strip())


def shown_json(value: object, *, sort_keys: bool = False, separators: tuple[str, str] = (",", ":")) -> str:
    """`value` as JSON a terminal cannot act on (one line; `separators` printable ASCII).

    Why not ensure_ascii=True: it escapes every letter beyond ASCII, a dealer's or a player's name in Greek or Thai
    becomes `\\u03b1...`, unreadable to the operator it is printed for. ensure_ascii=False escapes only U+0000-U+001F,
    `"` and `\\`, and leaves DEL, the C1 controls (U+0080-U+009F; U+009B is a CSI on many terminals), the bidi
    overrides, zero-width and other format characters, and U+2028/U+2029 raw. Every character of the encoding outside
    a string is printable ASCII (braces, brackets, separators, digits, literals), so each character left that is not
    printable is inside a string, where `\\uXXXX` (a surrogate pair beyond the BMP) is the same character to any JSON
    reader: json.loads() gives back the same values."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=sort_keys, separators=separators)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _json_escaped(c) for c in text)


def _json_escaped(c: str) -> str:
    code = ord(c)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _escaped(c: str) -> str:
    if c in _SHORT:
        return _SHORT[c]
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
