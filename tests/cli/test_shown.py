"""Outside text is shown escaped (controller/cli/shown.py): what a terminal could act on (ESC sequences, CR, BEL,
bidi overrides, line separators) is written as repr writes it, and printable text, accents and all, is left as is."""

from __future__ import annotations

import ast

from hypothesis import given
from hypothesis import strategies as st

from controller.cli.shown import shown


def test_what_a_terminal_acts_on_is_escaped_as_repr_escapes_it() -> None:
    assert shown("\x1b[2Jt1\r\x07\u202eevil\u2028x\x9b") == "\\x1b[2Jt1\\r\\x07\\u202eevil\\u2028x\\x9b"
    assert shown("a\nforged line\ttab\x00") == "a\\nforged line\\ttab\\x00"
    assert shown("table ñ 7 €, seat 3 \\x1b") == "table ñ 7 €, seat 3 \\x1b"  # printable: as it was
    assert shown(42) == "42"


@given(st.text())
def test_nothing_unprintable_is_left_and_the_text_is_told_back(text: str) -> None:
    out = shown(text)
    assert out.isprintable()
    if "\\" not in text and "'" not in text:  # repr's own quoting aside, the escapes are repr's: read back whole
        assert ast.literal_eval(f"'{out}'") == text
