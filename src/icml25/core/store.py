"""Embedded results store: one SQLite file, one row per finished job.

A job is keyed by (paper, experiment, config hash, seed, package version, code
fingerprint). The code fingerprint hashes the source that produces the paper's
results (its own modules, the ``common/`` modules they import and the job-running
core), so editing a method never serves a stale result.
The database runs in WAL mode and every job is written in its own transaction:
a sweep killed with ``kill -9`` loses at most the jobs that were still running,
and the file stays consistent.

The store lives in ``.icml25/results.sqlite`` under the working directory, or
under ``$ICML25_HOME`` when that is set.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    paper       TEXT NOT NULL,
    experiment  TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    seed        INTEGER NOT NULL,
    version     TEXT NOT NULL,
    code_hash   TEXT NOT NULL,
    preset      TEXT NOT NULL,
    config      TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    metrics     TEXT,
    error       TEXT,
    wall_s      REAL,
    peak_mem_mb REAL,
    libraries   TEXT,
    backend     TEXT,
    finished_at REAL NOT NULL,
    metrics_sha TEXT,
    PRIMARY KEY (paper, experiment, config_hash, seed, version, code_hash)
);
CREATE TABLE IF NOT EXISTS leases (
    paper       TEXT NOT NULL,
    experiment  TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    seed        INTEGER NOT NULL,
    version     TEXT NOT NULL,
    code_hash   TEXT NOT NULL,
    holder      TEXT NOT NULL,
    expires_at  REAL NOT NULL,
    PRIMARY KEY (paper, experiment, config_hash, seed, version, code_hash)
);
CREATE TABLE IF NOT EXISTS decisions (
    paper       TEXT NOT NULL,
    claim       TEXT NOT NULL,
    preset      TEXT NOT NULL,
    verdict     TEXT NOT NULL,
    mean        REAL,
    lo          REAL,
    hi          REAL,
    n           INTEGER,
    detail      TEXT,
    recorded_at REAL NOT NULL,
    PRIMARY KEY (paper, claim, preset)
);
"""


def default_home() -> Path:
    return Path(os.environ.get("ICML25_HOME") or Path.cwd() / ".icml25")


@dataclass(frozen=True)
class JobKey:
    paper: str
    experiment: str
    config_hash: str
    seed: int
    version: str
    code_hash: str


@dataclass(frozen=True)
class JobRecord:
    key: JobKey
    preset: str
    config: dict[str, Any]
    status: str
    metrics: dict[str, Any] | None
    error: str | None
    wall_s: float
    peak_mem_mb: float
    libraries: dict[str, str]
    backend: str
    finished_at: float
    verified: bool = True
    """Whether its metrics passed their checksum (a row from before checksums did not have one)."""


class StoreError(Exception):
    """The results store cannot be used: its folder cannot be created or written, or it is corrupt.

    The message is one line that names the path and says what to do.
    """


class CorruptRowError(StoreError):
    """A job row whose metrics fail their checksum, are not JSON, or are missing from an ``ok`` row."""


def metrics_checksum(status: str, metrics_text: str | None) -> str:
    """SHA-256 of a job row's status and metrics text: what :meth:`Store.put` writes beside them."""
    return hashlib.sha256(f"{status}\n{metrics_text}".encode()).hexdigest()


