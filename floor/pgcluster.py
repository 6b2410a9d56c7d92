"""A private PostgreSQL cluster in a temp dir on a free loopback port: for the tests, the benches and the demos
(as `dev.py demo` starts a private mosquitto). Production uses the facility's replicated cluster instead
(systemd/postgresql.md).

PostgreSQL refuses to run as root, so under root the cluster is made and run as an unprivileged user (`postgres`
when Debian's package made it, else `nobody`); Debian keeps the server's binaries in
/usr/lib/postgresql/<version>/bin, which is not on PATH. The server runs in its own session so a terminal's
Ctrl-C reaches the program that started it, which then stops it cleanly; and on a leash (leash/), so it
dies with that program and its temp dir is deleted even when the program is SIGKILLed. A cluster's dirs are
`tablectl-pg-*` in the temp dir; the first cluster a process makes sweeps those whose owner is gone.

`add_standby` makes a streaming replica with pg_basebackup and, with `synchronous=True`, names it in the
primary's synchronous_standby_names, so a commit returns only once the standby has it (issue 15's link controller).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import structlog

from floor.ports import ADDRESS_IN_USE, PORT_ATTEMPTS, PortsTaken, PortTaken, free_port, on_a_free_port
from leash import Leash, sweep_stale

SUPERUSER = "tablectl"
INSTALL_HINT = "install Debian's PostgreSQL server: sudo apt-get install postgresql (python3 dev.py does it)"


class ClusterError(RuntimeError):
    """The cluster could not be made, started or stopped; the message says what to do."""


def pg_bin_dir() -> Path:
    """The directory of initdb, postgres and pg_basebackup: $TABLECTL_PG_BIN, else the newest
    /usr/lib/postgresql/<version>/bin, else wherever PATH has initdb."""
    env = os.environ.get("TABLECTL_PG_BIN")
    if env:
        if not (Path(env) / "initdb").exists():
            raise ClusterError(f"TABLECTL_PG_BIN={env} has no initdb; point it at PostgreSQL's bin directory")
        return Path(env)
    versions = sorted(
        (p for p in Path("/usr/lib/postgresql").glob("*/bin") if (p / "initdb").exists()),
        key=lambda p: int(re.sub(r"[^0-9]", "", p.parent.name) or 0),
    )
    if versions:
        return versions[-1]
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    raise ClusterError(f"PostgreSQL's initdb was not found; {INSTALL_HINT}")


def _run_as() -> pwd.struct_passwd | None:
    """The unprivileged account the server runs under when we are root; None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise ClusterError("running as root and no unprivileged account (postgres or nobody) exists to run PostgreSQL")


