"""Issue 25: gradebook files for Canvas, Moodle and Blackboard, each checked against its documented import format.

Fast: a real SQLite store holding made-up results, the real CLI writing each
file; nothing is graded. The documented formats (README "LMS gradebooks"):

- Canvas, "How do I import grades in the Gradebook?": CSV; header `Student,
  ID, SIS User ID, SIS Login ID, Section`, then assignment columns `Name (id)`;
  a second row whose first cell is "Points Possible". Canvas's importer
  (gradebook_importer.rb) finds the header by `Student` and `ID` in its first
  two cells and `Section` as the last identity column.
- Moodle, "Grade import": CSV with a header row; one column mapped to
  username, email or ID number; a grade column; feedback in its own column.
- Blackboard, "Uploading or Downloading Grade Center Items": tab-delimited
  (.xls), no quote characters, a header row, students identified by Username,
  an existing column by `|COLUMN_ID` at the end of its header.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from autograder.grading.course import load_course
from autograder.grading.results import CheckResult, SubmissionResult
from autograder.grading.store import Store
from autograder.outputs.lms import CANVAS_HEADER, Column, Row, full_name, write_canvas

from conftest import ROOT, run_cli

ASSIGNMENT = "w07_attention"
POINTS = f"{load_course(ROOT / 'course.yaml').assignment(ASSIGNMENT).max_score:g}"  # the column's, from course.yaml
ROSTER = """student,name,email,username,lms_id,sis_user_id,sis_login_id,section
s1,"Lovelace, Ada",ada@uni.edu,alovelace,101,S-1,ada,Lab A
s2,Grace Hopper,grace@uni.edu,ghopper,102,S-2,grace,Lab B
s3,Alan Turing,alan@uni.edu,aturing,103,S-3,alan,Lab A
"""


def _result(student: str, got: float) -> SubmissionResult:
    tests = (CheckResult("score.a", "score", "public", "passed" if got else "failed", got, got),
             CheckResult("score.b", "score", "hidden", "failed", 0.0, 10.0 - got, message="wrong"))
    return SubmissionResult(student=student, assignment=ASSIGNMENT, file=f"{student}.py", sha256=student * 8,
                            suite_version="v", seed=1, sandbox="bwrap", tests=tests, graded_at="2026-11-30T00:00:00")


@pytest.fixture
def stored(tmp_path) -> Path:
    """A store with s1 (7.5 of 10), s2 (10 of 10) and s4, who is not on the roster; s3 handed nothing in."""
    with Store(tmp_path / "grades.db") as store:
        for student, got in (("s1", 7.5), ("s2", 10.0), ("s4", 3.0)):
            store.save(_result(student, got))
    (tmp_path / "roster.csv").write_text(ROSTER)
    return tmp_path


def _export(folder: Path, lms: str, *extra) -> tuple[Path, str]:
    out = folder / f"grades-{lms}"
    done = run_cli("export", lms, "--roster", folder / "roster.csv", "--out", out, "--db", folder / "grades.db",
                   "--course", ROOT / "course.yaml", *extra)
    assert done.returncode == 0, done.stderr
    return out, done.stderr


def test_canvas_file_has_the_five_identity_columns_the_assignment_column_and_points_possible(stored):
    out, said = _export(stored, "canvas", "--column", "Week 7", "--column-id", "4242")
    rows = list(csv.reader(out.read_text(encoding="utf-8").splitlines()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Week 7 (4242)"]
    assert tuple(rows[0][:5]) == CANVAS_HEADER
    assert rows[1][0] == "Points Possible" and rows[1][5] == POINTS
    assert rows[2:] == [["Lovelace, Ada", "101", "S-1", "ada", "Lab A", "7.5"],
                        ["Grace Hopper", "102", "S-2", "grace", "Lab B", "10"],
                        ["Alan Turing", "103", "S-3", "alan", "Lab A", ""]]  # no hand-in: blank, the default
    assert all(len(row) == 6 for row in rows)
    assert "1 student with a result is not on the roster" in said and "s4" in said


def test_moodle_file_has_identifier_columns_a_grade_column_and_feedback_in_its_own(stored):
    out, said = _export(stored, "moodle")
    # The roster student without a grade is named, and left out: Moodle would import the row's feedback over what
    # a TA wrote there, though it skips the blank grade.
    assert "(2 with a grade; blank for 1: s3, left out of the file: Moodle would import" in said, said
    rows = list(csv.DictReader(out.read_text(encoding="utf-8").splitlines()))
    header = list(rows[0])
    title = "Attention: selective retrieval"
    assert header == ["Username", "Email address", "ID number", "Full name", title, f"{title} (Feedback)"]
    assert [(r["Username"], r["Email address"], r["ID number"], r[title]) for r in rows] == [
        ("alovelace", "ada@uni.edu", "S-1", "7.5"), ("ghopper", "grace@uni.edu", "S-2", "10")]
    assert rows[0][f"{title} (Feedback)"].startswith("7.5 of 10 points; 1 of 2 checks passed.")
    assert "wrote 2 students of the roster" in said, said


def _course_missing_zero(folder):
    """The course, in `folder`, with `submissions: {missing: zero}`: a roster student without a grade gets 0."""
    yaml_text = (ROOT / "course.yaml").read_text().replace(
        "  w07_attention:\n", "  w07_attention:\n    submissions: {missing: zero}\n", 1)
    for part in ("assignments", "solutions"):
        (folder / part).symlink_to(ROOT / part)
    (folder / "course.yaml").write_text(yaml_text)


def test_moodle_file_keeps_a_zero_for_a_student_without_a_hand_in_where_the_course_says_so(stored, tmp_path):
    _course_missing_zero(tmp_path)
    out = stored / "zero.csv"
    done = run_cli("export", "moodle", "--roster", stored / "roster.csv", "--out", out, "--db",
                   stored / "grades.db", "--course", tmp_path / "course.yaml")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.read_text(encoding="utf-8").splitlines()))
    title = "Attention: selective retrieval"
    assert [(r["Username"], r[title], r[f"{title} (Feedback)"]) for r in rows][2] == (
        "aturing", "0", "No hand-in was graded.")


def test_blackboard_file_is_tab_delimited_with_username_and_the_column_id(stored, tmp_path):
    _course_missing_zero(tmp_path)
    out = stored / "grades.xls"
    done = run_cli("export", "blackboard", "--roster", stored / "roster.csv", "--out", out, "--db",
                   stored / "grades.db", "--course", tmp_path / "course.yaml", "--column", "W7", "--column-id", "_77_1")
    assert done.returncode == 0, done.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert all('"' not in line for line in lines)  # tab-delimited files need no quote characters
    rows = [line.split("\t") for line in lines]
    assert rows[0] == ["Last Name", "First Name", "Username", "Student ID", f"W7 [Total Pts: {POINTS} Score] |_77_1"]
    assert rows[1:] == [["Lovelace", "Ada", "alovelace", "S-1", "7.5"], ["Hopper", "Grace", "ghopper", "S-2", "10"],
                        ["Turing", "Alan", "aturing", "S-3", "0"]]  # no hand-in: 0, as the course chose


def test_the_column_id_is_read_from_the_lms_download_used_as_the_roster_and_checked_against_it(stored):
    """Blackboard's Grade Center download names each column's id in its header: without --column-id the file had
    made a second column of the same title, and a mistyped id (or one copied from the README) was written as it
    came. Moodle, whose import maps columns by hand, had taken --column-id and ignored it."""
    title = load_course(ROOT / "course.yaml").assignment(ASSIGNMENT).title
    (stored / "gc.csv").write_text("Last Name,First Name,Username,Student ID,Last Access,"
                                   f"{title} [Total Pts: 100 Score] |1234567,Quiz 1 [Total Pts: 5 Score] |1234570\n"
                                   "Lovelace,Ada,s1,S-1,,,\nHopper,Grace,s2,S-2,,,\n")

    def export(lms, *extra):
        return run_cli("export", lms, "--roster", stored / "gc.csv", "--out", stored / f"out-{lms}", "--db",
                       stored / "grades.db", "--course", ROOT / "course.yaml", *extra)
    done = export("blackboard")
    assert done.returncode == 0 and f"the roster's own column '{title}' has the id 1234567" in done.stderr, done.stderr
    header = (stored / "out-blackboard").read_text(encoding="utf-8").splitlines()[0].split("\t")
    assert header[-1] == f"{title} [Total Pts: {POINTS} Score] |1234567"
    done = export("blackboard", "--column-id", "_77_1")
    assert done.returncode == 2 and "--column-id _77_1 is none of the columns the roster's header names (" \
        f"{title} (1234567), Quiz 1 (1234570))" in done.stderr, done.stderr
    done = export("blackboard", "--column-id", "1234570")  # Quiz 1's: its grades would have been overwritten
    assert done.returncode == 2 and "--column-id 1234570 is the roster's column 'Quiz 1', not" in done.stderr
    done = export("blackboard", "--column", "Quiz 1", "--column-id", "1234570")  # its title and id: but 5 points
    assert done.returncode == 2 and f"the roster gives the column 'Quiz 1' 5 points possible, but {ASSIGNMENT} is " \
        f"out of {POINTS}" in done.stderr and "Set the column's Points Possible in Blackboard to" in done.stderr
    assert export("blackboard", "--column", "Quiz 1", "--column-id", "1234570", "--force").returncode == 0
    (stored / "gc.csv").write_text(f"Last Name,First Name,Username,{title} [Total Pts: 100 Score] |11,"
                                   f"{title} [Total Pts: 100 Score] |12\nLovelace,Ada,s1,,\n")
    done = export("blackboard")  # two columns of one title: which one was a guess (the last)
    assert done.returncode == 2 and f"the roster names 2 columns titled '{title}' (ids 11, 12)" in done.stderr
    assert export("blackboard", "--column-id", "11").returncode == 0
    (stored / "gc.csv").write_text("Last Name,First Name,Username,HW7 [Total Pts: 100 Score] |21\nLovelace,Ada,s1,\n")
    done = export("blackboard")  # the assignment's column under another title: a new one, said, and how to fill it
    assert done.returncode == 0 and f"the roster names no column titled '{title}' (HW7 (21)), so the file makes a " \
        "new column of that title. To fill one of those columns instead, pass --column" in done.stderr, done.stderr
    assert "new column" not in export("blackboard", "--column", "HW7").stderr
    done = run_cli("export", "moodle", "--roster", stored / "roster.csv", "--db", stored / "grades.db", "--course",
                   ROOT / "course.yaml", "--out", stored / "m.csv", "--column-id", "77")
    assert done.returncode == 2 and "--column-id is not read by Moodle" in done.stderr, done.stderr


@pytest.mark.slow  # a subprocess or a sandbox of its own for one test: make test runs it
def test_a_roster_without_the_lms_identity_is_refused_naming_the_students(stored):
    (stored / "roster.csv").write_text("student,name\ns1,Ada\ns2,Grace\n")
    done = run_cli("export", "blackboard", "--roster", stored / "roster.csv", "--db", stored / "grades.db",
                   "--course", ROOT / "course.yaml", "--out", stored / "x.xls")
    assert done.returncode == 2 and "2 students have none of username" in done.stderr and "s1, s2" in done.stderr
    assert not (stored / "x.xls").exists()


@pytest.mark.parametrize("lms", ["canvas", "moodle", "blackboard"])
def test_a_roster_that_matches_no_graded_student_writes_nothing(stored, lms):
    """Another course's roster, or ids of another form: every row blank and "No hand-in was graded.", which an
    upload would have written over the LMS's grades, exit 0 with a warning."""
    (stored / "roster.csv").write_text(ROSTER.replace("s1,", "x1,").replace("s2,", "x2,"))
    out = stored / f"x-{lms}"
    done = run_cli("export", lms, "--roster", stored / "roster.csv", "--db", stored / "grades.db",
                   "--course", ROOT / "course.yaml", "--out", out)
    assert done.returncode == 2 and "none of its 3 students is one with a result, and 3 with a result are not on it" \
        in done.stderr and "nothing was written" in done.stderr, done.stderr
    assert not out.exists()


