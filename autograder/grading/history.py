"""Every result the store has held: each hand-in and each regrade, with its time, file hash, suite version and score.

The store's `submissions` table holds one result per student, the last one
saved, and decides what a rerun of `grade` skips. The `history` table here
keeps every result ever saved, in the lossless plain form of grading.results
(`result_to_plain`, grading.schema), so it follows the result dataclasses
whatever their fields become; `handins` keeps each graded file's bytes once, by SHA-256
(not compressed, which would cost the batch's main process more than it
saves), so that `regrade` can grade an earlier hand-in again after the class
folder has moved on. `Store.save` writes both in the transaction that writes
the result itself.

An attempt is one hand-in: one student's file hash and submission time. Its
results are the rows with that key, oldest first; the last one not held back
is the attempt's current result. A row is held back (`held`, the reason) when
`regrade --no-decrease` kept the earlier result because the new one scored
lower. A database from before this module gets its `submissions` rows as its
first history rows when first opened (`backfill`); should a row still be
missing from the history, it stands in for its hand-in (`entries`).
A hand-in withdrawn by `autograder retract` keeps its rows, marked `retracted`
(grading.retract); `entries` leaves them out unless asked for them.
"""
from __future__ import annotations

import dataclasses
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from autograder.grading.handin import read_bytes
from autograder.grading.late import FILE_TIME
from autograder.grading.lms_downloads import canvas_upload
from autograder.grading.results import SubmissionResult, result_from_plain, result_to_plain

SCHEMA = """
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY,
    assignment TEXT NOT NULL,
    student TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    submitted_at TEXT NOT NULL,
    suite_version TEXT NOT NULL,
    graded_at TEXT NOT NULL,
    score REAL NOT NULL,
    max_score REAL NOT NULL,
    held TEXT NOT NULL DEFAULT '',
    result TEXT NOT NULL,
    retracted TEXT NOT NULL DEFAULT '',
    retracted_whole INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS history_by_student ON history (assignment, student);
CREATE TABLE IF NOT EXISTS handins (
    sha256 TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
"""
# Hand-ins larger than this are not copied into the store (a notebook full of images); `regrade` then reads them
# from where they were graded, or from the class folder it is given.
KEPT_BYTES = 16 << 20
# Columns added to the history table since it was first made, with their definitions: a database from before one
# gets it added on open (grading.store's migration). `retracted`: why and when `autograder retract` withdrew the
# row's hand-in ("" when it stands); such rows are read only when asked for (`entries`), and by grading.retract.
# `retracted_whole`: 1 where it was retracted with every hand-in of the student (no --handin): the student, not a
# file, was the mistake, so no other file of theirs is graded in its place (an older database's rows: 0).
ADDED = {"retracted": "retracted TEXT NOT NULL DEFAULT ''",
         "retracted_whole": "retracted_whole INTEGER NOT NULL DEFAULT 0"}
# The columns a history row is found by: one grading of one hand-in (graded_at tells two gradings apart).
_KEY = ("assignment", "student", "sha256", "submitted_at", "suite_version", "graded_at")


@dataclass(frozen=True)
class Entry:
    """One result the store has held. order: when it was saved (0: held only in `submissions`, from an earlier
    version); held: why `regrade --no-decrease` kept the earlier result over this one ("" when it may count);
    retracted: when and why `autograder retract` withdrew its hand-in ("" when it stands: grading.retract)."""

    result: SubmissionResult
    order: int = 0
    held: str = ""
    retracted: str = ""


@dataclass(frozen=True)
class Attempt:
    """One hand-in of one student: number 1 is the first handed in; entries: its results, oldest first."""

    number: int
    entries: tuple[Entry, ...]

    @property
    def current(self) -> Entry:
        """The result that stands for this hand-in: its latest one not held back."""
        return next((e for e in reversed(self.entries) if not e.held), self.entries[0])

    @property
    def first(self) -> SubmissionResult:
        return self.entries[0].result

    @property
    def sha256(self) -> str:
        """The hand-in's file hash ("" when no result of it could read the file)."""
        return next((e.result.sha256 for e in self.entries if e.result.sha256), "")


@dataclass(frozen=True)
class Kept:
    """What `record` writes for one result: built before the write lock, because it reads the hand-in's file."""

    result: SubmissionResult
    text: str  # the result as JSON
    handin: bytes | None  # the file's bytes, when they are to be kept (None: kept already, or not to be)
    held: str = ""


