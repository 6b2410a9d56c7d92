"""The journal held against what says where it must have got to, at start (docs/recovery.md, "What must exist").

Every source that knows the journal's tail makes a claim (controller.store.anchor.Claim): the manifest inside the
file, the anchor file beside it, and the anchor the broker retains (read by the shell before it opens the table).
A claim ahead of the journal's tail means committed events are gone (a deleted `-wal` file, an old copy put back, a
file emptied); a claim at or behind the tail whose seq carries another hash means this journal is not the one the
claim was made about. Either is a rollback: the table starts under the `tilt:rollback` tilt, and when a claim is
ahead the journal continues after it (Journal.resume_after), so no seq the floor may hold is used for another event.

Besides: the manifest gone while rows exist, or disagreeing with the tail, is a `critical_state` finding; a record
the manifest lists that is gone or is not the one last written is a finding for that record's tilt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.store.anchor import Claim
from controller.store.journal import Journal
from controller.store.manifest import Manifest, lost_in, record_problem

ENGINE = "engine"  # controller.store.snapshot.RECORD
METERS = "meters"  # the progressive meters (controller.shell.restore.METERS_RECORD)


@dataclass
class Assessment:
    """What the start-up checks found. `rollback` is the reason for the `tilt:rollback` tilt; `resume` the claim
    ahead of the journal to continue after; `journal` an in-file finding (the `critical_state` tilt); `records`
    each record that is not as the manifest says; `round_no` the highest round number any source knows."""

    rollback: list[str] = field(default_factory=list)
    resume: Claim | None = None
    journal: str | None = None
    records: dict[str, str] = field(default_factory=dict)
    round_no: int = 0
    warnings: list[str] = field(default_factory=list)
    # A rollback recorded at an earlier start whose tilt was never stored: its reason (raised again, not recorded).
    pending: str | None = None

    @property
    def rolled_back(self) -> bool:
        return bool(self.rollback) or self.pending is not None


def assess(journal: Journal, remote: Claim | None = None) -> Assessment:
    """Hold `journal` against its manifest, its anchor file and `remote` (the broker's retained anchor, if read)."""
    out = Assessment()
    m = journal.critical.manifest
    claims = [] if m is None else [Claim("the journal's manifest", journal.table_id, m.seq, m.hash, m.commits)]
    out.journal = _in_file(journal, m)
    found = journal.critical.found
    if found is not None:
        if found.problem is not None and m is not None and m.commits > 0:
            out.rollback.append(f"{found.problem}: whether the journal lost committed events cannot be told from it")
        elif found.problem is not None:  # no commit since it was made (a power loss as it was first written)
            out.warnings.append(f"{found.problem}; the journal has not committed since: rewritten at its next commit")
        elif found.claim is not None:
            claims.append(found.claim)
            _commits(found.claim, m, journal.last_seq, out)
        elif m is not None and m.commits > 0:
            out.rollback.append(
                f"the anchor file {found.path} is missing, though this journal has committed {m.commits} "
                "transactions since it was anchored: whether it lost committed events cannot be told from it"
            )
    if remote is not None:
        claims.append(remote)
    for claim in claims:
        _hold(journal, claim, out)
    if m is not None:
        for name, entry in sorted(m.records.items()):
            problem = record_problem(name, entry, journal.load(name))
            if problem is not None:
                out.records[name] = problem
    _stale(journal, m, out)
    out.round_no = max([c.round_no for c in claims] + [m.round_no if m is not None else 0])
    return out


def _in_file(journal: Journal, m: Manifest | None) -> str | None:
    if journal.critical.manifest_problem is not None:
        return journal.critical.manifest_problem
    if m is None:
        if journal.last_seq > 0:
            return f"the journal's manifest is missing, though it has rows up to seq {journal.last_seq}"
        return None
    if m.seq < journal.last_seq:
        return (
            f"the journal's manifest says seq {m.seq} but its last row is seq {journal.last_seq}: rows were added "
            "outside tablectl"
        )
    if journal.head_problem is not None and m.seq <= journal.last_seq:
        return journal.head_problem
    return None


def _hold(journal: Journal, claim: Claim, out: Assessment) -> None:
    tail = journal.last_seq
    if claim.seq > tail:
        lost = f"seq {tail + 1} to {claim.seq}" if claim.seq > tail + 1 else f"seq {claim.seq}"
        out.rollback.append(
            f"{claim.describe()}, but the journal {journal.path} ends at seq {tail}: {lost} were committed "
            "and are not in it"
        )
        if out.resume is None or claim.seq > out.resume.seq:
            out.resume = claim
        return
    at = journal.hash_at(claim.seq)
    if at is None and lost_in(journal.critical.rollbacks, claim.seq) is not None:
        return  # a seq lost in a rollback already recorded (an anchor of the broker's, made before it)
    if at is None and journal.critical.archived(claim.seq):
        return  # behind rows archived since (docs/journal.md, "Archiving"): the claim is behind the journal
    if at != claim.hash:
        mine = "no row" if at is None else f"hash {at[:16]}..."
        out.rollback.append(
            f"{claim.describe()}, but the journal {journal.path} has {mine} there: it is not the journal "
            "that was anchored"
        )


def _commits(claim: Claim, m: Manifest | None, tail: int, out: Assessment) -> None:
    if m is None or claim.commits is None or claim.seq > tail:
        return
    if claim.commits > m.commits:
        out.rollback.append(
            f"{claim.describe()} after {claim.commits} transactions, but the journal has only {m.commits}: "
            f"{claim.commits - m.commits} committed transaction(s) are gone"
        )
    elif claim.commits < m.commits - 1:
        out.warnings.append(
            f"{claim.describe()} after {claim.commits} transactions, the journal has {m.commits}: the anchor file is "
            "behind the journal (a power loss before it was made durable, or an older copy); rewritten at the next "
            "commit"
        )


def _stale(journal: Journal, m: Manifest | None, out: Assessment) -> None:
    """A rollback recorded at an earlier start whose tilt was never stored (the table stopped before its first step):
    the engine record is still from before the rollback, and must not be restored."""
    if not journal.critical.rollbacks:
        return
    last = journal.critical.rollbacks[-1]
    entry = None if m is None else m.records.get(ENGINE)
    if entry is None or entry.seq <= last.upto_seq:
        out.pending = f"{last.reason} (found at {last.recorded_at}; the table stopped before it stored its tilt)"
