"""No bare task or thread in floor/ or link/: each long-lived one starts through floor/tasks.py's ServiceTasks, which
reports its end (docs/supervision.md, "The floor and the link"). A new `asyncio.create_task`, `ensure_future`,
`TaskGroup`, `Thread` or `ThreadPoolExecutor` elsewhere fails here until it goes through the helper or joins the
allow-list below with its reason. Read with ast (the code is not imported): a comment or a string naming them
does not count, an alias (`from asyncio import create_task`) does."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPAWNERS = frozenset({"create_task", "ensure_future", "TaskGroup", "Thread", "ThreadPoolExecutor", "Timer"})
HELPER = "floor/tasks.py"

# (file, what it calls, how many times) -> why it is fine without the helper.
ALLOWED: dict[tuple[str, str, int], str] = {
    ("floor/writing.py", "create_task", 2): "_next_batch races a queue get against the stop: both awaited in place "
    "and cancelled in its `finally`, so neither outlives the call",
    ("floor/stmt_stop.py", "ensure_future", 2): "run_stoppable races a worker's thread (the older days' summary, their "
    "ts index build) against the stop: the work awaited in place (its error is the floor-older-days task's), the "
    "stop's wait cancelled in its `finally`, so neither outlives the call",
    ("link/database.py", "ThreadPoolExecutor", 1): "the link's one database thread: every call on it is awaited by "
    "its caller, and a call that does not return is said by the probe (link/service.py, DB_STUCK_S)",
    ("link/database.py", "create_task", 1): "the link's one reconnect at a time (_reconnected): every call of an "
    "outage awaits it through a shield, its failure is each caller's, and a done callback reads it when every caller "
    "was cancelled; it cannot outlive the calls that wait on it unnoticed",
    ("floor/cli/demo.py", "create_task", 3): "`tablectl demo --floor`: the floor service's own run() (awaited, its "
    "error ends the demo), the console-ready wait (awaited) and the demo's key admissions (kept in a set, cancelled "
    "at the end); a demo, not a service systemd restarts",
    ("link/cli/demo.py", "create_task", 1): "`tablectl demo --linked`: its event watch, cancelled when the demo ends",
}


def _spawns(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if name in SPAWNERS:
            counts[name] = counts.get(name, 0) + 1
    return counts


def found() -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for top in ("floor", "link"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == HELPER:
                continue
            for name, n in _spawns(path).items():
                out[(rel, name)] = n
    return out


def test_no_bare_task_or_thread_outside_the_supervised_helper() -> None:
    allowed = {(f, name): n for (f, name, n) in ALLOWED}
    unexpected = {f"{f}: {n} x {name}" for (f, name), n in found().items() if allowed.get((f, name)) != n}
    assert not unexpected, (
        f"bare tasks or threads in floor/ or link/: {sorted(unexpected)}; start a long-lived one with "
        "floor.tasks.ServiceTasks.start (its end is logged and stops the service), or add it to ALLOWED with why "
        "it cannot die unnoticed"
    )


def test_the_allow_list_has_no_stale_entry() -> None:
    stale = [k for k in ALLOWED if found().get((k[0], k[1])) != k[2]]
    assert not stale, f"ALLOWED names calls that are no longer there: {stale}"


def test_the_guard_sees_each_spelling(tmp_path: Path) -> None:
    # It can fail: an alias, a method on a loop, a thread and a task group are all found.
    src = tmp_path / "m.py"
    src.write_text(
        "import asyncio, threading\nfrom asyncio import ensure_future\n"
        "# asyncio.create_task in a comment is not a call\n"
        "async def f(loop):\n    loop.create_task(g())\n    ensure_future(g())\n"
        "    threading.Thread(target=print).start()\n    async with asyncio.TaskGroup() as tg: pass\n"
    )
    assert _spawns(src) == {"create_task": 1, "ensure_future": 1, "Thread": 1, "TaskGroup": 1}
