"""Which of a class's files a rerun of `grade` finds already graded: any stored hand-in of the student, not only the
last one.

A hand-in is one student's file hash and submission time (grading.history). A file found again is a stored hand-in
when it has that hand-in's bytes and time. Where its only time was read off the file itself (FILE_TIME: a flat
folder, a Moodle or Canvas download, whose copy or second download gives its files new times), it is also any
earlier hand-in of the student's with its bytes, by the rule that numbers hand-ins (grading.history.found_again),
however many hand-ins came after it; only a Canvas file name, which carries each upload's own id, tells a student
handing old code in again from a copy. Where the time is stated (nbgrader's timestamp.txt, Blackboard's attempts,
Gradescope), the same bytes at a new time are a hand-in of their own (A, then B, then A again: the last A counts).

Everything is read in one query for the class (`stored_handins`), so a rerun costs the same few statements whatever
the class's size; only the few students whose earlier hand-in is found again have their history read, to say so.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from autograder.grading.attempts import choose
from autograder.grading.history import Attempt, attempts, found_again
from autograder.grading.late import FILE_TIME
from autograder.text import command, safe

CANVAS = "Canvas"  # grading.lms_downloads' name for the one LMS whose file names identify each upload
CHUNK = 500  # students whose history is read at once to number their hand-ins
SHOWN = 10  # files found again said one by one; the rest in one line (a copied old class: one per student)
FILE_TIME_ONLY = "the same bytes; only its file time is newer"  # why such a file is no new hand-in
# Said once by a rerun that took a file for an earlier hand-in by its bytes alone: what if it really was one.
SAME_CODE_AGAIN = (
    "note: a file whose only time is its file time (a flat folder, a Moodle download, a copy of either) with the "
    "bytes of an earlier hand-in of the student is taken for that hand-in copied or downloaded again, not a new "
    "hand-in. If a student really handed the same code in again, grade that hand-in where its time or id is "
    "stated: the LMS's own download that tells hand-ins apart (Canvas's upload ids, Blackboard's attempts), or "
    "an nbgrader submitted/STUDENT/ASSIGNMENT/ folder with its timestamp.txt")


class Stored(NamedTuple):
    """One stored hand-in of one student, as a rerun compares files with it."""

    sha256: str
    submitted_at: str
    name: str  # the name of the file graded (a Canvas download's names carry the upload's id)
    versions: frozenset[str]  # the suite versions it was graded with, the grader not failing on it
    retracted: bool = False  # every result of it retracted (`autograder retract`): found again, it stays out


class Again(NamedTuple):
    """A file found that is a stored hand-in other than the student's last, skipped: what `grade` says of it."""

    student: str
    file: str  # the file's name as found now
    submitted_at: str  # its time as found now (a newer file time: a copy, or a download again)
    handin: Stored
    canvas: bool = False  # found in a Canvas download, whose file names identify each upload


def stored_handins(db: sqlite3.Connection, assignment: str) -> dict[str, list[Stored]]:
    """student -> every hand-in of theirs, in the order handed in, retracted ones marked: one query for the class.

    The `submissions` row is read beside the history's rows, for a result the history might lack (grading.history
    `entries`); a result the grader failed on adds no suite version, so its hand-in is graded again. A retracted
    hand-in is kept so that a copy of it found again is known: a copied Canvas download of a withdrawn upload,
    whose bytes a later upload still has, had been graded back in as a new hand-in."""
    rows = db.execute(
        "SELECT student, sha256, submitted_at, suite_version, file, internal_error != '', 0 FROM submissions "
        "WHERE assignment=? UNION ALL SELECT student, sha256, submitted_at, suite_version, "
        "json_extract(result, '$.file'), COALESCE(json_extract(result, '$.internal_error'), '') != '', "
        "retracted != '' FROM history WHERE assignment=?", (assignment, assignment))
    found: dict[str, dict[tuple[str, str], tuple[str, set[str], list[bool]]]] = {}
    for student, sha256, submitted_at, version, file, failed, retracted in rows:
        name, versions, marks = found.setdefault(student, {}).setdefault((sha256, submitted_at),
                                                                         (file or "", set(), []))
        marks.append(bool(retracted))
        if not failed:
            versions.add(version)
    return {student: [Stored(sha, at, Path(name).name, frozenset(versions), all(marks))
                      for (sha, at), (name, versions, marks) in sorted(mine.items(), key=lambda kv: kv[0][1])]
            for student, mine in found.items()}


def same_handin(mine: list[Stored], digest: str, item) -> Stored | None:
    """The stored hand-in (of `mine`, in time order) that `item` (a grading.found.Found), whose file's sha256 is
    `digest`, is again; None when it is a new hand-in. An earlier file time than the stored one's is a new hand-in
    too: grading it gives the hand-in that earlier time (grading.history)."""
    exact = next((handin for handin in mine if handin.sha256 == digest and handin.submitted_at == item.submitted_at),
                 None)
    if exact is not None or item.submitted_at_source != FILE_TIME:
        return exact
    before = [handin for handin in mine if handin.submitted_at <= item.submitted_at]
    index = found_again([(handin.sha256, {handin.name}) for handin in before], digest, {item.path.name})
    return None if index is None else before[index]