def kept(result: SubmissionResult, have_bytes: bool = False, held: str = "") -> Kept:
    """`result` ready for `record`, with its hand-in's bytes when the file is still the one graded.

    have_bytes: the store holds this hand-in's bytes already. The file is read by the hand-in rule (grading.handin)
    and kept only when its hash is the result's: what is kept is exactly what was graded.
    """
    data = None
    if result.sha256 and not have_bytes and result.file:
        read = read_bytes(Path(result.file))
        if read.sha256 == result.sha256 and read.size <= KEPT_BYTES:
            data = read.data
    return Kept(result, json.dumps(result_to_plain(result)), data, held)


def known_handin(db: sqlite3.Connection, sha256: str) -> bool:
    return db.execute("SELECT 1 FROM handins WHERE sha256=?", (sha256,)).fetchone() is not None


def record(db: sqlite3.Connection, entry: Kept) -> None:
    """Add one result to the history, inside the caller's transaction; a result already there is not added twice.

    "Already there" is the same key and the same result: a changed result saved under the key of one kept (its
    checks rescored, its grading time kept) is a later result of that hand-in, and becomes its current one.
    """
    result = entry.result
    key = _key(result)
    where = " AND ".join(f"{name}=?" for name in _KEY)
    if db.execute(f"SELECT 1 FROM history WHERE {where} AND result=?", (*key, entry.text)).fetchone() is None:
        db.execute(f"INSERT INTO history ({', '.join(_KEY)}, score, max_score, held, result) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (*key, result.score, result.max_score, entry.held,
                                                              entry.text))
    if entry.handin is not None:
        db.execute("INSERT OR IGNORE INTO handins VALUES (?, ?)", (result.sha256, entry.handin))


def backfill(db: sqlite3.Connection, latest, transaction) -> None:
    """Once, for a database from before the history: its `submissions` rows become the first history rows.

    latest: () -> every stored result; transaction: the store's BEGIN IMMEDIATE ... COMMIT. Run on every
    open; it writes only while the history is empty and results are not, so that the next save does not
    replace a result the history never held.
    """
    if db.execute("SELECT 1 FROM history LIMIT 1").fetchone() or not db.execute(
            "SELECT 1 FROM submissions LIMIT 1").fetchone():
        return
    results = latest()
    with transaction():
        for result in results:
            record(db, Kept(result, json.dumps(result_to_plain(result)), None))


def handins(db: sqlite3.Connection, sha256s: list[str]):
    """(sha256, bytes) of each of these hand-ins the store kept, one query for them all, one at a time: the
    bytes of a whole class are never held at once."""
    for sha256, data in db.execute("SELECT sha256, data FROM handins WHERE sha256 IN (SELECT value FROM "
                                   "json_each(?))", (json.dumps(sorted(set(sha256s))),)):
        yield sha256, bytes(data)


def retracted(db: sqlite3.Connection, assignment: str, students: list[str]) -> dict[tuple[str, str], str]:
    """(student, sha256) -> the retraction's note, for these students' hand-ins that are retracted and not also
    standing under another row (the same bytes handed in again and kept): read from the columns, no result."""
    rows = db.execute("SELECT student, sha256, MAX(retracted), MIN(retracted) FROM history WHERE assignment=? AND "
                      "student IN (SELECT value FROM json_each(?)) AND sha256 != '' GROUP BY student, sha256 "
                      "HAVING MAX(retracted) != ''", (assignment, json.dumps(sorted(set(students)))))
    return {(student, sha256): note for student, sha256, note, least in rows if least != ""}


def wholly_retracted(db: sqlite3.Connection, assignment: str, students: list[str]) -> set[str]:
    """Which of `students` had a retraction of the whole student (`retract` without --handin) standing."""
    rows = db.execute("SELECT DISTINCT student FROM history WHERE assignment=? AND student IN (SELECT value FROM "
                      "json_each(?)) AND retracted != '' AND retracted_whole = 1", (assignment, json.dumps(students)))
    return {student for (student,) in rows}


def several_handins(db: sqlite3.Connection, assignment: str, students: list[str]) -> set[str]:
    """Which of `students` have more than one hand-in kept, or a result a regrade held back: one query on the
    history's columns; no result is read."""
    rows = db.execute(
        "SELECT student FROM history WHERE assignment=? AND student IN (SELECT value FROM json_each(?)) "
        "GROUP BY student HAVING COUNT(DISTINCT sha256 || ' ' || submitted_at) > 1 OR MAX(held != '') = 1",
        (assignment, json.dumps(students)))
    return {student for (student,) in rows}


def withdrawn(db: sqlite3.Connection, assignment: str) -> list[str]:
    """The students of `assignment` every hand-in of whom is retracted: they have no result, and what an export
    wrote of theirs before is stale. Read from the columns, no result."""
    rows = db.execute("SELECT student FROM history WHERE assignment=? GROUP BY student HAVING MIN(retracted) != ''",
                      (assignment,))
    return sorted(student for student, in rows)


