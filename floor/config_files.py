"""Reading a service's TOML config into its pydantic model, every problem at once as `field: problem: fix`: FLOOR.toml
(floor/config.py) and LINK.toml (link/config.py) word their errors alike through it. Apart from the floor's sections
so that each file stays one subject: this knows no setting of either service.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import TypeVar, get_args

from pydantic import BaseModel, ValidationError

from controller.config.files import CONFIG_MAX_BYTES, FileRefused, read_bounded

M = TypeVar("M", bound=BaseModel)


def _field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def config_problems(
    err: ValidationError, model: type[BaseModel], fixes: dict[str, str], *, list_known: bool = True
) -> list[str]:
    """Every problem of a config file as `field: problem: fix`; shared by FLOOR.toml and LINK.toml (link/config.py),
    so the two services word their config errors alike. `fixes` is keyed by the field's path, or by its last part
    under a list entry (`shifts[1].start` looks up "start"); `list_known` names a section's settings after an unknown
    one that resembles none of them."""
    lines = []
    for e in err.errors():
        where = _field(tuple(e["loc"]))
        key = where.split("]")[-1].lstrip(".") if "[" in where else where
        fix = fixes.get(key, "")
        if e["type"] == "extra_forbidden":
            name = str(e["loc"][-1])
            known = known_fields(model, tuple(e["loc"][:-1]))
            close = difflib.get_close_matches(name, known, n=1)
            if close:
                fix = f"did you mean {close[0]!r}?"
            else:
                fix = f"remove it; known here: {', '.join(sorted(known))}" if list_known else "remove it"
            lines.append(f"{where}: unknown setting: {fix}")
            continue
        if e["type"] == "missing":
            lines.append(f"{where}: missing: {fix or 'add it'}")
            continue
        message = str(e["msg"]).removeprefix("Value error, ")
        lines.append(f"{where}: {message}" + (f": {fix}" if fix else ""))
    return lines


def known_fields(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The settings of the section at `loc` (list entries' indices skipped); [] where `loc` is no section."""
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        args = get_args(field.annotation) if field else ()
        inner = args[0] if args else (field.annotation if field else None)
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return []
        model = inner
    return list(model.model_fields)


def parse_config(
    text: str,
    source: str,
    model: type[M],
    error: type[ValueError],
    fixes: dict[str, str],
    *,
    list_known: bool = True,
) -> M:
    """A TOML config validated into `model`; `error` lists every problem with its fix (config_problems)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise error(f"{source}: not valid TOML: {err}") from None
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        problems = "\n  ".join(config_problems(err, model, fixes, list_known=list_known))
        raise error(f"{source}: {len(err.errors())} problem(s):\n  {problems}") from None


def read_config(path: Path, what: str, error: type[ValueError]) -> str:
    """The text of a config file, or `error` saying why `what` cannot be read."""
    try:
        # Bounded, regular files only: `--config /dev/zero` read until memory ran out, a FIFO waited for ever.
        return read_bounded(path, CONFIG_MAX_BYTES).decode("utf-8")
    except FileRefused as err:
        raise error(f"cannot read {what} {err.path}: {err.problem}; give the path of its TOML file") from None
    except UnicodeDecodeError as err:
        raise error(f"{path} is not UTF-8 text (byte offset {err.start}): save {what} as UTF-8") from None