def test_names_and_feedback_cannot_start_a_formula_but_identities_stay_exact():
    assert full_name({"first_name": "Ada", "last_name": "Lovelace"}, last_first=True) == "Lovelace, Ada"
    stream = io.StringIO()
    write_canvas([Row("s1", {"name": "=HYPERLINK(1)", "lms_id": "-5"}, "1", "")], Column("A", "", 1), stream)
    row = list(csv.reader(stream.getvalue().splitlines()))[2]
    assert row[0] == "'=HYPERLINK(1)" and row[1] == "-5"


def test_a_roster_id_matches_the_stored_id_in_another_unicode_form(tmp_path):
    """A Mac's zip names a file José.py with the accent decomposed; the roster types it composed."""
    decomposed, composed = "Jose\u0301", "Jos\u00e9"
    with Store(tmp_path / "grades.db") as store:
        store.save(_result(decomposed, 7.5))
    (tmp_path / "roster.csv").write_text(f"student,name,email,username\n{composed},José Díaz,jd@uni.edu,jdiaz\n")
    out, stderr = _export(tmp_path, "moodle")
    rows = list(csv.DictReader(out.read_text(encoding="utf-8").splitlines()))
    assert [(row["Username"], row["Attention: selective retrieval"]) for row in rows] == [("jdiaz", "7.5")]
    named = [line for line in stderr.splitlines() if "earlier suite" not in line]  # the result is a made-up one
    assert "not on the roster" not in stderr and not any(decomposed in line for line in named), stderr



