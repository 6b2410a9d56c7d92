"""JSON read strictly, as a signed envelope or an audited body must be read: a key given twice, NaN or Infinity,
or a number longer than the caller takes is a ValueError saying so.

Two values for one key could be read one way by the signer's library and another way here, so two readers would
judge different envelopes; NaN and Infinity are not JSON (RFC 8259) and the canonical form has none; and past
4,300 digits Python refuses with advice for its own programmers (sys.set_int_max_str_digits), not for the sender.
Nesting past the parser's depth stays a RecursionError: each caller words that one itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NoReturn


def _no_key_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k!r} is given twice")
        out[k] = v
    return out


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _bounded_int(max_digits: int, reader: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        digits = len(text.lstrip("-"))
        if digits > max_digits:
            raise ValueError(f"a number of {digits} digits; {reader} takes at most {max_digits}")
        return int(text)

    return parse


def loads(text: str | bytes, *, max_digits: int = 4300, reader: str = "tablectl") -> Any:
    """`text` as JSON, strictly (above); `reader` names who refuses a number of more than `max_digits` digits."""
    return json.loads(
        text,
        object_pairs_hook=_no_key_twice,
        parse_constant=_no_constant,
        parse_int=_bounded_int(max_digits, reader),
    )
