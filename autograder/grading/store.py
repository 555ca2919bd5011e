"""The results store: one SQLite file, one row per submission and one per check.

Each submission is written in a single transaction, so a grader killed at any
moment leaves every earlier submission intact and this one absent. WAL mode,
a busy timeout and retries let several graders share one database. Rows are
keyed by (assignment, student): regrading replaces a student's rows, and the
stored SHA-256 and suite version decide whether a rerun can skip a file.
Every result saved is kept in the history as well (grading.history), with
the hand-in's bytes, so nothing a regrade or a new hand-in replaces is lost.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
import urllib.parse
from pathlib import Path

from autograder.grading import history, rerun
from autograder.grading.history import Entry
from autograder.grading.ids import roster_order
from autograder.grading.results import SubmissionResult
from autograder.grading.schema import column_definition, fields_of, from_columns, to_column

# The tables of results, one column per field of the result classes (grading.schema), so a new field is
# a new column; a database written before it gets it added on open, and its rows read the default.
# `score` is the raw score (the checks' points), stored and read back as it is; a late penalty is derived
# from course.yaml when grades are written out (grading.late), never stored, so a changed rule needs no regrading.
OUR_TABLES = {"submissions", "checks", "reference_times", "history", "handins"}  # what this grader makes
SUBMISSIONS = "CREATE TABLE IF NOT EXISTS submissions (id INTEGER PRIMARY KEY, {}, UNIQUE (assignment, student))"
CHECKS = ("CREATE TABLE IF NOT EXISTS checks (submission_id INTEGER NOT NULL REFERENCES submissions(id) "
          "ON DELETE CASCADE, position INTEGER NOT NULL, {}, PRIMARY KEY (submission_id, name))")
# The indices the lookups need beyond the tables' own keys (history's are in grading.history): created with the tables,
# and on opening a database from before them. The checks of a class come back in order, not sorted in a temporary table.
INDICES = "CREATE INDEX IF NOT EXISTS checks_in_order ON checks (submission_id, position)"
REFERENCE_TIMES = """
CREATE TABLE IF NOT EXISTS reference_times (
    suite_version TEXT NOT NULL,
    machine TEXT NOT NULL,
    name TEXT NOT NULL,
    seconds REAL NOT NULL,
    calls INTEGER NOT NULL,
    PRIMARY KEY (suite_version, machine, name)
);
"""
# What a column added to an old table holds, when not its default: rows stored before `isolated` existed
# were strongly isolated exactly when bubblewrap ran them. The only place outside the sandbox where a
# sandbox's name decides anything, and only for those rows, once, when the column is added.
FILLED_WHEN_ADDED = {("submissions", "isolated"): "UPDATE submissions SET isolated = (sandbox = 'bwrap')",
                     # Before the field, a file that did not load was known by its problem's first words.
                     ("submissions", "did_not_load"):
                         "UPDATE submissions SET did_not_load = (problem LIKE 'not loaded:%')"}
RETRIES = 20


class StoreError(Exception):
    """The database could not be opened or written; the message says what to do."""


def _unusable(path: Path, error: sqlite3.DatabaseError) -> str:
    """What to do about a results database that could not be opened: a file that is no database, or damaged,
    is moved away; one that cannot be written (its folder read-only, another user's) is made writable or copied."""
    words = str(error)
    if "locked" in words:  # SQLite waited out its timeout (30 s) for another program's write
        return (f"cannot open {path} as the results database: another program has held it for writing for 30 s "
                f"({words}). Wait for it (another `autograder grade`?), then run this again.")
    if "not a database" in words or "malformed" in words:
        return (f"cannot use {path} as the results database: it is not one, or it is damaged ({words}). Move it "
                "away (nothing is deleted), then grade again to make a new one, or pass --db with another path.")
    return (f"cannot open {path} as the results database ({words}): grading writes it, and SQLite writes "
            f"{path.name}-wal and {path.name}-shm beside it, so the file and its folder must be writable by this user. "
            "Make them writable, or copy the database to a writable folder and pass --db with the copy (report, "
            "export and history can read it where it lies).")


def _opened_read_only(path: Path) -> sqlite3.Connection:
    """A connection that can only read `path`: for a database on a read-only share or owned by another user, which
    the commands that read grades (report, export, history, replay, similarity) can then read where it lies."""
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
    db = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1")
    except sqlite3.OperationalError:
        db.close()
        if Path(f"{path}-wal").exists():
            raise
        # WAL mode reads through a -shm file it cannot make here; with no -wal left either, no writer has this
        # database open (it would need both), so SQLite may read it as a file that does not change.
        db = sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None)
    return db