def test_a_roster_id_that_lost_its_leading_zeros_is_named_with_what_to_do(tmp_path):
    """Excel read the roster's ids as numbers: 00123 became 123, which the export listed as blank and 00123 as not
    on the roster, with no word of why; and a class where every id lost its zeros wrote nothing, unexplained."""
    with Store(tmp_path / "grades.db") as store:
        for student in ("00123", "s2"):
            store.save(_result(student, 7.5))
    (tmp_path / "roster.csv").write_text("student,name,email,username\n123,Ann Lee,ann@uni.edu,alee\n"
                                         "s2,Bo Li,bo@uni.edu,bli\n")
    _, stderr = _export(tmp_path, "moodle")
    assert "1 student with a result is not on the roster" in stderr and "00123" in stderr, stderr
    assert "The roster's ids lost their leading zeros (123 is 00123): a spreadsheet such as Excel read its id column " \
           "as numbers. Format that column as Text (or type each id after an apostrophe, '00123), put the zeros " \
           "back, save the roster and export again" in stderr, stderr
    (tmp_path / "roster.csv").write_text("student,name,email,username\n123,Ann Lee,ann@uni.edu,alee\n")
    done = run_cli("export", "moodle", "--roster", tmp_path / "roster.csv", "--out", tmp_path / "out.csv", "--db",
                   tmp_path / "grades.db", "--course", ROOT / "course.yaml")
    assert done.returncode != 0 and "none of its 1 students is one with a result" in done.stderr, done.stderr
    assert "lost their leading zeros (123 is 00123)" in done.stderr, done.stderr

