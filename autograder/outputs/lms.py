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
- Moodle's grading worksheet (an assignment's View all submissions > Upload grading worksheet, with the
  "Offline grading worksheet" feedback type on), written where the roster is the worksheet Moodle gave:
  CSV whose `Identifier` (`Participant 123456`) finds the student, `Grade` and `Last modified (grade)`
  columns, and the feedback in `Feedback comments`. Moodle skips a row's grade where it is blank, above the
  assignment's maximum, or changed in Moodle since its `Last modified (grade)`; it imports the feedback all
  the same.
- Blackboard (Grade Center > Work Offline > Upload): tab-delimited, with a
  `Username` column identifying each student, and the grade column
  `Title [Total Pts: N Score] |COLUMN_ID` for an existing column (without the
  id, Blackboard makes a new text column).

Totals are the counted hand-in's (grading.attempts) after the late rule
(grading.late). A roster student with no counted result gets the course's
choice (`submissions.missing`): blank, or 0; Moodle's files leave a blank one out. Identity cells are written as the
roster gives them, since the LMS matches them exactly; names and feedback,
text that may come from elsewhere, cannot start a spreadsheet formula.
"""
from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TextIO

from autograder.grading.ids import canonical, roster_order
from autograder.grading.late import LateRule, assess_result
from autograder.grading.lms_downloads import canvas_user, moodle_participant
from autograder.grading.regrade import kept_by_no_decrease
from autograder.grading.results import SubmissionResult
from autograder.outputs.grades_csv import cell
from autograder.text import safe

# Roster fields an LMS export reads (outputs.roster); first_name/last_name are nbgrader's, used when `name` is not.
ROSTER_FIELDS = ("name", "first_name", "last_name", "email", "username", "lms_id", "sis_user_id", "sis_login_id",
                 "section", "participant", "max_grade")
CANVAS_HEADER = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS = "Points Possible"
MOODLE_HEADER = ("Username", "Email address", "ID number", "Full name")
BLACKBOARD_HEADER = ("Last Name", "First Name", "Username", "Student ID")
MOODLE_WORKSHEET_HEADER = ("Identifier", "Full name", "Email address", "Grade", "Last modified (grade)",
                           "Feedback comments")


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
    out_of: float | None = None  # the result's own maximum (None: no grade)
    kept: bool = False  # the result is kept from an earlier suite by `regrade --no-decrease`


@dataclass(frozen=True)
class Lms:
    """One LMS's format: its writer, the file suffix, the roster fields of which a row needs one, its docs."""

    write: object  # (rows, column, stream) -> None
    suffix: str
    identities: tuple[str, ...]
    docs: str
    user_of: Callable[[str], str | None] | None = None  # where the roster is keyed by the LMS's user: see by_lms_user
    # Whether a student with a blank grade is left out of the file: Moodle imports a row's feedback even where it
    # skips its blank grade, and would replace what a TA wrote there; a row left out changes nothing.
    leaves_out_blank: bool = False

    def written(self, made: list[Row]) -> tuple[list[Row], str]:
        """The rows this format's file holds, and what to add to the export's summary where some are left out."""
        kept = [row for row in made if row.total != ""] if self.leaves_out_blank else made
        said = ", left out of the file: Moodle would import a row's feedback over theirs, though it skips a blank grade"
        return kept, said if len(kept) < len(made) else ""


# The feedback of a roster student given no grade: no result stored, or only the grader's own failure.
NO_GRADE = ("No hand-in was graded.", "Not graded yet: the grader failed on this hand-in.")


def rows(roster: dict[str, dict[str, str]], results: list[SubmissionResult], rule: LateRule | None,
         missing: str) -> tuple[list[Row], list[str]]:
    """(one row per roster student, in roster order; the students with a result who are not on the roster).

    missing: "blank" or "zero", for a roster student with no result, or whose result is the grader's own
    failure (an internal error is no grade: regrade it).
    """
    # Matched as ids are everywhere (grading.ids): a name a Mac's zip wrote decomposed (José as e + ◌́) is the
    # roster's José. Stored ids are unique in that form, as discovery settles them.
    by_student = {canonical(r.student): r for r in results}
    by_member = _group_members(results)
    empty = "0" if missing == "zero" else ""
    made = []
    for student, identity in roster.items():
        result = by_student.get(canonical(student)) or by_member.get(canonical(student))
        if result is None or result.internal_error:
            made.append(Row(student, identity, empty, NO_GRADE[result is not None]))
            continue
        late = assess_result(rule, result)
        # A file that did not load or had nothing to grade says why in the one line the student sees in the LMS.
        problem = [f"Not graded: {safe(result.problem, 300).rstrip('.')}."] if result.problem else []
        feedback = " ".join([f"{_number(late.total)} of {_number(result.max_score)} points; "
                             f"{result.counts()['passed']} of {len(result.tests)} checks passed.", *problem,
                             *([late.reason[0].upper() + late.reason[1:] + "."] if late.reason else []),
                             *[n for n in result.notes if n.startswith("Hand-in ")]])
        made.append(Row(student, identity, _number(late.total), feedback, result.max_score,
                        kept_by_no_decrease(result)))
    on_roster = {canonical(student) for student in roster}
    return made, sorted((r.student for key, r in by_student.items()
                         if key not in on_roster and not on_roster & set(key.split(","))), key=roster_order)


