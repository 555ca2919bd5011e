"""Gradebook files that Canvas, Moodle and Blackboard import as they are, one row per roster student.

Each format is the LMS's documented import format (README "LMS gradebooks"
links each page):

- Canvas (Grades > Import): CSV whose header is `Student, ID, SIS User ID,
  SIS Login ID, Section` and then the assignment column, `Title (id)` for an
  existing assignment or `Title` for a new one; its second row starts with
  `Points Possible`. Canvas finds a student by ID, else SIS User ID, else SIS
  Login ID, else name; a blank cell changes nothing.
- Moodle (Grade administration > Import > CSV file): CSV with a header row;
  the import maps one identifier column to username, email or ID number, the
  grade column to the grade item and the feedback column, a column of its
  own, to that item's feedback.
- Blackboard (Grade Center > Work Offline > Upload): tab-delimited, with a
  `Username` column identifying each student, and the grade column
  `Title [Total Pts: N Score] |COLUMN_ID` for an existing column (without the
  id, Blackboard makes a new text column).

Totals are the counted hand-in's (grading.attempts) after the late rule
(grading.late). A roster student with no counted result gets the course's
choice (`submissions.missing`): blank, or 0. Identity cells are written as the
roster gives them, since the LMS matches them exactly; names and feedback,
text that may come from elsewhere, cannot start a spreadsheet formula.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import TextIO

from autograder.grading.late import LateRule, assess_result
from autograder.grading.lms_downloads import canvas_user
from autograder.grading.results import SubmissionResult
from autograder.outputs.grades_csv import cell

# Roster fields an LMS export reads (outputs.roster); first_name/last_name are nbgrader's, used when `name` is not.
ROSTER_FIELDS = ("name", "first_name", "last_name", "email", "username", "lms_id", "sis_user_id", "sis_login_id",
                 "section")
CANVAS_HEADER = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS = "Points Possible"
MOODLE_HEADER = ("Username", "Email address", "ID number", "Full name")
BLACKBOARD_HEADER = ("Last Name", "First Name", "Username", "Student ID")


@dataclass(frozen=True)
class Column:
    """The gradebook column: its title, the LMS's id of an existing column ("" for a new one), its points."""

    title: str
    column_id: str
    points: float


@dataclass(frozen=True)
class Row:
    """One roster student's row: who they are to the LMS, their total ("" when none) and feedback."""

    student: str
    identity: dict[str, str]
    total: str
    feedback: str


@dataclass(frozen=True)
class Lms:
    """One LMS's format: its writer, the file suffix, the roster fields of which a row needs one, its docs."""

    write: object  # (rows, column, stream) -> None
    suffix: str
    identities: tuple[str, ...]
    docs: str


def rows(roster: dict[str, dict[str, str]], results: list[SubmissionResult], rule: LateRule | None,
         missing: str) -> tuple[list[Row], list[str]]:
    """(one row per roster student, in roster order; the students with a result who are not on the roster).

    missing: "blank" or "zero", for a roster student with no result, or whose result is the grader's own
    failure (an internal error is no grade: regrade it).
    """
    by_student = {r.student: r for r in results}
    empty = "0" if missing == "zero" else ""
    made = []
    for student, identity in roster.items():
        result = by_student.get(student)
        if result is None or result.internal_error:
            made.append(Row(student, identity, empty, "No hand-in was graded." if result is None else
                            "Not graded yet: the grader failed on this hand-in."))
            continue
        late = assess_result(rule, result)
        feedback = " ".join([f"{_number(late.total)} of {_number(result.max_score)} points; "
                             f"{result.counts()['passed']} of {len(result.tests)} checks passed.",
                             *([late.reason[0].upper() + late.reason[1:] + "."] if late.reason else []),
                             *[n for n in result.notes if n.startswith("Hand-in ")]])
        made.append(Row(student, identity, _number(late.total), feedback))
    return made, sorted(set(by_student) - set(roster))