def entries(db: sqlite3.Connection, assignment: str, latest, students: list[str] | None = None,
            retracted: bool = False) -> list[Entry]:
    """Every result of `assignment` kept (of these `students` only, when given), in the order saved; those of
    retracted hand-ins only with `retracted` (`history` and `retract` show them; every grade written out is
    chosen from the others, so a retracted hand-in counts nowhere).

    latest: (students) -> those students' results in the `submissions` table. It is asked only for the rare
    students it must stand in for: a result there but not in the history (a database from before the history),
    added first, and a history row whose JSON no longer reads. The usual read is one query for the history and
    one for the keys of `submissions`, each result read once, whatever the size of the class.
    """
    where, args = ("assignment=?", (assignment,))
    if students is not None:
        where, args = where + " AND student IN (SELECT value FROM json_each(?))", args + (json.dumps(students),)
    # Put in order here, not by SQL: an ORDER BY id would have SQLite sort every row's JSON in a temporary table
    # (or, given students, walk the whole class's rows in id order rather than look theirs up by student).
    rows = db.execute(f"SELECT id, held, retracted, result, {', '.join(_KEY)}, max_score FROM history WHERE {where}",
                      args)
    read = sorted((_read(order, held, tuple(key), max_score, text, withdrawn)
                   for order, held, withdrawn, text, *key, max_score in rows), key=lambda row: row.order)
    kept_keys = {row.key for row in read}  # a retracted row's too: its `submissions` row stands in for nothing
    read = [row for row in read if retracted or not row.retracted]
    missing = [key for key in db.execute(f"SELECT {', '.join(_KEY)} FROM submissions WHERE {where}", args)
               if key not in kept_keys]
    wanted = {key[1] for key in missing} | {row.key[1] for row in read if row.result is None}
    same = {_key(r): r for r in latest(sorted(wanted))} if wanted else {}
    found = [Entry(row.result if row.result is not None else _stand_in(row, same), row.order, row.held,
                   row.retracted) for row in read]
    return [Entry(same[key]) for key in missing if key in same] + found


def attempts(found: list[Entry]) -> dict[str, list[Attempt]]:
    """student -> their hand-ins, in the order handed in (by submission time, then by when last graded).

    Two files handed in at the same time (a class folder's timestamp kept while its file changed) are ordered by
    their latest grading: a file put back in the folder after another was graded is graded again, and is the
    later hand-in. A regrade grades every hand-in in this order, which keeps it.

    A result of no file (sha256 "": the grader failed before reading it) belongs to the hand-in of the same
    student handed in at the same time, if there is one. A time read off the file itself (FILE_TIME: no
    timestamp.txt or LMS time could be read) is no time the student handed in at: such a result belongs to the
    hand-in of the same bytes with a time stated for it, if there is one, so a timestamp.txt mended after the
    fact makes no second, later hand-in of the same file. Else it joins the latest earlier hand-in of the same
    bytes, however many came after it (`found_again`, the rule a rerun of `grade` skips files by).
    """
    stated = {(e.result.student, e.result.sha256): e.result for e in found
              if e.result.sha256 and e.result.submitted_at_source != FILE_TIME}
    groups: dict[str, dict[tuple[str, str], list[Entry]]] = {}
    # The results of files first, so that one of no file finds the file's hand-in of its time whichever came first
    # (an nbgrader folder graded before its notebook was put in, under the same timestamp.txt).
    for entry in sorted(found, key=lambda e: (not e.result.sha256, e.order)):
        result = entry.result
        mine = groups.setdefault(result.student, {})
        key = (result.submitted_at, result.sha256)
        if not result.sha256:
            key = next((k for k in mine if k[0] == result.submitted_at), key)
        elif result.submitted_at_source == FILE_TIME and (result.student, result.sha256) in stated:
            known = stated[result.student, result.sha256]  # its time and source, whichever was graded last
            key = (known.submitted_at, known.sha256)
            entry = dataclasses.replace(entry, result=dataclasses.replace(
                result, submitted_at=known.submitted_at, submitted_at_source=known.submitted_at_source))
        mine.setdefault(key, []).append(entry)
    by_student = {}
    for student, mine in groups.items():
        mine = {key: sorted(group, key=lambda e: e.order) for key, group in mine.items()}
        ordered = _fetched_again(sorted(mine.values(), key=lambda group: (group[0].result.submitted_at,
                                                                         group[-1].order)))
        by_student[student] = [Attempt(n, tuple(group)) for n, group in enumerate(ordered, start=1)]
    return by_student