def _group_members(results: list[SubmissionResult]) -> dict[str, SubmissionResult]:
    """Each member of a group hand-in -> the group's result: a Gradescope group is stored under its submitters'
    emails joined with "," (grading.gradescope_export), and each member's LMS row gets its grade. A member of two
    groups gets neither (which counts is for a person to say)."""
    members: dict[str, list[SubmissionResult]] = {}
    for result in results:
        parts = canonical(result.student).split(",")
        for member in parts if len(parts) > 1 else ():
            members.setdefault(member, []).append(result)
    return {member: groups[0] for member, groups in members.items() if len(groups) == 1}


def by_lms_user(roster: dict[str, dict[str, str]], students: set[str],
                user_of: Callable[[str], str | None]) -> dict[str, dict[str, str]]:
    """The roster, each entry keyed by the LMS's number for a user (as Canvas's gradebook export and Moodle's
    worksheet key it, outputs.roster) moved to the stored student the LMS's download gave that user
    (`smithjohn_4101`, grading.lms_downloads); entries that name a stored student already, or whose user has no
    such student or two, stay as they are. user_of: a stored student's user number, None for none (canvas_user,
    moodle_participant)."""
    users: dict[str, list[str]] = {}
    for student in students:
        users.setdefault(user_of(student) or "", []).append(student)
    moved = {key: users[key][0] for key in roster
             if key not in students and len(users.get(key, [])) == 1 and users[key][0] not in roster}
    return {moved.get(key, key): who for key, who in roster.items()}


def shared_users(roster: dict[str, dict[str, str]], students: set[str],
                 user_of: Callable[[str], str | None]) -> dict[str, list[str]]:
    """roster key -> the stored students the LMS's download gave that one user, where it gave them two or more
    (`smithjohn_12345` and `smithjohnny_12345`: Canvas's login follows the student's name, which may change between
    downloads): `by_lms_user` cannot tell whose total is the user's, and their cell would be left empty. A roster of
    the course's own keyed by one of those ids (`smithjohn_12345`, lms_id 12345) is no answer either: it names the id
    stored first, not the hand-in that counts, so it is refused too, under the user's number."""
    users: dict[str, list[str]] = {}
    for student in students:
        users.setdefault(user_of(student) or "", []).append(student)
    shared = {}
    for key in roster:
        user = (user_of(key) or "") if key in students else key  # a stored id: the user the LMS gave it
        if user and len(users.get(user, [])) > 1:
            shared[user] = sorted(users[user], key=roster_order)
    return shared


def shared_user_problems(shared: dict[str, list[str]], lms: str, assignment: str) -> list[str]:
    """What an export says of each user stored under several ids (`shared_users`): it refuses, as for a total above
    the column's maximum, since the file would leave that student's cell empty or give it one id's total alone."""
    return [f"{' and '.join(students)} are {'both' if len(students) == 2 else 'all'} {lms.capitalize()} user {key} "
            "(the download named them so: a changed name?), so whose total is theirs cannot be told (keyed by the "
            "user, their cell would be empty; keyed by one of the ids, it would get that id's total alone). "
            f"`autograder retract {assignment} STUDENT` one of them (`autograder history "
            f"{assignment} STUDENT` shows each one's hand-ins), then export again" for key, students in shared.items()]


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