def by_canvas_user(roster: dict[str, dict[str, str]], students: set[str]) -> dict[str, dict[str, str]]:
    """The roster, each entry keyed by Canvas user id (as Canvas's gradebook export keys it, outputs.roster) moved
    to the stored student a Canvas download gave that user (`smithjohn_4101`, grading.lms_downloads); entries
    that name a stored student already, or whose user has no such student or two, stay as they are."""
    users: dict[str, list[str]] = {}
    for student in students:
        users.setdefault(canvas_user(student) or "", []).append(student)
    moved = {key: users[key][0] for key in roster
             if key not in students and len(users.get(key, [])) == 1 and users[key][0] not in roster}
    return {moved.get(key, key): who for key, who in roster.items()}


def unidentified(made: list[Row], identities: tuple[str, ...]) -> list[str]:
    """Students whose roster entry has none of the fields this LMS finds a student by."""
    return [row.student for row in made if not any(row.identity.get(name) for name in identities)]


def write_canvas(made: list[Row], column: Column, stream: TextIO) -> None:
    """Canvas's gradebook CSV: the five identity columns, the assignment column and the Points Possible row."""
    title = f"{column.title} ({column.column_id})" if column.column_id else column.title
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow([*CANVAS_HEADER, cell(title)])
    writer.writerow([CANVAS_POINTS, "", "", "", "", _number(column.points)])
    for row in made:
        who = row.identity
        writer.writerow([cell(full_name(who, last_first=True)), who.get("lms_id", ""), who.get("sis_user_id", ""),
                         who.get("sis_login_id", ""), who.get("section", ""), row.total])


def write_moodle(made: list[Row], column: Column, stream: TextIO) -> None:
    """Moodle's grade import CSV: identifier columns, the grade column and its feedback in a column of its own."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow([*MOODLE_HEADER, cell(column.title), cell(f"{column.title} (Feedback)")])
    for row in made:
        who = row.identity
        writer.writerow([who.get("username", ""), who.get("email", ""), who.get("sis_user_id", ""),
                         cell(full_name(who)), row.total, cell(row.feedback)])


def write_blackboard(made: list[Row], column: Column, stream: TextIO) -> None:
    """Blackboard's Grade Center upload: tab-delimited, Username identifying each student, no quote characters."""
    title = f"{column.title} [Total Pts: {_number(column.points)} Score] |{column.column_id}" if column.column_id \
        else column.title
    stream.write("\t".join([*BLACKBOARD_HEADER, _tabless(title)]) + "\n")
    for row in made:
        who = row.identity
        last, first = _split_name(who)
        cells = [cell(last), cell(first), who.get("username", ""), who.get("sis_user_id", ""), row.total]
        stream.write("\t".join(_tabless(c) for c in cells) + "\n")


FORMATS = {
    "canvas": Lms(write_canvas, ".csv", ("lms_id", "sis_user_id", "sis_login_id", "name"),
                  "https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807"),
    "moodle": Lms(write_moodle, ".csv", ("username", "email", "sis_user_id"), "https://docs.moodle.org/en/Grade_import"),
    "blackboard": Lms(write_blackboard, ".xls", ("username",),
                      "http://library.blackboard.com/ref/3ea64795-6ecc-4abd-b595-0a9a8dfdec94/Content/_instructor_grade_center/"
                      "grade_center_upload_download.htm"),
}


def full_name(who: dict[str, str], last_first: bool = False) -> str:
    """The roster's `name`, else first and last name (as "Last, First" with `last_first`, as Canvas sorts)."""
    if who.get("name"):
        return who["name"]
    first, last = who.get("first_name", ""), who.get("last_name", "")
    if last_first and first and last:
        return f"{last}, {first}"
    return " ".join(part for part in (first, last) if part)


def _split_name(who: dict[str, str]) -> tuple[str, str]:
    """(last name, first name): the roster's own, else from `name` ("Last, First" or "First Last")."""
    if who.get("first_name") or who.get("last_name"):
        return who.get("last_name", ""), who.get("first_name", "")
    name = who.get("name", "")
    if "," in name:
        last, first = name.split(",", 1)
        return last.strip(), first.strip()
    first, _, last = name.rpartition(" ")
    return (last, first) if first else (name, "")


def _tabless(value: str) -> str:
    """A cell of a tab-delimited file, which has no quoting: no tab or line break inside it."""
    return " ".join(value.replace("\t", " ").splitlines())


def _number(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")
