"""Outside text (a CLI argument, a scenario's deck, an environment variable) is spaced with ASCII whitespace only.

`str.strip()` and `str.split()` with no argument take every Unicode space (U+3000 ideographic, U+00A0 no-break,
U+2000..U+200A, the separators U+001C..U+001F...), so `--meter mega=\\u3000100` was read as 100 cents and a deck
"As\\u3000Kd" as two cards where a person typing plain text means one thing and a pasted document another. These
take exactly the characters re.ASCII's \\s takes (the ones the odds and trigger patterns allow); what is left is then
validated as a number, keyword or card, so a non-ASCII space is refused there with that field's own message.
"""

from __future__ import annotations

import re

ASCII_SPACE = " \t\n\r\f\v"
_RUN = re.compile(f"[{re.escape(ASCII_SPACE)}]+")


def strip_ascii(text: str) -> str:
    """`text` without leading and trailing ASCII whitespace; any other space is kept (and so refused downstream)."""
    return text.strip(ASCII_SPACE)


def split_ascii(text: str) -> list[str]:
    """The words of `text` split on runs of ASCII whitespace, as str.split() would split plain ASCII text."""
    inner = strip_ascii(text)
    return _RUN.split(inner) if inner else []


def first_line(text: str) -> str:
    """`text` up to its first "\\n", without a "\\r" before it (a file saved on Windows): a secret file's first line,
    every other character kept. str.splitlines() also ends a line at U+001C..U+001E, U+0085, U+2028 and U+2029, and
    str.strip() takes U+00A0 and U+3000 off its ends, all of which a password may hold."""
    return text.split("\n", 1)[0].removesuffix("\r")
