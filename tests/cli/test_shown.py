"""Outside text is shown escaped (controller/cli/shown.py): what a terminal could act on (ESC sequences, CR, BEL,
bidi overrides, line separators) is written as repr writes it, and printable text, accents and all, is left as is."""

from __future__ import annotations

import ast
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller.cli.shown import shown, shown_json, shown_lines


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


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(JSON_VALUES)
def test_shown_json_is_printable_json_that_reads_back_the_same(value: Any) -> None:
    """What `tablectl journal tail/export` print: one printable line a terminal cannot act on, the same values."""
    out = shown_json(value)
    assert out.isprintable()
    assert json.loads(out) == value


def test_shown_json_escapes_controls_and_format_characters_and_keeps_letters() -> None:
    value = {"reason": "\x1b[2J\r\u202e\x85\x9b\x7f\u2028\U000e0001", "by": "Δημήτρης ดีลเลอร์"}
    assert shown_json(value) == (
        '{"reason":"\\u001b[2J\\r\\u202e\\u0085\\u009b\\u007f\\u2028\\udb40\\udc01","by":"Δημήτρης ดีลเลอร์"}'
    )


def test_shown_lines_keeps_the_line_breaks_only() -> None:
    assert (
        shown_lines("Traceback:\n  x\x1b[2J\r\nValueError: \u202e") == "Traceback:\n  x\\x1b[2J\\r\nValueError: \\u202e"
    )