class Store:
    """The results database. Use as a context manager or call :meth:`close`.

    Opening checks the file's integrity: a corrupt store is never reused silently.
    ``readonly=True`` opens it for reading only (``list``, ``show``, ``report`` work on a
    store in a read-only folder); a missing store then reads as empty. With
    ``rebuild=True`` a corrupt store is moved aside (to ``results.sqlite.corrupt-<time>``)
    and a new one is started.
    """

    def __init__(self, home: Path | str | None = None, readonly: bool = False, rebuild: bool = False):
        self.home = Path(home) if home is not None else default_home()
        self.path = self.home / "results.sqlite"
        self.readonly = readonly
        if self.home.exists() and not self.home.is_dir():
            raise StoreError(f"the results store folder {self.home} is a file, not a folder: "
                             "point ICML25_HOME at a folder")
        try:
            self._db = self._open_readonly() if readonly else self._open_writable(rebuild)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"the results store {self.path} cannot be used ({exc}): move it aside "
                             f"(mv {self.path} {self.path}.corrupt) or rerun with --rebuild-store") from None

    def _open_writable(self, rebuild: bool) -> sqlite3.Connection:
        try:
            created = not self.home.exists()
            self.home.mkdir(parents=True, exist_ok=True)
            if created:
                os.chmod(self.home, 0o755)  # whatever the umask
        except OSError as exc:
            raise StoreError(f"cannot create the results store folder {self.home} ({exc.strerror}): "
                             "set ICML25_HOME to a writable folder") from None
        if not os.access(self.home, os.W_OK):
            raise StoreError(f"the results store folder {self.home} is not writable: "
                             "set ICML25_HOME to a writable folder")
        if rebuild and self.path.exists() and not _healthy(self.path):
            aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
            self.path.rename(aside)
            for suffix in ("-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            _check_integrity(db)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("BEGIN IMMEDIATE")
            for statement in _statements(SCHEMA):
                db.execute(statement)
            if "metrics_sha" not in {r[1] for r in db.execute("PRAGMA table_info(jobs)")}:  # a store from before
                db.execute("ALTER TABLE jobs ADD COLUMN metrics_sha TEXT")
            db.execute("COMMIT")
            _private(self.path)
        except sqlite3.OperationalError as exc:
            db.close()
            if "readonly" in str(exc) or "unable to open" in str(exc) or "disk" in str(exc):
                raise StoreError(f"cannot write the results store {self.path} ({exc}): "
                                 "free space or set ICML25_HOME to a writable folder") from None
            raise
        except BaseException:
            db.close()
            raise
        return db

    def _open_readonly(self) -> sqlite3.Connection:
        if not self.path.exists():
            db = sqlite3.connect(":memory:", isolation_level=None)
            for statement in _statements(SCHEMA):
                db.execute(statement)
            return db
        for flags in ("mode=ro", "mode=ro&immutable=1"):  # immutable: a read-only folder has no room for -shm
            if flags.endswith("immutable=1"):
                wal = Path(f"{self.path}-wal")
                if wal.exists() and wal.stat().st_size > 0:  # immutable would ignore it and show old results
                    raise StoreError(f"the results store {self.path} has changes not yet merged ({wal.name}) that a "
                                     "read-only folder cannot apply: open it once where it is writable, or copy "
                                     "the folder (with its -wal file) somewhere writable and set ICML25_HOME there")
            db = sqlite3.connect(f"file:{self.path}?{flags}", uri=True, timeout=30, isolation_level=None)
            try:
                _check_integrity(db)
                db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
                return db
            except sqlite3.OperationalError:
                db.close()
                if flags.endswith("immutable=1"):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def put(self, record: JobRecord) -> None:
        """Insert or replace one job, atomically, with the checksum of its status and metrics."""
        k = record.key
        metrics = None if record.metrics is None else json.dumps(record.metrics)
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO jobs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (k.paper, k.experiment, k.config_hash, k.seed, k.version, k.code_hash, record.preset,
                 json.dumps(record.config, sort_keys=True), record.status, metrics, record.error,
                 record.wall_s, record.peak_mem_mb, json.dumps(record.libraries), record.backend,
                 record.finished_at, metrics_checksum(record.status, metrics)),
            )

    def get(self, key: JobKey) -> JobRecord | None:
        row = self._db.execute(
            "SELECT * FROM jobs WHERE paper=? AND experiment=? AND config_hash=? AND seed=? AND version=? "
            "AND code_hash=?",
            (key.paper, key.experiment, key.config_hash, key.seed, key.version, key.code_hash),
        ).fetchone()
        return None if row is None else _record(row, self.path)

    def finished(self, keys: Iterable[JobKey]) -> set[JobKey]:
        """The subset of ``keys`` whose job finished successfully (a row from before checksums is not).

        Raises:
            CorruptRowError: an ``ok`` row without metrics, or whose metrics fail their checksum.
        """
        return {k for k in keys if (r := self.get(k)) is not None and r.status == "ok" and r.verified}

    def records(self, paper: str | None = None) -> list[JobRecord]:
        query, args = "SELECT * FROM jobs", ()
        if paper is not None:
            query, args = query + " WHERE paper=?", (paper,)
        return [_record(r, self.path) for r in self._db.execute(query + " ORDER BY finished_at", args)]

    def put_verdicts(self, paper: str, preset: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Record the latest decision of each claim at ``preset``.

        Each row has ``claim``, ``verdict``, ``mean``, ``lo``, ``hi``, ``n`` and any further
        detail (``level``, ``reason``, ``seeds_to_decide``...), which is kept as JSON.
        """
        now = time.time()
        with self._transaction() as db:
            for row in rows:
                row = dict(row)
                main = [row.pop(k, None) for k in ("claim", "verdict", "mean", "lo", "hi", "n")]
                db.execute("INSERT OR REPLACE INTO decisions VALUES (?,?,?,?,?,?,?,?,?,?)",
                           (paper, main[0], preset, *main[1:], json.dumps(row, default=str), now))

    def verdicts(self, preset: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
        """Latest decisions: ``{paper: {claim: {"verdict", "preset", "mean", "lo", "hi", "n", ...detail}}}``.

        With ``preset``, the latest at that preset; otherwise the latest at any preset.
        """
        query, args = "SELECT * FROM decisions", ()
        if preset is not None:
            query, args = query + " WHERE preset=?", (preset,)
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for paper, claim, pre, verdict, mean, lo, hi, n, detail, at in self._db.execute(
                query + " ORDER BY recorded_at", args):
            out.setdefault(paper, {})[claim] = dict(json.loads(detail or "{}"), verdict=verdict, preset=pre,
                                                    mean=mean, lo=lo, hi=hi, n=n, recorded_at=at)
        return out

    # -- leases: two runs on one store never compute the same job twice ------------------------------

    def acquire(self, keys: Iterable[JobKey], holder: str, ttl_s: float, recompute: bool = False) -> set[JobKey]:
        """Lease the unfinished jobs among ``keys`` that no live run holds; return those leased.

        A job that has finished (an ``ok`` row with valid checksum) is never leased, checked in
        the same transaction as the lease, so a run cannot compute again a job another run just stored;
        ``recompute=True`` (``--force``) leases finished jobs too.

        A lease expires ``ttl_s`` after its last renewal, or at once when its holder is a
        process of this machine that no longer exists.
        """
        now = time.time()
        got: set[JobKey] = set()
        with self._transaction() as db:  # one write transaction: no run can store a job between check and lease
            for k in keys:
                args = (k.paper, k.experiment, k.config_hash, k.seed, k.version, k.code_hash)
                done = db.execute("SELECT status, metrics, metrics_sha FROM jobs WHERE paper=? AND experiment=? AND "
                                  "config_hash=? AND seed=? AND version=? AND code_hash=?", args).fetchone()
                if not recompute and done is not None and done[0] == "ok" and done[2] == metrics_checksum("ok",
                                                                                                        done[1]):
                    continue  # it finished meanwhile (another run stored it): nothing to lease
                row = db.execute("SELECT holder, expires_at FROM leases WHERE paper=? AND experiment=? AND "
                                 "config_hash=? AND seed=? AND version=? AND code_hash=?", args).fetchone()
                if row is not None and row[0] != holder and row[1] > now and holder_alive(row[0]):
                    continue
                db.execute("INSERT OR REPLACE INTO leases VALUES (?,?,?,?,?,?,?,?)", (*args, holder, now + ttl_s))
                got.add(k)
        return got

    def renew(self, holder: str, ttl_s: float) -> None:
        with self._transaction() as db:
            db.execute("UPDATE leases SET expires_at=? WHERE holder=?", (time.time() + ttl_s, holder))

    def release(self, keys: Iterable[JobKey], holder: str) -> None:
        with self._transaction() as db:
            for k in keys:
                db.execute("DELETE FROM leases WHERE paper=? AND experiment=? AND config_hash=? AND seed=? AND "
                           "version=? AND code_hash=? AND holder=?",
                           (k.paper, k.experiment, k.config_hash, k.seed, k.version, k.code_hash, holder))

    def leased_by_others(self, keys: Iterable[JobKey], holder: str) -> set[JobKey]:
        """The jobs among ``keys`` that another live run holds now."""
        now = time.time()
        out = set()
        for k in keys:
            row = self._db.execute(
                "SELECT holder, expires_at FROM leases WHERE paper=? AND experiment=? AND config_hash=? AND seed=? "
                "AND version=? AND code_hash=?",
                (k.paper, k.experiment, k.config_hash, k.seed, k.version, k.code_hash)).fetchone()
            if row is not None and row[0] != holder and row[1] > now and holder_alive(row[0]):
                out.add(k)
        return out

    def integrity_ok(self) -> bool:
        return self._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def new_holder() -> str:
    """A lease holder's name: ``host:pid:nonce``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def holder_alive(holder: str) -> bool:
    """False when ``holder`` is a process of this machine that has exited; True otherwise (or unknown)."""
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return True  # another machine: only the lease's expiry can tell
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's live process
        return True
    return True


def _check_integrity(db: sqlite3.Connection) -> None:
    """Raise :class:`sqlite3.DatabaseError` unless the database passes SQLite's integrity check."""
    result = db.execute("PRAGMA integrity_check").fetchone()[0]
    if result != "ok":
        raise sqlite3.DatabaseError(f"integrity check: {result}")


def _healthy(path: Path) -> bool:
    """Whether the store passes SQLite's integrity check and every job row its checksum."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            _check_integrity(db)
            for row in db.execute("SELECT * FROM jobs"):
                _record(row, path)
        finally:
            db.close()
        return True
    except (sqlite3.DatabaseError, CorruptRowError):
        return False


def _private(path: Path) -> None:
    """Give the store's files mode 0o644 whatever the umask (the folder is 0o755 when we create it)."""
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            if p.exists() and p.stat().st_uid == os.getuid():
                os.chmod(p, 0o644)
        except OSError:  # pragma: no cover - not ours to change
            pass


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _record(row: tuple, path: Path | str = "the results store") -> JobRecord:
    """A job row as a :class:`JobRecord`, its metrics checked against their checksum.

    Raises:
        CorruptRowError: an ``ok`` row without metrics, metrics that are not JSON, or a checksum that does
            not match (the row was edited or damaged). A row from before checksums (no checksum) is read,
            marked unverified, and so never reused: the job is computed again.
    """
    (paper, experiment, chash, seed, version, code_hash, preset, config, status, metrics, error, wall_s, peak,
     libraries, backend, finished_at, *rest) = row
    sha = rest[0] if rest else None
    where = f"{paper}/{experiment} seed {seed}"
    fix = "rerun with --rebuild-store (moves the store aside) or --force (recomputes the jobs)"
    if sha is not None and sha != metrics_checksum(status, metrics):
        raise CorruptRowError(f"the results store {path} has a damaged row ({where}: its metrics do not match "
                              f"their checksum): {fix}")
    if status == "ok" and metrics is None:
        raise CorruptRowError(f"the results store {path} has a damaged row ({where}: finished but no metrics): "
                              f"{fix}")
    try:
        parsed = None if metrics is None else json.loads(metrics)
        if parsed is not None and not isinstance(parsed, dict):
            raise ValueError("not an object")
    except ValueError:
        raise CorruptRowError(f"the results store {path} has a damaged row ({where}: its metrics are not JSON): "
                              f"{fix}") from None
    return JobRecord(
        key=JobKey(paper, experiment, chash, int(seed), version, code_hash),
        preset=preset, config=json.loads(config), status=status,
        metrics=parsed, error=error, wall_s=wall_s or 0.0,
        peak_mem_mb=peak or 0.0, libraries=json.loads(libraries or "{}"), backend=backend or "",
        finished_at=finished_at, verified=sha is not None,
    )