def test_a_json_roster_with_numeric_ids_is_read_as_their_digits(tmp_path):
    """json.dump and pandas write a spreadsheet's id column as numbers: `[{"student": 123}]` was refused with "entry 1
    has no student id (a `student` or `id` field)", which it has; and a numeric LMS id was left out of the file."""
    with Store(tmp_path / "grades.db") as store:
        for student in ("00123", "1000"):
            store.save(_result(student, 7.5))
    roster = tmp_path / "roster.json"
    roster.write_text('[{"student": 123, "name": "Ann Lee", "lms_id": 11}, {"student": 1000, "name": "Di Wu", '
                      '"lms_id": 14.0}]')
    out = tmp_path / "grades.csv"
    done = run_cli("export", "canvas", "--roster", roster, "--out", out, "--db", tmp_path / "grades.db",
                   "--course", ROOT / "course.yaml")
    assert done.returncode == 0, done.stderr
    rows = list(csv.reader(out.read_text(encoding="utf-8").splitlines()))
    assert [row[:2] for row in rows[2:]] == [["Ann Lee", "11"], ["Di Wu", "14"]] and rows[3][-1] == "7.5", rows
    assert "lost their leading zeros (123 is 00123)" in done.stderr and 'write each id in quotes: "00123"' \
        in done.stderr, done.stderr
    roster.write_text('[{"student": 12.5, "name": "Ann Lee"}]')  # no id is a fraction: said as what it is
    done = run_cli("export", "canvas", "--roster", roster, "--out", out, "--db", tmp_path / "grades.db",
                   "--course", ROOT / "course.yaml")
    assert done.returncode != 0 and f"{roster}: entry 1 gives its `student` as 12.5, not as the text of a student " \
        "id; write it as `autograder grade` stores it, in quotes, and run again" in done.stderr, done.stderr


def test_a_roster_that_names_a_student_twice_is_refused_naming_both_entries(tmp_path):
    # The later entry's name and email had gone to the LMS at the earlier entry's place, without a word.
    from autograder.outputs import ExportError
    from autograder.outputs.roster import read_roster

    roster = tmp_path / "roster.csv"
    roster.write_text("student,name,email\ns0101,Ann One,a@uni.edu\ns0102,Ben Two,b@uni.edu\nS0101,Ann Dup,x@uni.edu\n")
    with pytest.raises(ExportError, match="entries 1 and 3 both give the student id 'S0101'.*keep one entry"):
        read_roster(roster, ("name", "email"))