def write_moodle_worksheet(made: list[Row], column: Column, stream: TextIO) -> None:
    """Moodle's grading worksheet, filled in: each student's Identifier as the worksheet gave it, the grade, and
    the feedback. "Last modified (grade)" is now, so Moodle keeps a grade a TA changed in Moodle after this export."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S +0000")  # a form PHP's strtotime reads
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(MOODLE_WORKSHEET_HEADER)
    for row in made:
        who = row.identity
        writer.writerow([who.get("participant", ""), cell(full_name(who)), who.get("email", ""), row.total, now,
                         cell(row.feedback)])


# What an LMS does with a total above its column's maximum, and where that maximum is set.
_ABOVE = {"moodle worksheet": ("Moodle's upload skips every grade above its maximum, so those grades would be lost "
                               "without a word", "Set the assignment's maximum grade in Moodle to {points} (its "
                               "settings, Grade), download the grading worksheet again, and export with that one"),
          "canvas": ("Canvas keeps an existing assignment's points and takes a total above them as more than full "
                     "marks", "Set the assignment's points in Canvas to {points} (its settings, Points), export the "
                     "gradebook again, and export with that one"),
          "moodle": ("Moodle's import takes a grade above the grade item's maximum as more than full marks, "
                     "or not at all", "Set the grade item's maximum grade in Moodle to {points}, and import again"),
          "blackboard": ("Blackboard takes a total above the column's points as more than full marks",
                         "Set the column's Points Possible in Blackboard to {points}, download the Grade Center again, "
                         "and export with that one")}


def stated_maximum(made: list[Row], column: Column, points: dict[str, str]) -> tuple[float | None, str]:
    """(the maximum the LMS's own roster gives the column, None where it gives none; where it says so).

    Moodle's worksheet: its Maximum Grade; Canvas's gradebook export or Blackboard's download: the column's points
    (points: by column id, outputs.roster.column_points)."""
    for row in made:
        try:
            return float(row.identity.get("max_grade", "")), (f"Moodle's worksheet gives the assignment a maximum "
                                                              f"grade of {row.identity['max_grade']}")
        except ValueError:
            continue
    if column.column_id in points:
        return float(points[column.column_id]), (f"the roster gives the column {column.title!r} "
                                                 f"{points[column.column_id]} points possible")
    return None, ""


def above_maximum(made: list[Row], column: Column, stated: float | None, said: str, lms: str,
                  assignment: str) -> tuple[list[str], str]:
    """(why the file would lose or distort grades in the LMS, one sentence each, [] when it would not; a warning
    of the totals graded out of another maximum than the column's, "" when there are none).

    The column's maximum is `stated` (the LMS's own roster, stated_maximum), else the assignment's points under the
    current suite, which the file gives it. Each total is compared with it, and each result's own maximum: a result
    graded under an earlier suite, or kept from one by `regrade --no-decrease`, is out of the points it had then."""
    limit = column.points if stated is None else stated
    skipped, where = _ABOVE[lms]
    problems = []
    if stated is not None and stated < column.points:
        problems.append(f"{said}, but {assignment} is out of {column.points:g}, and {skipped}. "
                        f"{where.format(points=f'{column.points:g}')}")
    graded = [row for row in made if row.out_of is not None and row.total]
    # Where the column is worth less than the suite, that is said above: here, only those out of more than both.
    above = [row for row in graded if float(row.total) > limit + 1e-9 and (not problems
                                                                             or row.out_of > column.points + 1e-9)]
    if above:
        highest = max(float(row.total) for row in above)
        problems.append(
            f"{_count(above, 'total')} to be written {'is' if len(above) == 1 else 'are'} above the column's "
            f"maximum of {limit:g} ({said or f'{assignment} is out of {column.points:g} in course.yaml'}): "
            f"{_listed(above)}; graded out of more points under an earlier suite, and {skipped}. Run `autograder "
            f"regrade {assignment}` (without --no-decrease, which keeps these results) to grade them under the "
            "current suite, and export again" + (f"; or {where[0].lower() + where[1:]}".format(
                points=f"{highest:g}") if stated is not None else ""))
    other = [row for row in graded if row not in above and abs(row.out_of - limit) > 1e-9]
    current = [row for row in other if abs(row.out_of - column.points) <= 1e-9]
    kept = [row for row in other if row.kept and row not in current]
    earlier = len(other) - len(current) - len(kept)
    warning = "; ".join([
        f"{_count(other, 'total')} written {'is' if len(other) == 1 else 'are'} out of another maximum than the "
        f"column's {limit:g} ({_listed(other)}), and the LMS takes them as points of {limit:g}",
        *([f"{len(current)} of them as the current suite grades, out of {column.points:g}: set the column's maximum "
           f"in the LMS to {column.points:g}"] if current else []),
        *([f"{len(kept)} of them kept from an earlier suite by `regrade --no-decrease`, on purpose"] if kept else []),
        *([f"{earlier} of them graded under an earlier suite: `autograder regrade {assignment}` grades them under "
           "the current suite"] if earlier else [])]) if other else ""
    return problems, warning


def _count(made: list[Row], what: str) -> str:
    return f"{len(made)} {what}{'' if len(made) == 1 else 's'}"


def _listed(made: list[Row], shown: int = 5) -> str:
    """"s1: 105 of 105, …" for the first few rows."""
    return ", ".join(f"{row.student}: {row.total} of {_number(row.out_of)}" for row in made[:shown]) + (
        ", …" if len(made) > shown else "")


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
                  "https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807",
                  canvas_user),
    "moodle": Lms(write_moodle, ".csv", ("username", "email", "sis_user_id"), "https://docs.moodle.org/en/Grade_import",
                  leaves_out_blank=True),
    "blackboard": Lms(write_blackboard, ".xls", ("username",),
                      "http://library.blackboard.com/ref/3ea64795-6ecc-4abd-b595-0a9a8dfdec94/Content/_instructor_grade_center/"
                      "grade_center_upload_download.htm"),
}
# `export moodle` with Moodle's own worksheet as the roster writes the worksheet back (outputs.roster reads it).
MOODLE_WORKSHEET = Lms(write_moodle_worksheet, ".csv", ("participant",),
                       "https://docs.moodle.org/en/Assignment_settings#Feedback_types", moodle_participant,
                       leaves_out_blank=True)


def format_for(name: str, roster: dict[str, dict[str, str]]) -> Lms:
    """The format `export <name>` writes for this roster: Moodle's own worksheet back where the roster is that
    worksheet (each entry has its Identifier), else the LMS's import format."""
    if name == "moodle" and roster and all(who.get("participant") for who in roster.values()):
        return MOODLE_WORKSHEET
    return FORMATS[name]


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
