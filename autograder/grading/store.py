"""The results store: one SQLite file, one row per submission and one per check.

Each submission is written in a single transaction, so a grader killed at any
moment leaves every earlier submission intact and this one absent. WAL mode,
a busy timeout and retries let several graders share one database. Rows are
keyed by (assignment, student): regrading replaces a student's rows, and the
stored SHA-256 and suite version decide whether a rerun can skip a file.
"""
from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import fields
from pathlib import Path

from autograder.grading.results import CheckResult, SubmissionResult
from autograder.text import valid_utf8

# `score` is the raw score (the checks' points); a late penalty is derived from course.yaml when grades
# are written out (grading.late), never stored, so a changed rule needs no regrading.
SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY,
    assignment TEXT NOT NULL,
    student TEXT NOT NULL,
    file TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    suite_version TEXT NOT NULL,
    seed INTEGER NOT NULL,
    sandbox TEXT NOT NULL,
    score REAL NOT NULL,
    max_score REAL NOT NULL,
    problem TEXT NOT NULL,
    notes TEXT NOT NULL,
    output TEXT NOT NULL,
    killed_processes INTEGER NOT NULL,
    seconds REAL NOT NULL,
    graded_at TEXT NOT NULL,
    internal_error TEXT NOT NULL DEFAULT '',
    submitted_at TEXT NOT NULL DEFAULT '',
    submitted_at_source TEXT NOT NULL DEFAULT '',
    UNIQUE (assignment, student)
);
CREATE TABLE IF NOT EXISTS checks (
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    function TEXT NOT NULL,
    visibility TEXT NOT NULL,
    status TEXT NOT NULL,
    score REAL NOT NULL,
    max_score REAL NOT NULL,
    output TEXT NOT NULL,
    hint TEXT NOT NULL,
    misconception TEXT,
    seconds REAL NOT NULL,
    explanation TEXT NOT NULL DEFAULT '',
    example TEXT NOT NULL DEFAULT '',
    stopped TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (submission_id, name)
);
CREATE TABLE IF NOT EXISTS reference_times (
    suite_version TEXT NOT NULL,
    machine TEXT NOT NULL,
    name TEXT NOT NULL,
    seconds REAL NOT NULL,
    calls INTEGER NOT NULL,
    PRIMARY KEY (suite_version, machine, name)
);
"""
# Columns added after the first release: (table, column, definition). A database
# written before them gets them added on open; its rows then hold the defaults.
ADDED_COLUMNS = (
    ("submissions", "internal_error", "TEXT NOT NULL DEFAULT ''"),
    ("checks", "explanation", "TEXT NOT NULL DEFAULT ''"),
    ("checks", "example", "TEXT NOT NULL DEFAULT ''"),
    ("checks", "stopped", "TEXT NOT NULL DEFAULT ''"),
    ("submissions", "submitted_at", "TEXT NOT NULL DEFAULT ''"),
    ("submissions", "submitted_at_source", "TEXT NOT NULL DEFAULT ''"),
)
_CHECK_FIELDS = [f.name for f in fields(CheckResult)]
RETRIES = 20


class StoreError(Exception):
    """The database could not be opened or written; the message says what to do."""


class Store:
    """Results of every graded submission, in SQLite at `path`."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._retry(lambda: self._db.executescript(SCHEMA))
            self._retry(self._add_missing_columns)
        except sqlite3.DatabaseError as error:
            raise StoreError(f"cannot use {self.path} as the results database ({error}). Pass --db with a "
                             "writable path, or move the damaged file away and regrade.") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def is_current(self, assignment: str, student: str, sha256: str, suite_version: str,
                   submitted_at: str = "") -> bool:
        """Whether this exact file, handed in at this time, was already graded with this exact suite.

        (And the grader did not fail on it.) The same file handed in again later is graded again, so the
        stored time, which decides lateness, is the latest.
        """
        return self.grading_keys(assignment).get(student) == (sha256, suite_version, submitted_at)

    def grading_keys(self, assignment: str) -> dict[str, tuple[str, str, str]]:
        """student -> (sha256, suite_version, submitted_at) of every result the grader did not fail on.

        One query for the whole class: a rerun asks this once, not once per student.
        """
        rows = self._db.execute("SELECT student, sha256, suite_version, submitted_at FROM submissions "
                                "WHERE assignment=? AND internal_error=''", (assignment,))
        return {student: (sha256, suite, submitted_at) for student, sha256, suite, submitted_at in rows}

    def save(self, result: SubmissionResult) -> None:
        """Replace the student's stored result with `result`, atomically."""
        # Field by field rather than dataclasses.asdict, whose deep copy cost the batch's main process ~2 ms
        # per result; every field here is flat.
        row = _storable({f.name: getattr(result, f.name) for f in fields(SubmissionResult) if f.name != "tests"})
        tests = [_storable({name: getattr(test, name) for name in _CHECK_FIELDS}) for test in result.tests]
        row["notes"] = json.dumps(row["notes"])
        row.update(score=result.score, max_score=result.max_score)  # derived, stored for SQL and exports
        columns = ", ".join(row)

        def write():
            with self._transaction():
                self._db.execute("DELETE FROM submissions WHERE assignment=? AND student=?",
                                 (result.assignment, result.student))
                cursor = self._db.execute(f"INSERT INTO submissions ({columns}) VALUES ({', '.join('?' * len(row))})",
                                          tuple(row.values()))
                self._db.executemany(
                    f"INSERT INTO checks (submission_id, position, {', '.join(_CHECK_FIELDS)}) "
                    f"VALUES (?, ?, {', '.join('?' * len(_CHECK_FIELDS))})",
                    [(cursor.lastrowid, i, *(t[f] for f in _CHECK_FIELDS)) for i, t in enumerate(tests)])
        self._retry(write)

    def results(self, assignment: str | None = None) -> list[SubmissionResult]:
        """Stored results, by assignment then student: two SELECTs, whatever the size of the class."""
        where, args = (" WHERE assignment=?", (assignment,)) if assignment else ("", ())
        return self._results(where, args)

    def result(self, assignment: str, student: str) -> SubmissionResult | None:
        found = self._results(" WHERE assignment=? AND student=?", (assignment, student))
        return found[0] if found else None

    def reference_times(self, suite_version: str, machine: str) -> dict[str, tuple[float, int]]:
        """check -> (seconds, calls) the reference took, as timed on `machine` for this suite; {} if never."""
        rows = self._db.execute("SELECT name, seconds, calls FROM reference_times WHERE suite_version=? AND "
                                "machine=?", (suite_version, machine))
        return {name: (seconds, calls) for name, seconds, calls in rows}

    def reference_times_by_machine(self, suite_version: str) -> dict[str, dict[str, tuple[float, int]]]:
        """machine -> check -> (seconds, calls): every machine's timings of this suite, for workers elsewhere."""
        found: dict[str, dict[str, tuple[float, int]]] = {}
        for machine, name, seconds, calls in self._db.execute(
                "SELECT machine, name, seconds, calls FROM reference_times WHERE suite_version=?", (suite_version,)):
            found.setdefault(machine, {})[name] = (seconds, calls)
        return found

    def save_reference_times(self, suite_version: str, machine: str, times: dict[str, tuple[float, int]]) -> None:
        def write():
            with self._transaction():
                self._db.executemany("INSERT OR REPLACE INTO reference_times VALUES (?, ?, ?, ?, ?)",
                                     [(suite_version, machine, name, seconds, calls)
                                      for name, (seconds, calls) in times.items()])
        self._retry(write)

    def assignments(self) -> list[str]:
        return [row[0] for row in self._db.execute("SELECT DISTINCT assignment FROM submissions ORDER BY 1")]

    def _results(self, where: str, args: tuple) -> list[SubmissionResult]:
        """The submissions matching `where` (an SQL condition on submissions) with their checks, by assignment
        then student: one query for the submissions and one for all their checks."""
        cursor = self._db.execute(f"SELECT * FROM submissions{where} ORDER BY assignment, student", args)
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, values)) for values in cursor.fetchall()]
        tests: dict[int, list[CheckResult]] = {row["id"]: [] for row in rows}
        checks = self._db.execute(
            f"SELECT submission_id, {', '.join(_CHECK_FIELDS)} FROM checks WHERE submission_id IN "
            f"(SELECT id FROM submissions{where}) ORDER BY submission_id, position", args)
        for submission_id, *values in checks:
            tests[submission_id].append(CheckResult(**dict(zip(_CHECK_FIELDS, values))))
        return [self._result(row, tests[row["id"]]) for row in rows]

    @staticmethod
    def _result(row: dict, tests: list[CheckResult]) -> SubmissionResult:
        row = dict(row)
        del row["id"], row["score"], row["max_score"]  # the score is recomputed from the checks
        return SubmissionResult(**{**row, "notes": tuple(json.loads(row["notes"])), "tests": tuple(tests)})

    def _add_missing_columns(self) -> None:
        """Bring a database from an earlier version up to SCHEMA, in one transaction."""
        if not self._missing_columns():
            return  # the usual case: nothing to write, so no write lock either
        with self._transaction():
            for table, column, definition in self._missing_columns():  # again: another grader may have added them
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")

    def _missing_columns(self) -> list[tuple[str, str, str]]:
        present = {table: {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
                   for table in {table for table, _, _ in ADDED_COLUMNS}}
        return [added for added in ADDED_COLUMNS if added[1] not in present[added[0]]]

    def _transaction(self):
        return _Transaction(self._db)

    @staticmethod
    def _retry(action):
        """Run `action`, waiting out another grader's lock (SQLite's timeout covers most waits)."""
        for attempt in range(RETRIES):
            try:
                return action()
            except sqlite3.OperationalError as error:
                busy = (getattr(error, "sqlite_errorcode", 0) & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
                if busy and attempt < RETRIES - 1:
                    time.sleep(0.05 * (attempt + 1))
                    continue
                why = ("another program may hold it" if busy else
                       "it may be full, read-only, or written by another version of autograder (pass --db with a "
                       "new file to start a fresh one)")
                raise StoreError(f"could not write the results database ({error}); {why}. Rerun: finished "
                                 "submissions are kept") from None


def _storable(value):
    """`value` with every string valid UTF-8, which SQLite requires; student text was made so already."""
    if isinstance(value, str):
        return valid_utf8(value)
    if isinstance(value, dict):
        return {key: _storable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_storable(item) for item in value)
    return value


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind, *_):
        self.db.execute("ROLLBACK" if kind else "COMMIT")


def stored_results(db: Path, assignment: str | None) -> tuple[str, list[SubmissionResult]]:
    """The stored results of one assignment, by student; `assignment=None` picks the only one.

    For the commands that read grades (report, export, replay); raises StoreError saying what to do.
    """
    db = Path(db)
    if not db.is_file():
        raise StoreError(f"there is no results database at {db}. Grade first (`autograder grade ASSIGNMENT "
                         "PATH... --db PATH`) or pass --db with the database the grades went to.")
    with Store(db) as store:
        known = store.assignments()
        if assignment is None:
            if len(known) != 1:
                raise StoreError(f"{db} holds results of {len(known)} assignments ({', '.join(known) or 'none'}); "
                                 "pass --assignment NAME to pick one.")
            assignment = known[0]
        results = store.results(assignment)
    if not results:
        raise StoreError(f"{db} has no results for {assignment!r} (it holds: {', '.join(known) or 'nothing'}). "
                         "Check --assignment, or grade the assignment first.")
    return assignment, results
