"""Numbers in outside text (a CLI argument, a device id, a stored seat key, an environment variable) are written in
ASCII digits 0-9 and nothing else.

`str.isdigit()` alone is also true for "\\u0661" (an Arabic-Indic one, which int() reads as 1, so `--meter
mega=\\u0661` priced a meter of one cent) and for "\\u00b2" (a superscript two, which int() refuses with ValueError,
so a check that passed it let int() raise where nothing may); int() on its own reads every Unicode decimal digit.
tests/floor/test_ascii_digits.py refuses an isdigit() in the packages that is not paired with isascii() on the same
text.

Drivers never import the controller: they pair `isascii()` with `isdigit()` themselves (drivers/skeleton.py).
"""

from __future__ import annotations


def is_ascii_digits(text: str) -> bool:
    """True when `text` is one or more of 0-9 and nothing else (no sign, space, underscore or other script)."""
    return text.isascii() and text.isdigit()


def ascii_int(text: str) -> int:
    """int(text) for text in ASCII only (int's own sign, spaces and underscores still pass); ValueError otherwise,
    as int() raises it, so a caller's `except ValueError` names the problem and the fix for both."""
    if not text.isascii():
        raise ValueError(f"{text!r} is not written in ASCII digits 0-9")
    return int(text)