def is_last(mine: list[Stored], handin: Stored) -> bool:
    """Whether `handin` is the student's last hand-in standing: a file found again of an earlier one, or of one
    retracted, is worth a word."""
    standing = [one for one in mine if not one.retracted]
    return not handin.retracted and bool(standing) and standing[-1] == handin


def again_lines(store, assignment, again: list[Again]) -> Iterable[str]:
    """What `grade` says of the files skipped as an earlier hand-in found again: each one's number and which one
    counts, for the first SHOWN of them, then how many more (a copy of an old whole class would give a line per
    student), and once what to do when a student really handed the same code in again.

    store: grading.store.Store; assignment: its grading.course.Assignment. Only these students' history is read.
    A file that is the student's last hand-in after all (the history joins stored copies of it) is said nothing of."""
    numbered, with_retracted = _numbered(store, assignment, [one for one in again if not one.handin.retracted]), \
        _numbered(store, assignment, [one for one in again if one.handin.retracted], retracted=True)
    lines, by_file_time, more = 0, False, []
    for one in again:
        if one.handin.retracted:
            line = _retracted_line(one, with_retracted.get(one.student, []), assignment)
        else:
            mine = numbered.get(one.student)
            line = _again_line(one, mine, assignment) if mine else None
        if line is None:
            continue
        by_file_time = by_file_time or FILE_TIME_ONLY in line
        lines += 1
        if lines <= SHOWN:
            yield safe(line, 2000)
        else:
            more.append(one.student)
    if more:
        yield safe(_more_line(more, assignment), 2000)
    if by_file_time:
        yield SAME_CODE_AGAIN


def _numbered(store, assignment, again: list[Again], retracted: bool = False) -> dict[str, list[Attempt]]:
    """The hand-ins of the students of `again`, numbered as `history` numbers them (retracted ones too, with
    `retracted`), read CHUNK students at a time."""
    students = sorted({one.student for one in again})
    numbered: dict[str, list[Attempt]] = {}
    for start in range(0, len(students), CHUNK):
        numbered.update(attempts(store.history(assignment.name, students[start:start + CHUNK], retracted)))
    return numbered


def _retracted_line(one: Again, mine: list[Attempt], assignment) -> str:
    """The line for a file found again that is a retracted hand-in: it stays out, and how to put it back."""
    number = _number(one.handin, mine)
    which = f"hand-in {number}" if number else "a hand-in"
    return (f"{one.student}: {one.file} is {which} of theirs again, retracted earlier: not graded, and it counts "
            f"nowhere. `{command('retract', [assignment.name, one.student], ['--handin', number or 'N', '--undo'])}`"
            " puts it back")


def _number(handin: Stored, mine: list[Attempt]) -> int:
    """The number `history` gives the hand-in holding `handin`'s result (its bytes at its time); 0 for none."""
    return next((a.number for a in mine if any(e.result.sha256 == handin.sha256 and
                                               e.result.submitted_at == handin.submitted_at for e in a.entries)), 0)


def _more_line(students: list[str], assignment) -> str:
    """The one line that stands for the files found again past the first SHOWN."""
    named = ", ".join(students[:SHOWN]) + (", ..." if len(students) > SHOWN else "")
    return (f"... and {len(students)} more files are earlier hand-ins found again ({named}): not graded again, and "
            f"the hand-in that counts is unchanged. `{command('history', [assignment.name, 'STUDENT'])}` lists a "
            "student's hand-ins and which one counts")


def _again_line(one: Again, mine: list[Attempt], assignment) -> str | None:
    """The line for one file found again; None when it is the student's last hand-in, which is no news."""
    number = _number(one.handin, mine) or next((a.number for a in mine if a.sha256 == one.handin.sha256), 0)
    if number == len(mine):
        return None
    counted = choose(mine, assignment.submissions, assignment.late).counted.number
    why = ""
    if one.submitted_at != one.handin.submitted_at:  # why a file with a newer time is no new hand-in
        why = (" (the same Canvas upload, downloaded again: only its file time is newer)"
               if one.canvas and one.file == one.handin.name else f" ({FILE_TIME_ONLY})")
    counts = "it still counts" if counted == number else f"hand-in {counted} of {len(mine)} still counts"
    return (f"{one.student}: {one.file} is hand-in {number} of {len(mine)} again{why}, already graded with this "
            f"suite: not graded again, and {counts} (policy: {assignment.submissions.policy}). "
            f"`{command('history', [assignment.name, one.student])}` lists every hand-in; `autograder retract` "
            "withdraws one handed in by mistake")