def test_a_roster_that_gives_two_students_one_email_is_refused_naming_both_entries(tmp_path):
    # Moodle's import finds the row by email: Ben's grade had gone to Ann's row, and Ann's row had two grades.
    from autograder.outputs import ExportError
    from autograder.outputs.roster import read_roster

    roster = tmp_path / "roster.csv"
    roster.write_text("student,name,email\ns0101,Ann One,a@uni.edu\ns0102,Ann One,b@uni.edu\ns0103,Ben,A@Uni.edu\n")
    with pytest.raises(ExportError, match="entries 1 and 3 both give the email 'A@Uni.edu'.*each student has their"):
        read_roster(roster, ("name", "email"))
    assert list(read_roster(roster, ("name",))) == ["s0101", "s0102", "s0103"]  # a shared name is two students


def test_history_of_an_id_a_download_named_otherwise_says_which_id_was_meant(tmp_path):
    # A Canvas download names the student `smithjohn_4101`: `history ... smithjohn` only said there was no result.
    with Store(tmp_path / "grades.db") as store:
        for student in ("smithjohn_4101", "doejane_4102"):
            store.save(_result(student, 5.0))
    asked_meant = (("smithjohn", "smithjohn_4101"), ("4102", "doejane_4102"), ("smithjohm_4101", "smithjohn_4101"))
    for asked, meant in asked_meant:
        done = run_cli("history", ASSIGNMENT, asked, "--db", tmp_path / "grades.db", "--course", ROOT / "course.yaml")
        assert done.returncode == 2 and f"did you mean {meant}?" in done.stderr, done.stderr
    done = run_cli("regrade", ASSIGNMENT, "--preview", "--students", "smithjohn", "--db", tmp_path / "grades.db",
                   "--course", ROOT / "course.yaml")
    assert done.returncode == 2 and "did you mean smithjohn_4101?" in done.stderr, done.stderr


def test_each_member_of_a_gradescope_group_gets_the_groups_grade(tmp_path):
    # A group's hand-in is stored under its submitters' emails joined: no roster row matched it, so each member was
    # left blank (or given 0), and the warning named "ann@uni.edu,bo@uni.edu" as if three students.
    with Store(tmp_path / "grades.db") as store:
        store.save(_result("ann@uni.edu,bo@uni.edu", 7.5))
        store.save(_result("cy@uni.edu", 10.0))
    (tmp_path / "roster.csv").write_text("student,name,email,username\nann@uni.edu,Ann,ann@uni.edu,ann\n"
                                         "bo@uni.edu,Bo,bo@uni.edu,bo\ncy@uni.edu,Cy,cy@uni.edu,cy\n")
    out, said = _export(tmp_path, "moodle")
    rows = {row["Username"]: row["Attention: selective retrieval"]
            for row in csv.DictReader(out.read_text(encoding="utf-8").splitlines())}
    assert rows == {"ann": "7.5", "bo": "7.5", "cy": "10"}, rows
    assert "not on the roster" not in said, said


def test_the_lms_feedback_of_a_file_that_was_not_graded_says_why():
    """A PDF-only hand-in, or a file that did not load: Moodle's feedback column said only "0 of 100 points; 0 of 39
    checks passed.", and the student never learned why."""
    from autograder.outputs.lms import rows

    result = SubmissionResult(student="s1", assignment="a", file="s1.pdf", sha256="", suite_version="v", seed=1,
                              sandbox="bwrap", tests=(), problem="s1 handed in no .py or .ipynb, only s1.pdf",
                              max_score=10.0, score=0.0)
    [row], _ = rows({"s1": {}}, [result], None, "blank")
    assert row.feedback == "0 of 10 points; 0 of 0 checks passed. Not graded: s1 handed in no .py or .ipynb, only " \
                           "s1.pdf.", row


def _graded_out_of(student: str, got: float, maximum: float) -> SubmissionResult:
    """A result graded under an earlier suite out of `maximum` points."""
    tests = (CheckResult("score.a", "score", "public", "passed", got, got),
             CheckResult("score.b", "score", "hidden", "failed", 0.0, maximum - got, message="wrong"))
    return SubmissionResult(student=student, assignment=ASSIGNMENT, file=f"{student}.py", sha256=student * 4,
                            suite_version="earlier", seed=1, sandbox="bwrap", tests=tests,
                            graded_at="2026-11-30T00:00:00")


