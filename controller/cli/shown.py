"""Text from outside as a terminal may show it: MQTT topics, the fields of a table's or a publisher's messages, the
reasons that quote them, key ids a browser enrolled. Printed as received, an ESC sequence clears or rewrites the
operator's screen, a CR overwrites the start of a line, a bidi override (U+202E) reverses what follows, a newline
forges a line of its own. Every character repr() would escape (str.isprintable(): controls, format characters such
as the bidi overrides and zero-width joiners, line and paragraph separators, surrogates, unassigned code points) is
shown as repr shows it, `\\x1b`, `\\r`, `\\u202e`; the rest is left as it was, a backslash too (an escape shown is
then told from one received only by what the terminal does: nothing). Text only: JSON output escapes them itself
(json.dumps, ensure_ascii), and stays valid JSON.
"""

from __future__ import annotations

_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def shown(text: object) -> str:
    """`text` with every character a terminal could act on escaped as repr() escapes it."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else _escaped(c) for c in s)


def _escaped(c: str) -> str:
    if c in _SHORT:
        return _SHORT[c]
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