@dataclass
class PgCluster:
    """One PostgreSQL server with its own data directory. `durable=False` turns fsync off: for throwaway clusters
    whose crash safety is not what a test measures (the benches keep it on: a commit's cost is their baseline)."""

    base: Path
    port: int = 0
    host: str = "127.0.0.1"
    durable: bool = True
    settings: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    # Made in a temp dir of its own (not a caller's `base`): deleted by remove(), or by the leash when we end.
    owned: bool = False
    # Where the port comes from: picked at the first start, just before the server binds it, and again should that
    # one be taken; None: the port is the caller's and is kept (it may have handed it out already).
    ports: Callable[[], int] | None = None
    started: bool = False

    @classmethod
    def create(
        cls,
        base: Path | None = None,
        *,
        durable: bool = True,
        ports: Callable[[], int] = free_port,
        **settings: str,
    ) -> PgCluster:
        """initdb a new cluster under `base` (a new temp dir by default); not started yet, and with no port until
        then: the first start() takes one from `ports` just before the server binds it (initdb takes seconds, in which
        a port picked before it could be bound by another server), and another should that one be taken."""
        for line in sweep_stale():
            structlog.get_logger(__name__).warning("stale server dir swept", what=line)
        owned = base is None
        if base is None:
            # Not under pytest's tmp_path: that is 0700 root, which the postgres account cannot enter.
            base = Path(tempfile.mkdtemp(prefix="tablectl-pg-"))
            # Before initdb: a kill during it leaves no dir behind either.
            Leash.mine().own(base)
        cluster = cls(base=base, port=0, durable=durable, settings=dict(settings), owned=owned, ports=ports)
        try:
            cluster._initdb()
        except BaseException:
            if owned:
                cluster.remove()
            raise
        return cluster

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def log_path(self) -> Path:
        return self.base / "postgres.log"

    def dsn(self, dbname: str = "postgres", connect_timeout_s: int | None = 5) -> str:
        """The DSN of database `dbname` with one connect_timeout, `connect_timeout_s` (None: none, so a service's
        `[database] connect_timeout_s` or its default bounds the connect)."""
        if self.port == 0:
            raise ClusterError("the cluster has no port before its first start(): start it, then ask for its DSN")
        bound = "" if connect_timeout_s is None else f" connect_timeout={connect_timeout_s}"
        return f"host={self.host} port={self.port} user={SUPERUSER} dbname={dbname}{bound}"

    def _own(self, path: Path) -> None:
        account = _run_as()
        if account is not None:
            os.chown(path, account.pw_uid, account.pw_gid)

    def _run(self, argv: list[str], what: str) -> None:
        account = _run_as()
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            user=account.pw_uid if account else None,
            group=account.pw_gid if account else None,
            cwd=self.base,
            check=False,
        )
        if done.returncode != 0:
            raise ClusterError(f"{what} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")

    def _initdb(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        self.base.chmod(0o700)
        self._own(self.base)
        argv = [str(pg_bin_dir() / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "-A", "trust"]
        argv += ["-E", "UTF8", "--no-locale", "--no-instructions"]
        if not self.durable:
            argv.append("--no-sync")
        self._run(argv, "initdb")

    def start(self, timeout: float = 30.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        # Only before the first start may the port change: after it, clients hold DSNs naming this one. Picked here,
        # right before the postmaster binds it, so the window in which another server may take it is the fork's.
        fresh = self.ports is not None and not self.started
        try:
            on_a_free_port(
                lambda port: self._start_on(port, timeout),
                self.ports or (lambda: self.port),
                first=None if fresh else self.port,
                attempts=PORT_ATTEMPTS if fresh else 1,
            )
        except PortsTaken as taken:
            more = f" (and {len(taken.ports) - 1} fresh ports before it)" if len(taken.ports) > 1 else ""
            raise ClusterError(
                f"postgres could not listen on {self.host}:{self.port}{more}: another process holds the "
                f"port; find it with `ss -ltnp`, or let PgCluster.create number the port:\n{taken.log}"
            ) from None
        self.started = True

    def _start_on(self, port: int, timeout: float) -> None:
        if port != self.port:
            if self.port:  # a fresh port after a taken one (floor.ports.on_a_free_port)
                structlog.get_logger(__name__).info("port taken, trying another", port=self.port, fresh=port)
            self.port = port
        self._start_once(timeout)

    def _start_once(self, timeout: float) -> None:
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        options = {
            "listen_addresses": self.host,
            "port": str(self.port),
            "unix_socket_directories": "",  # loopback TCP only: nothing in /var/run to own
            "fsync": "on" if self.durable else "off",
            "max_connections": "100",
            **self.settings,
        }
        argv = [str(pg_bin_dir() / "postgres"), "-D", str(self.data)]
        for key, value in options.items():
            argv += ["-c", f"{key}={value}"]
        account = _run_as()
        logfile = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=logfile,
            stderr=subprocess.STDOUT,
            user=account.pw_uid if account else None,
            group=account.pw_gid if account else None,
            start_new_session=True,
        )
        logfile.close()
        # SIGQUIT: an immediate shutdown; the postmaster takes its backends with it, and the dir is deleted after.
        Leash.mine().hold(self.proc.pid, signal.SIGQUIT)
        if self.owned:
            Leash.mine().note_server(self.base, self.proc.pid, signal.SIGQUIT)
        self._wait_ready(timeout, log_start)

    def _wait_ready(self, timeout: float, log_start: int = 0) -> None:
        deadline = time.monotonic() + timeout
        proc = self.proc
        if proc is None:  # start() spawned it
            raise ClusterError("postgres was not started: nothing to wait for")
        while True:
            if proc.poll() is not None:
                Leash.mine().drop(proc.pid)
                with self.log_path.open("rb") as log:
                    log.seek(log_start)
                    this_start = log.read().decode(errors="replace")
                if ADDRESS_IN_USE in this_start:
                    raise PortTaken(self.port, this_start.strip())
                raise ClusterError(f"postgres exited with {proc.returncode} while starting:\n{self.log_tail()}")
            answered = None
            if self._says_ready(proc.pid):
                with contextlib.suppress(psycopg.OperationalError):
                    answered = self._data_directory()
            if answered is not None and Path(answered).resolve() == self.data.resolve():
                return
            # Another server answering on our port (the other xdist worker's cluster bound it first) is not ours
            # ready: ours fails to bind and exits, and the poll above moves it to a fresh port (PortTaken).
            if time.monotonic() > deadline:
                other = f" (the server of {answered} answers on port {self.port})" if answered else ""
                raise ClusterError(f"postgres did not accept connections within {timeout}s{other}:\n{self.log_tail()}")
            time.sleep(0.05)

    def _says_ready(self, pid: int) -> bool:
        """Whether this postmaster says it accepts connections (postmaster.pid's status line, as `pg_ctl -w` reads
        it): until then the port may be another's, and a poll would knock on it (a listener that never answers held
        each attempt for libpq's 2 s connect timeout). A file we cannot read leaves it to the poll."""
        try:
            lines = (self.data / "postmaster.pid").read_text().splitlines()
        except PermissionError:
            return True
        except OSError:
            return False
        return len(lines) >= 8 and lines[0].strip() == str(pid) and lines[7].strip() in ("ready", "standby")

    def _data_directory(self) -> str:
        """The data directory of the server answering on our port: ours, or another cluster's that holds it."""
        with psycopg.connect(self.dsn(), connect_timeout=2) as conn:
            row = conn.execute("SELECT current_setting('data_directory')").fetchone()
        return str(row[0]) if row else ""

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 30.0) -> None:
        """A fast shutdown (SIGINT: sessions rolled back, a checkpoint written), then the process is gone."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        Leash.mine().drop(proc.pid)

    def kill(self) -> None:
        """kill -9 of the postmaster, as a power cut would leave it (a fault test's primary)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            Leash.mine().drop(self.proc.pid)

    def create_database(self, name: str, connect_timeout_s: int | None = 5) -> str:
        """Make database `name` (if it is not there yet) and return its DSN (`dsn()`'s connect_timeout_s)."""
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
            raise ClusterError(f"database name {name!r}: use lower-case letters, digits and _")
        try:
            with psycopg.connect(self.dsn(), autocommit=True) as conn:
                if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
                    conn.execute(f"CREATE DATABASE {name}")
        except psycopg.OperationalError as err:
            raise ClusterError(
                f"database {name} could not be made on port {self.port}, where {self.server_state()}: {err}"
            ) from err
        return self.dsn(name, connect_timeout_s)

    def server_state(self) -> str:
        """Our postmaster as the kernel sees it, for a failure's message: a connection that timed out says nothing
        of whether the server was stopped (SIGSTOP), gone, or running and slow."""
        proc = self.proc
        if proc is None:
            return "this process started no postgres"
        if proc.poll() is not None:
            return f"postgres (pid {proc.pid}) exited with {proc.returncode}"
        try:
            letter = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            letter = "?"
        return f"postgres (pid {proc.pid}) is " + ("stopped (SIGSTOP)" if letter in ("T", "t") else "running")

    def add_standby(self, name: str = "standby1", *, synchronous: bool = True) -> PgCluster:
        """A streaming replica of this (running) cluster, made with pg_basebackup in a sibling directory, started;
        with `synchronous`, the primary waits for it at each commit (synchronous_standby_names)."""
        base = self.base.parent / f"{self.base.name}-{name}"
        ports = self.ports or free_port
        standby = PgCluster(base=base, port=0, durable=self.durable, owned=self.owned, ports=ports)
        standby.settings = dict(self.settings)
        standby.base.mkdir(parents=True, exist_ok=True)
        if standby.owned:
            Leash.mine().own(standby.base)
        standby.base.chmod(0o700)
        standby._own(standby.base)
        try:
            standby._replicate(self, name, synchronous)
        except BaseException:
            # A half-made standby (its copy, or a server that never streamed) is not left running or on disk.
            standby.stop()
            if standby.owned:
                standby.remove()
            raise
        return standby

    def _replicate(self, primary: PgCluster, name: str, synchronous: bool) -> None:
        conninfo = f"host={primary.host} port={primary.port} user={SUPERUSER} application_name={name}"
        # --checkpoint=fast: by default pg_basebackup waits for a spread checkpoint, which paces its writes at one
        # buffer per 100 ms while "on schedule" (95 s here for a cluster that had just made a database); a fast
        # checkpoint writes the same buffers at once. The copy is the same either way.
        argv = [str(pg_bin_dir() / "pg_basebackup"), "-d", conninfo, "-D", str(self.data), "-X", "stream", "-R"]
        argv.append("--checkpoint=fast")
        self._run(argv, "pg_basebackup")
        self.start()
        primary._wait_replication(name, "state = 'streaming'")
        if synchronous:
            with psycopg.connect(primary.dsn(), autocommit=True) as conn:
                conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{name}'")
                conn.execute("SELECT pg_reload_conf()")
            # The reload reaches the WAL sender a moment later; until then the standby is still async.
            primary._wait_replication(name, "sync_state = 'sync'")

    def _wait_replication(self, name: str, condition: str, timeout: float = 30.0) -> None:
        # Until the standby's WAL receiver has connected, a synchronous commit on the primary would wait for it.
        deadline = time.monotonic() + timeout
        query = f"SELECT 1 FROM pg_stat_replication WHERE application_name = %s AND {condition}".encode()
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            while conn.execute(query, (name,)).fetchone() is None:
                if time.monotonic() > deadline:
                    raise ClusterError(f"standby {name}: no {condition} within {timeout}s:\n{self.log_tail()}")
                time.sleep(0.05)

    def promote(self) -> None:
        """Make this standby the primary (after its primary was lost)."""
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute("SELECT pg_promote(wait => true)")

    def remove(self) -> None:
        """Stop and delete the cluster's directory."""
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)
        Leash.mine().disown(self.base)