WORKSHEET = """Identifier,"Full name","Email address",Status,Grade,"Maximum Grade","Grade can be changed",\
"Last modified (submission)","Last modified (grade)","Feedback comments"
"Participant 123456","Ann Lee",ann@uni.example,"Submitted for grading",,{maximum},Yes,-,-,
"Participant 123457","Bo Chan",bo@uni.example,"Submitted for grading",,{maximum},Yes,-,-,
"Participant 123458","Cy Dee",cy@uni.example,"Submitted for grading",,{maximum},Yes,-,-,
"""


def test_a_total_above_the_lms_maximum_is_refused_naming_the_students_and_what_to_do(tmp_path):
    """Graded while a check was worth more (out of 105), exported after course.yaml went back to 100: the guard had
    compared the LMS's maximum with the current suite's points alone, so Moodle's worksheet got a 105 it skips on
    upload (the grade lost without a word), and Canvas a 105 in a 100-point column, exit 0 both."""
    with Store(tmp_path / "grades.db") as store:
        for student, got, maximum in (("123456", 105.0, 105.0), ("123457", 95.0, 105.0), ("123458", 80.0, 100.0)):
            store.save(_graded_out_of(student, got, maximum))
    (tmp_path / "worksheet.csv").write_text(WORKSHEET.format(maximum=POINTS + ".00"))
    out = tmp_path / "upload.csv"

    def export(lms, roster, *extra):
        return run_cli("export", lms, "--roster", tmp_path / roster, "--out", out, "--db", tmp_path / "grades.db",
                       "--course", ROOT / "course.yaml", *extra)
    done = export("moodle", "worksheet.csv")
    assert done.returncode == 2 and not out.exists(), done.stderr
    assert f"1 total to be written is above the column's maximum of {POINTS} (Moodle's worksheet gives the " \
           f"assignment a maximum grade of {POINTS}.00): 123456: 105 of 105" in done.stderr, done.stderr
    assert "Moodle's upload skips every grade above its maximum" in done.stderr
    assert f"Run `autograder regrade {ASSIGNMENT}` (without --no-decrease" in done.stderr
    assert "maximum grade in Moodle to 105" in done.stderr and "--force writes the file" in done.stderr
    done = export("moodle", "worksheet.csv", "--force")  # written as asked, and said again
    assert done.returncode == 0 and out.exists(), done.stderr
    assert "warning: written all the same (--force): 1 total to be written is above" in done.stderr
    # 95 of 105 is no grade Moodle skips, but it is not 95 of 100: said.
    assert f"1 total written is out of another maximum than the column's {POINTS} (123457: 95 of 105), and the LMS " \
           f"takes them as points of {POINTS}; 1 of them graded under an earlier suite: `autograder regrade" \
           in done.stderr, done.stderr

    # Canvas's gradebook export, its column worth 100 points: the same total, refused.
    (tmp_path / "canvas.csv").write_text(f"Student,ID,SIS User ID,SIS Login ID,Section,Week 7 (1234)\n"
                                         f"    Points Possible,,,,,{POINTS}.00\n"
                                         + "".join(f"Student {n},{n},,,,\n" for n in ("123456", "123457", "123458")))
    out.unlink()
    done = export("canvas", "canvas.csv", "--column", "Week 7")
    assert done.returncode == 2 and not out.exists(), done.stderr
    assert f"above the column's maximum of {POINTS} (the roster gives the column 'Week 7' {POINTS}.00 points " \
           "possible): 123456: 105 of 105" in done.stderr and "more than full marks" in done.stderr, done.stderr
    # A Canvas column worth less than the assignment is refused as Moodle's worksheet always was.
    (tmp_path / "canvas.csv").write_text((tmp_path / "canvas.csv").read_text().replace(f",{POINTS}.00", ",90.00"))
    done = export("canvas", "canvas.csv", "--column", "Week 7")
    assert done.returncode == 2 and f"the roster gives the column 'Week 7' 90.00 points possible, but {ASSIGNMENT} " \
        f"is out of {POINTS}" in done.stderr and "Set the assignment's points in Canvas to" in done.stderr
    # A roster of one's own states no maximum: the file's own Points Possible (the assignment's points) is it.
    (tmp_path / "roster.csv").write_text("student,lms_id\n123456,1\n123457,2\n123458,3\n")
    done = export("canvas", "roster.csv")
    assert done.returncode == 2 and f"above the column's maximum of {POINTS} ({ASSIGNMENT} is out of {POINTS} in " \
        "course.yaml): 123456: 105 of 105" in done.stderr, done.stderr


