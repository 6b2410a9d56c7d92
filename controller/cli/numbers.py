"""Argument types for numbers on `tablectl`'s command line, shared by the controller's, the floor's and the link's
verbs: ASCII digits only, within bounds, and an error that names the option, what was given and what to give.

int() and float() read every Unicode decimal digit ("\\u0665", a fullwidth "\\uff15"), surrounding spaces (also
U+3000) and underscores ("1_000"), so `--rounds \\uff15` played five rounds and `--pace " 5 "` waited 5 s; a CLI
argument is outside text and is written in ASCII (controller.core.digits). A value too long to be meant is shown cut
short, so the one line of the error stays one readable line. This module imports only argparse and re, so a verb's
parser costs nothing to build.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

_WHOLE = re.compile(r"[0-9]{1,30}")
_DECIMAL = re.compile(r"[0-9]{1,15}(\.[0-9]{1,15})?|\.[0-9]{1,15}")
_HOST_PORT = re.compile(r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-]+):([0-9]{1,5})")


def shown(text: str, width: int = 40) -> str:
    """`text` as an error quotes it: repr, and cut short when it is too long to be meant."""
    return repr(text) if len(text) <= width else f"{text[:width]!r}... ({len(text)} characters)"


def whole(option: str, lo: int, hi: int, example: str) -> Callable[[str], int]:
    """An argparse type: a whole number from lo to hi, in ASCII digits."""

    def parse(text: str) -> int:
        if not _WHOLE.fullmatch(text):
            raise argparse.ArgumentTypeError(
                f"{shown(text)} is not a whole number in ASCII digits: give e.g. {example}"
            )
        n = int(text)
        if n < lo:
            raise argparse.ArgumentTypeError(f"{option} {n}: give {lo} or more, e.g. {example}")
        if n > hi:
            raise argparse.ArgumentTypeError(f"{option} {n}: give at most {hi:,}, e.g. {example}")
        return n

    return parse


def seconds(option: str, lo: float, hi: float, example: str, *, above: bool = False) -> Callable[[str], float]:
    """An argparse type: a number of seconds from lo (or, `above`, more than lo) to hi, in ASCII digits."""

    def parse(text: str) -> float:
        if not _DECIMAL.fullmatch(text):
            raise argparse.ArgumentTypeError(
                f"{shown(text)} is not a number of seconds in ASCII digits (0-9 and a '.'): give e.g. {example}"
            )
        v = float(text)
        if (v <= lo if above else v < lo) or v > hi:
            least = f"more than {lo:g}" if above else f"{lo:g}"
            raise argparse.ArgumentTypeError(
                f"{option} {text} is outside {least} to {hi:g} seconds: give e.g. {example}"
            )
        return v

    return parse


def host_port(text: str) -> str:
    """An argparse type: HOST:PORT to listen on, the port 0 (any free one) to 65535 in ASCII digits; an IPv6 host in
    brackets."""
    m = _HOST_PORT.fullmatch(text)
    if m is None or int(m.group(2)) > 65535:
        raise argparse.ArgumentTypeError(
            f"{shown(text)} is not HOST:PORT with a port from 0 (any free one) to 65535: "
            "give e.g. 127.0.0.1:8480 or [::1]:8443"
        )
    return text