def found_again(earlier: list[tuple[str, set[str]]], sha256: str, names: set[str]) -> int | None:
    """Which of a student's `earlier` hand-ins (in time order, each its sha256 and the file names it was graded
    under) a file whose only time is its file time (FILE_TIME) is, found again; None when it is a new hand-in.

    The one rule for a rerun of `grade` (grading.rerun) and for numbering hand-ins (`attempts`). A file time says
    when a folder was copied or a zip downloaded, not when the student handed in: such a file with the bytes of
    any earlier hand-in is that hand-in (the latest of them) fetched again, however many came after it, so a
    copy of last week's folder makes no new hand-in that counts. A Canvas file name carries its upload's own id
    (lms_downloads.canvas_upload): the same bytes under another upload's id are the student handing the same code
    in again, a hand-in of its own. A student who hands in old code again in a layout with only file times
    (a flat folder, Moodle) cannot be told from a copy; a stated time (nbgrader, Blackboard's attempts) can."""
    if not sha256:  # no file was read (a PDF-only folder): two such hand-ins are no evidence of one file
        return None
    uploads = {canvas_upload(name) for name in names} - {None}
    for index in reversed(range(len(earlier))):
        digest, their_names = earlier[index]
        theirs = {canvas_upload(name) for name in their_names} - {None}
        if digest == sha256 and not (uploads and theirs and not uploads & theirs):
            return index
    return None


def _fetched_again(ordered: list[list[Entry]]) -> list[list[Entry]]:
    """One student's hand-ins in time order, each whose every time was read off its file (FILE_TIME) joined to the
    earlier hand-in it is found again (`found_again`): the class folder copied or an LMS's zip downloaded again
    gives its files new times, and no new hand-in. The joined one takes that hand-in's time, its results kept in
    the order they were graded."""
    joined: list[list[Entry]] = []
    for group in ordered:
        sha256 = _sha256(group)
        index = None
        if sha256 and all(entry.result.submitted_at_source == FILE_TIME for entry in group):
            index = found_again([(_sha256(earlier), _names(earlier)) for earlier in joined], sha256, _names(group))
        if index is None:
            joined.append(list(group))
            continue
        first = joined[index][0].result
        moved = [dataclasses.replace(entry, result=dataclasses.replace(
            entry.result, submitted_at=first.submitted_at, submitted_at_source=first.submitted_at_source))
            for entry in group]
        joined[index] = sorted(joined[index] + moved, key=lambda entry: entry.order)
    return joined


def _sha256(group: list[Entry]) -> str:
    """A hand-in's file hash: its first result that read the file ("" when none did)."""
    return next((entry.result.sha256 for entry in group if entry.result.sha256), "")


def _names(group: list[Entry]) -> set[str]:
    """The file names a hand-in was graded under."""
    return {Path(entry.result.file).name for entry in group if entry.result.file}


def _key(result: SubmissionResult) -> tuple:
    return tuple(getattr(result, name) for name in _KEY)


class _Row(NamedTuple):
    """One history row as read: its result, or None and why it no longer reads (damaged in the database)."""

    order: int
    held: str
    key: tuple  # _KEY's values
    max_score: float
    result: SubmissionResult | None
    why: str = ""
    retracted: str = ""


def _read(order: int, held: str, key: tuple, max_score: float, text: str, retracted: str = "") -> _Row:
    """A history row with its result parsed from the kept JSON, as the row is read (its text is not kept).

    grading.schema: a field renamed since is read under its earlier name, one added since takes its default.
    """
    try:
        return _Row(order, held, key, max_score, result_from_plain(json.loads(text)), retracted=retracted)
    except (ValueError, TypeError) as error:
        return _Row(order, held, key, max_score, None, str(error), retracted)


def _stand_in(row: _Row, same: dict[tuple, SubmissionResult]) -> SubmissionResult:
    """What stands for a history row whose JSON no longer reads: it costs only its student.

    The same result in the `submissions` table (`same`, by key) stands in for it, or else it becomes an
    internal error of theirs, zero and flagged, that says how to grade it again. Every other result still reads.
    """
    if row.key in same:
        return same[row.key]
    assignment, student, sha256, submitted_at, suite_version, graded_at = row.key
    why = (f"the stored result (history row {row.order}) could not be read: {row.why}. Grade it again with "
           f"`autograder regrade {assignment} --students {student}`")
    return SubmissionResult(student=student, assignment=assignment, file="", sha256=sha256,
                            suite_version=suite_version, seed=0, sandbox="", tests=(), score=0.0,
                            max_score=row.max_score, problem="internal error: " + why, submitted_at=submitted_at,
                            graded_at=graded_at, internal_error=why)