def test_one_canvas_user_stored_under_two_ids_is_refused_naming_both(tmp_path):
    """Canvas's login follows the student's sortable name, which changed between two downloads: user 12345 stored
    as smithjohn_12345 and smithjohnny_12345 got an empty cell, exit 0, and a warning that both were "not on the
    roster", though the roster has them, as ID 12345."""
    with Store(tmp_path / "grades.db") as store:
        for student, got in (("smithjohn_12345", 10.0), ("smithjohnny_12345", 1.0), ("doejane_12346", 7.5)):
            store.save(_result(student, got))
    (tmp_path / "roster.csv").write_text(f"Student,ID,SIS User ID,SIS Login ID,Section,Week 7 (4242)\n"
                                         f"    Points Possible,,,,,{POINTS}.00\n"
                                         '"Smith, John",12345,S001,jsmith,ML101,\n"Doe, Jane",12346,S003,jdoe,ML101,\n')
    out = tmp_path / "canvas.csv"

    def export(*extra):
        return run_cli("export", "canvas", "--roster", tmp_path / "roster.csv", "--column", "Week 7", "--out", out,
                       "--db", tmp_path / "grades.db", "--course", ROOT / "course.yaml", *extra)
    done = export()
    assert done.returncode == 2 and not out.exists(), done.stderr
    assert "smithjohn_12345 and smithjohnny_12345 are both Canvas user 12345" in done.stderr, done.stderr
    assert f"`autograder retract {ASSIGNMENT} STUDENT` one of them" in done.stderr and "--force" in done.stderr
    done = export("--force")
    assert done.returncode == 0 and out.exists(), done.stderr
    assert "written all the same (--force): smithjohn_12345 and smithjohnny_12345 are both" in done.stderr
    assert "not on the roster" not in done.stderr, done.stderr
    rows = {row["ID"]: row["Week 7 (4242)"] for row in csv.DictReader(out.read_text().splitlines()[:1] +
                                                                        out.read_text().splitlines()[2:])}
    assert rows == {"12345": "", "12346": "7.5"}, rows


def test_a_roster_of_our_own_keyed_by_one_of_a_users_two_ids_is_refused_too(tmp_path):
    """The course's own roster keyed by the old Canvas id (`student=smithjohn_12345, lms_id=12345`) was let through:
    a stored id is taken as it is, so the export wrote the old hand-in's total for user 12345, exit 0, while the
    same user's later hand-in, under smithjohnny_12345, went nowhere."""
    with Store(tmp_path / "grades.db") as store:
        for student, got in (("smithjohn_12345", 10.0), ("smithjohnny_12345", 1.0), ("doejane_12346", 7.5)):
            store.save(_result(student, got))
    (tmp_path / "roster.csv").write_text("student,name,lms_id\nsmithjohn_12345,John Smith,12345\n"
                                         "doejane_12346,Jane Doe,12346\n")
    out = tmp_path / "canvas.csv"
    done = run_cli("export", "canvas", "--roster", tmp_path / "roster.csv", "--column-id", "4242", "--out", out,
                   "--db", tmp_path / "grades.db", "--course", ROOT / "course.yaml")
    assert done.returncode == 2 and not out.exists(), done.stderr
    assert "smithjohn_12345 and smithjohnny_12345 are both Canvas user 12345" in done.stderr, done.stderr
    assert "--force writes the file" in done.stderr


def test_a_roster_excel_saved_as_plain_csv_is_read_as_windows_1252_and_said(stored):
    """Excel's plain "CSV" saves Windows-1252: a roster with one accented name was refused with Python's own
    "'utf-8' codec can't decode byte 0xe9", which told a TA nothing of what to do."""
    (stored / "roster.csv").write_bytes(ROSTER.replace("Grace Hopper", "Grâce Höpper").encode("cp1252"))
    out, said = _export(stored, "moodle")
    assert f"the roster {stored / 'roster.csv'} is not UTF-8 (line 3 holds the byte 0xe2), so it was read as " \
           "Windows-1252" in said and "CSV UTF-8 (Comma delimited)" in said, said
    rows = {row["Username"]: row["Full name"] for row in csv.DictReader(out.read_text(encoding="utf-8").splitlines())}
    assert rows["ghopper"] == "Grâce Höpper", rows
    # UTF-8, with Excel's byte-order mark or without, is read as it is, and nothing is said.
    (stored / "roster.csv").write_bytes(ROSTER.replace("Grace Hopper", "Grâce Höpper").encode("utf-8-sig"))
    out, said = _export(stored, "moodle")
    assert "not UTF-8" not in said and "Grâce Höpper" in out.read_text(encoding="utf-8"), said