class Store:
    """Results of every graded submission, in SQLite at `path`."""

    def __init__(self, path: Path, kind: type = SubmissionResult, read_only: bool = False):
        """read_only: never write (reading commands, where the file or its folder cannot be written:
        `Store.for_reading`); a database that an older version wrote, which would need new columns, is refused."""
        self.path = Path(path)
        self.read_only = read_only
        self.kind = kind  # the result class whose fields are the columns (a subclass with more fields: more)
        schema = fields_of(kind)
        self._tests = next(f for f in schema if f.nested)  # the checks, a table of their own
        self._columns = {"submissions": [f for f in schema if not f.nested], "checks": fields_of(self._tests.items)}
        try:
            if read_only:
                self._db = _opened_read_only(self.path)
                self._refuse_if_foreign()
                self._refuse_if_outdated()
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._refuse_if_foreign()  # first: even the journal mode is written into the file
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._retry(lambda: self._db.executescript(self._create()))
            self._retry(self._migrate)
            self._retry(lambda: self._db.executescript(history.SCHEMA))
            self._retry(lambda: history.backfill(self._db, self.results, self._transaction))
            # A file this user may not write opens all the same, and failed only at the first result, after the
            # sandbox's start and the reference's timing: written once now, it fails here.
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
            self._db.execute(f"PRAGMA user_version = {version}")  # a write that changes nothing
        except sqlite3.DatabaseError as error:
            raise StoreError(_unusable(self.path, error)) from None

    @classmethod
    def for_reading(cls, path: Path) -> Store:
        """The store at `path` for a command that only reads it: opened read-only where this user cannot write the
        file or its folder (SQLite writes files beside it even to read), as usual elsewhere."""
        path = Path(path)
        return cls(path, read_only=not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)))

    def close(self) -> None:
        self._db.close()

    def _refuse_if_foreign(self) -> None:
        """Another program's database is never written into: `report --db gradebook.db` (nbgrader's) had added five
        tables to it, and `grade` its columns to a `submissions` table of its own."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        theirs = sorted(t for t in tables - OUR_TABLES if not t.startswith("sqlite_"))
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(submissions)")}
        if theirs or ("submissions" in tables and not {"assignment", "student", "suite_version"} <= columns):
            self._db.close()
            shown = ", ".join(theirs[:6]) + (", ..." if len(theirs) > 6 else "") if theirs else "submissions"
            raise StoreError(f"{self.path} is another program's database (it holds tables this grader does not "
                             f"make: {shown}; nbgrader's gradebook.db?), so nothing was written to it. Pass --db "
                             "with the results database `autograder grade` writes (grades.db beside course.yaml "
                             "unless --db named another)")

    def _refuse_if_outdated(self) -> None:
        """A read-only database that lacks what this version reads (new columns, the history) cannot be brought up
        to date here: say how to read it."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        unrecorded = "history" not in tables or (  # results from before the history, which an open records
            not self._db.execute("SELECT 1 FROM history LIMIT 1").fetchone()
            and self._db.execute("SELECT 1 FROM submissions LIMIT 1").fetchone())
        if unrecorded or self._changes():
            self._db.close()
            raise StoreError(f"{self.path} was written by an earlier version of autograder and cannot be updated "
                             "where it lies (this user cannot write it or its folder). Copy it to a writable folder "
                             "and pass --db with the copy, which is updated as it is opened.")

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def is_current(self, assignment: str, student: str, sha256: str, suite_version: str,
                   submitted_at: str = "") -> bool:
        """Whether this exact file, handed in at this time, was already graded with this exact suite (and the grader
        did not fail on it). The same file handed in again later is graded again: the stored time decides lateness."""
        row = self._db.execute("SELECT sha256, suite_version, submitted_at FROM submissions WHERE assignment=? AND "
                               "student=? AND internal_error=''", (assignment, student)).fetchone()
        return row == (sha256, suite_version, submitted_at)

    def grading_keys(self, assignment: str) -> dict[str, list[rerun.Stored]]:
        """student -> every hand-in of theirs standing, with the suite versions it was graded with (grading.rerun):
        one query for the whole class, which a rerun asks once, not once per student."""
        return rerun.stored_handins(self._db, assignment)

    def students(self, assignment: str) -> set[str]:
        """Every student id with a stored result for `assignment`, as stored."""
        return {row[0] for row in self._db.execute("SELECT DISTINCT student FROM submissions WHERE assignment=?",
                                                   (assignment,))}

    def save(self, result: SubmissionResult) -> None:
        """Replace the student's stored result with `result`, and add it to the history, atomically."""
        # Every result is kept in the history too (grading.history); built here, as it may read the hand-in.
        kept = history.kept(result, history.known_handin(self._db, result.sha256))
        self.write(lambda db: (self.replace(result.assignment, result.student, result), history.record(db, kept)))

    def write(self, action) -> None:
        """Run `action(db)` in one transaction, waiting out other graders: a write of several steps, all or none."""
        def write():
            with self._transaction():
                action(self._db)
        self._retry(write)

    def replace(self, assignment: str, student: str, result: SubmissionResult | None) -> None:
        """Make `result` the student's stored result (None: they have none), the history untouched; in a `write`."""
        self._db.execute("DELETE FROM submissions WHERE assignment=? AND student=?", (assignment, student))
        if result is None:
            return
        # Field by field, not dataclasses.asdict, whose deep copy cost the batch's main process ~2 ms a result.
        row = {f.name: to_column(f, getattr(result, f.name)) for f in self._columns["submissions"]}
        checks = self._columns["checks"]
        tests = [[to_column(f, getattr(test, f.name)) for f in checks] for test in getattr(result, self._tests.name)]
        cursor = self._db.execute(f"INSERT INTO submissions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                                  tuple(row.values()))
        self._db.executemany(f"INSERT INTO checks (submission_id, position, {', '.join(f.name for f in checks)}) "
                             f"VALUES (?, ?, {', '.join('?' * len(checks))})",
                             [(cursor.lastrowid, i, *values) for i, values in enumerate(tests)])

    def results(self, assignment: str | None = None, students: list[str] | None = None) -> list[SubmissionResult]:
        """Stored results (of these `students` only, when given), by assignment then student: two SELECTs, whatever
        the size of the class."""
        where, args = (" WHERE assignment=?", (assignment,)) if assignment else ("", ())
        if students is not None:
            where += (" AND" if where else " WHERE") + " student IN (SELECT value FROM json_each(?))"
            args += (json.dumps(students),)
        return self._results(where, args)

    def result(self, assignment: str, student: str) -> SubmissionResult | None:
        found = self._results(" WHERE assignment=? AND student=?", (assignment, student))
        return found[0] if found else None

    def history(self, assignment: str, students: list[str] | None = None, retracted: bool = False) -> list[Entry]:
        """Every result of `assignment` (these `students`' only, when given) the store has held, oldest first (grading.
        history; retracted hand-ins' only with `retracted`), in SQL statements that do not grow with the class."""
        return history.entries(self._db, assignment, lambda got: self.results(assignment, got), students, retracted)

    def several_handins(self, assignment: str, students: list[str]) -> set[str]:
        """Which of `students` have more than one hand-in kept, or a result a regrade held back: those whose counted
        result may not be the one stored last (grading.history.several_handins)."""
        return history.several_handins(self._db, assignment, students)

    def keep(self, entries: list[history.Kept]) -> None:
        """Add results to the history only, in one transaction (a regrade's results of earlier hand-ins)."""
        self.write(lambda db: [history.record(db, entry) for entry in entries])

    def retracted(self, assignment: str, students: list[str]) -> dict[tuple[str, str], str]:
        """(student, sha256) -> its retraction, of these students' hand-ins retracted and not standing: one query."""
        return history.retracted(self._db, assignment, students)

    def wholly_retracted(self, assignment: str, students: list[str]) -> set[str]:
        """Which of `students` were retracted whole, not hand-in by hand-in (grading.history.wholly_retracted)."""
        return history.wholly_retracted(self._db, assignment, students)

    def withdrawn(self, assignment: str) -> list[str]:
        """The students of `assignment` every hand-in of whom is retracted (grading.history.withdrawn)."""
        return history.withdrawn(self._db, assignment)

    def handins(self, sha256s: list[str]):
        """(sha256, bytes) of each of these hand-ins the store kept (grading.history), one query, one at a time."""
        return history.handins(self._db, sha256s)

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
        self.write(lambda db: db.executemany("INSERT OR REPLACE INTO reference_times VALUES (?, ?, ?, ?, ?)",
                                             [(suite_version, machine, name, seconds, calls)
                                              for name, (seconds, calls) in times.items()]))

    def assignments(self) -> list[str]:
        return [row[0] for row in self._db.execute("SELECT DISTINCT assignment FROM submissions ORDER BY 1")]

    def _results(self, where: str, args: tuple) -> list[SubmissionResult]:
        """The submissions matching `where` (an SQL condition on submissions) with their checks, by assignment
        then student: one query for the submissions and one for all their checks."""
        submissions, checks = self._columns["submissions"], self._columns["checks"]
        rows = self._db.execute(f"SELECT id, {', '.join(f.name for f in submissions)} FROM submissions{where} "
                                "ORDER BY assignment, student", args).fetchall()
        tests: dict[int, list] = {row[0]: [] for row in rows}
        for submission_id, *values in self._db.execute(
                f"SELECT submission_id, {', '.join(f.name for f in checks)} FROM checks WHERE submission_id IN "
                f"(SELECT id FROM submissions{where}) ORDER BY submission_id, position", args):
            tests[submission_id].append(self._tests.items(**from_columns(checks, values)))
        made = (self.kind(**from_columns(submissions, row), **{self._tests.name: tuple(tests[i])}) for i, *row in rows)
        return sorted(made, key=lambda r: (r.assignment, roster_order(r.student)))

    def _create(self) -> str:
        """The tables, for a new database."""
        return ";".join((SUBMISSIONS.format(", ".join(map(column_definition, self._columns["submissions"]))),
                         CHECKS.format(", ".join(map(column_definition, self._columns["checks"]))), INDICES,
                         REFERENCE_TIMES))

    def _migrate(self) -> None:
        """Bring a database from an earlier version up to the schema, in one transaction."""
        if not self._changes():
            return  # the usual case: nothing to write, so no write lock either
        with self._transaction():
            for statement in self._changes():  # again: another grader may have changed it meanwhile
                self._db.execute(statement)

    def _changes(self) -> list[str]:
        """What an earlier version's database lacks: a renamed field's column under its new name, new columns."""
        statements = []
        for table, columns in self._columns.items():
            present = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            for field in columns:
                if field.name in present:
                    continue
                if field.was in present:
                    statements.append(f"ALTER TABLE {table} RENAME COLUMN {field.was} TO {field.name}")
                else:
                    statements.append(f"ALTER TABLE {table} ADD COLUMN {column_definition(field)}")
                    if (table, field.name) in FILLED_WHEN_ADDED:
                        statements.append(FILLED_WHEN_ADDED[table, field.name])
        kept = {row[1] for row in self._db.execute("PRAGMA table_info(history)")}  # none yet: made with them all
        return statements + [f"ALTER TABLE history ADD COLUMN {made}" for name, made in history.ADDED.items()
                             if kept and name not in kept]

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

    For the commands that read grades (replay); raises StoreError saying what to do.
    """
    return _stored(db, assignment, Store.results)


def stored_history(db: Path, assignment: str | None) -> tuple[str, list[history.Entry]]:
    """Every result kept of one assignment (grading.history), oldest first; `assignment=None` picks the only one.

    For the commands that write grades out (report, export), which count a hand-in by the submissions policy:
    each result is read once. Raises StoreError saying what to do.
    """
    return _stored(db, assignment, Store.history)


def _stored(db: Path, assignment: str | None, read) -> tuple[str, list]:
    """(the assignment, `read(store, assignment)`) of the store at `db`; StoreError if there is nothing to read."""
    db = Path(db)
    if not db.is_file():
        raise StoreError(f"there is no results database at {db}. Grade first (`autograder grade ASSIGNMENT "
                         "PATH... --db PATH`) or pass --db with the database the grades went to.")
    with Store.for_reading(db) as store:
        known = store.assignments()
        if assignment is None:
            if not known:
                raise StoreError(f"{db} holds no results yet (a grade stopped before its first result leaves it so). "
                                 "Grade into it first: `autograder grade ASSIGNMENT PATH... --db PATH`.")
            if len(known) != 1:
                raise StoreError(f"{db} holds results of {len(known)} assignments ({', '.join(known) or 'none'}); "
                                 "pass --assignment NAME to pick one.")
            assignment = known[0]
        found = read(store, assignment)
    if not found:
        raise StoreError(f"{db} has no results for {assignment!r} (it holds: {', '.join(known) or 'nothing'}). "
                         "Check --assignment, or grade the assignment first.")
    return assignment, found