def test_a_roster_saved_with_semicolons_is_read(tmp_path):
    # A spreadsheet saved as CSV where the decimal mark is a comma: "entry 1 has no student id" was all it said.
    from autograder.outputs.roster import read_roster

    roster = tmp_path / "roster.csv"
    roster.write_text("student;name;email\ns0101;Ann One;a@uni.edu\ns0102;Ben, Two;b@uni.edu\n")
    assert read_roster(roster, ("name", "email")) == {"s0101": {"name": "Ann One", "email": "a@uni.edu"},
                                                      "s0102": {"name": "Ben, Two", "email": "b@uni.edu"}}


def test_a_canvas_gradebook_saved_with_semicolons_keeps_its_column_id_and_points_check(stored):
    """Saved where the decimal mark is a comma: the column id and the Points Possible check were lost, since
    only tab or comma was tried for the header there, while its rows were read with semicolons."""
    title = load_course(ROOT / "course.yaml").assignment(ASSIGNMENT).title
    gradebook = (f"Student;ID;SIS User ID;SIS Login ID;Section;{title} (4242)\n    Points Possible;;;;;{{}}\n"
                 "Lovelace, Ada;s1;S-1;ada;Lab A;\nGrace Hopper;s2;S-2;grace;Lab B;\n")
    (stored / "roster.csv").write_text(gradebook.format("50,00"))
    done = run_cli("export", "canvas", "--roster", stored / "roster.csv", "--out", stored / "c.csv", "--db",
                   stored / "grades.db", "--course", ROOT / "course.yaml")
    assert done.returncode == 2 and f"the roster gives the column '{title}' 50.00 points possible" in done.stderr, \
        done.stderr
    (stored / "roster.csv").write_text(gradebook.format(f"{POINTS},00"))
    out, said = _export(stored, "canvas")
    assert f"the roster's own column '{title}' has the id 4242" in said, said
    assert next(csv.reader(io.StringIO(out.read_text())))[-1] == f"{title} (4242)"


@pytest.mark.parametrize("text", [
    'student;"Full name, as printed, on ID card";lms_id\ns1;Lovelace, Ada;101\n',  # commas inside a quoted title
    "sep=;\nstudent;Full name, as printed, on ID card;lms_id\ns1;Lovelace, Ada;101\n",  # Excel's separator line
    "\ufeffsep=;\r\nstudent;Full name, as printed, on ID card;lms_id\r\ns1;Lovelace, Ada;101\r\n",
])
def test_a_roster_with_commas_in_a_quoted_header_or_a_sep_line_is_read_with_its_own_separator(tmp_path, text):
    from autograder.outputs.roster import read_roster

    roster = tmp_path / "roster.csv"
    roster.write_bytes(text.encode("utf-8"))
    assert read_roster(roster, ("lms_id", "Full name, as printed, on ID card")) == {
        "s1": {"lms_id": "101", "Full name, as printed, on ID card": "Lovelace, Ada"}}


def test_a_roster_without_a_student_column_names_the_header_it_read(tmp_path):
    from autograder.outputs import ExportError
    from autograder.outputs.roster import read_roster

    roster = tmp_path / "roster.csv"
    roster.write_text("login;name;lms_id\ns1;Lovelace, Ada;101\n")
    with pytest.raises(ExportError, match=r"no column is `student` or `id` \(its header, read as separated by "
                                          r"semicolons, is: login, name, lms_id\); name the column of the student "
                                          r"ids `student`"):
        read_roster(roster, ("name",))


@pytest.mark.parametrize("text, header", [("", "nor a header: it is empty"),
                                          ("student;name;lms_id\n", "its header, read as separated by semicolons, "
                                                                    "is: student, name, lms_id")])
def test_an_empty_or_header_only_roster_is_said_to_have_no_student_rows(stored, text, header):
    """It said "none of its 0 students is one with a result", as if its students were the wrong ones."""
    (stored / "roster.csv").write_text(text)
    done = run_cli("export", "canvas", "--roster", stored / "roster.csv", "--out", stored / "c.csv", "--db",
                   stored / "grades.db", "--course", ROOT / "course.yaml")
    assert done.returncode == 2 and f"roster.csv has no student rows ({header}): add one row per student" \
        in done.stderr, done.stderr
    assert "none of its 0 students" not in done.stderr and not (stored / "c.csv").exists()
