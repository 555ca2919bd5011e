"""`autograder retract`: a hand-in or a student stored by mistake is withdrawn from every grade, kept, and reversible.

Through the real CLI on a real SQLite file: the tiny course (one function, `double`) graded with the real sandbox.
Before, nothing could remove a wrongly stored result: with `policy: best` a mistaken full-marks hand-in counted
for good, and an instructor's reference.py graded as student `reference` stayed in every export.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from autograder.grading.history import ADDED
from autograder.grading.store import Store

from conftest import FIXTURES, run_cli, tiny_class

COURSE = """\
course: {{name: Tiny, seed_salt: s}}
defaults:
  tolerance:
    float32: {{rtol: 1.0e-5, atol: 1.0e-6}}
    float64: {{rtol: 1.0e-9, atol: 1.0e-12}}
assignments:
  tiny:
    title: Doubling
    module: tiny
    preload: [numpy]
    checks: {{double.small: 1, double.matches_reference: 1}}
    submissions: {{policy: {policy}}}
"""
RIGHT, WRONG = "2 * x", "0 * x"  # 2 points and 0 points


def _course(root: Path, policy: str) -> Path:
    for part in ("assignments", "solutions"):
        shutil.copytree(FIXTURES / "tiny" / part / "tiny", root / part / "tiny")
    (root / "course.yaml").write_text(COURSE.format(policy=policy))
    return root / "course.yaml"


def _run(*args, course: Path):
    return run_cli(*args, "--course", course, "--db", course.parent / "grades.db")


def _cli(*args, course: Path):
    done = _run(*args, course=course)
    assert done.returncode == 0, done.stderr
    return done


def _totals(course: Path) -> dict[str, str]:
    return {row["student"]: row["total"] for row in csv.DictReader(_cli("export", "csv", course=course)
                                                                     .stdout.splitlines())}


def _history(course: Path, student: str) -> list[dict]:
    return [json.loads(line) for line in _cli("history", "tiny", student, "--json", course=course).stdout.splitlines()]


def _database(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as connection:
        return (connection.execute("SELECT * FROM submissions ORDER BY student").fetchall()
                + connection.execute("SELECT * FROM history ORDER BY id").fetchall())


def _two_hand_ins(tmp_path: Path, policy: str, first: str, second: str) -> Path:
    course = _course(tmp_path, policy)
    _cli("grade", "tiny", tiny_class(tmp_path / "round1", {"multi": first, "other": RIGHT}, 1.70e9), course=course)
    _cli("grade", "tiny", tiny_class(tmp_path / "round2", {"multi": second}, 1.71e9), course=course)
    return course


def test_under_best_a_mistaken_full_marks_hand_in_is_previewed_then_retracted_shown_and_put_back(tmp_path):
    course = _two_hand_ins(tmp_path, "best", WRONG, RIGHT)
    assert _totals(course)["multi"] == "2"
    stored = _database(tmp_path / "grades.db")
    preview = _cli("retract", "tiny", "multi", "--handin", "2", "--preview", course=course)
    assert "retract hand-in 2 of multi for tiny" in preview.stdout, preview.stdout
    assert "multi's counted total (policy: best): 2 (hand-in 2) -> 0 (hand-in 1)" in preview.stdout
    assert "preview: nothing was changed" in preview.stderr
    assert _database(tmp_path / "grades.db") == stored and _totals(course)["multi"] == "2"

    done = _cli("retract", "tiny", "multi", "--handin", "2", "--reason", "handed in the answer key", course=course)
    assert "--handin 2 --undo` puts it back" in done.stderr, done.stderr
    assert _totals(course) == {"multi": "0", "other": "2"}
    rows = _history(course, "multi")
    assert [(r["hand_in"], r["counts"], bool(r["retracted"])) for r in rows] == [(1, True, False), (2, False, True)]
    assert rows[1]["retracted"].startswith("retracted ") and rows[1]["retracted"].endswith(": handed in the answer key")
    shown = _cli("history", "tiny", "multi", course=course).stdout
    assert "handed in the answer key (`autograder retract tiny multi --handin 2 --undo` puts it back)" in shown, shown
    assert "Hand-in 1 counts (policy: best); 1 hand-in retracted (2)" in shown
    with sqlite3.connect(tmp_path / "grades.db") as connection:  # kept, marked, not deleted
        assert connection.execute("SELECT COUNT(*) FROM history WHERE student='multi'").fetchone() == (2,)

    again = _run("retract", "tiny", "multi", "--handin", "2", course=course)
    assert again.returncode == 2 and "is retracted already" in again.stderr and "--undo" in again.stderr
    undone = _cli("retract", "tiny", "multi", "--handin", "2", "--undo", course=course)
    assert "put back 1 hand-in of multi: they count again as before the retraction." in undone.stderr, undone.stderr
    assert _totals(course)["multi"] == "2" and not any(r["retracted"] for r in _history(course, "multi"))


def test_under_last_retracting_the_last_hand_in_makes_the_one_before_count(tmp_path):
    course = _two_hand_ins(tmp_path, "last", RIGHT, WRONG)
    assert _totals(course)["multi"] == "0"
    done = _cli("retract", "tiny", "multi", "--handin", "2", course=course)
    assert "multi's counted total (policy: last): 0 (hand-in 2) -> 2 (hand-in 1)" in done.stdout, done.stdout
    assert _totals(course) == {"multi": "2", "other": "2"}
    with Store(tmp_path / "grades.db") as store:  # the stored result `grade` skips by is the one left standing
        assert store.result("tiny", "multi").score == 2


def test_a_stray_file_graded_as_a_student_leaves_every_export_and_is_not_graded_back_in(tmp_path):
    course = _course(tmp_path, "last")
    folder = tiny_class(tmp_path / "class", {"a_good": RIGHT, "reference": RIGHT}, 1.70e9)
    _cli("grade", "tiny", folder, course=course)
    done = _cli("retract", "tiny", "reference", course=course)
    assert "reference's counted total (policy: last): 2 (hand-in 1) -> no result" in done.stdout, done.stdout
    assert "they leave every report and export" in done.stdout
    assert _totals(course) == {"a_good": "2"}
    with Store(tmp_path / "grades.db") as store:
        assert store.students("tiny") == {"a_good"}
    for extra in ((), ("--force",)):  # the class folder still holds reference.py
        graded = _cli("grade", "tiny", folder, *extra, course=course)
        assert "not graded: reference.py of reference" in graded.stderr, graded.stderr
        assert "(hand-in 1 of theirs), retracted whole on " in graded.stderr and \
            "`autograder retract tiny reference --undo` puts them back" in graded.stderr
        assert _totals(course) == {"a_good": "2"}
    assert len(_history(course, "reference")) == 1  # no new hand-in
    regraded = _cli("regrade", "tiny", "--preview", course=course)  # nor does a regrade grade it
    assert "regrading 1 hand-in of 1 student of tiny" in regraded.stderr, regraded.stderr
    _cli("retract", "tiny", "reference", "--undo", course=course)
    assert _totals(course) == {"a_good": "2", "reference": "2"}


def test_unknown_students_and_hand_ins_are_refused_saying_what_exists(tmp_path):
    course = _two_hand_ins(tmp_path, "last", RIGHT, WRONG)
    stored = _database(tmp_path / "grades.db")
    done = _run("retract", "tiny", "mult", course=course)
    assert done.returncode == 2 and "no hand-in of student 'mult'" in done.stderr, done.stderr
    assert "did you mean multi?" in done.stderr
    done = _run("retract", "tiny", "multi", "--handin", "3", course=course)
    assert done.returncode == 2 and "numbered 1 to 2" in done.stderr, done.stderr
    assert "`autograder history tiny multi` lists them" in done.stderr and "no hand-in 3" in done.stderr
    done = _run("retract", "tiny", "multi", "--undo", course=course)
    assert done.returncode == 2 and "no retracted hand-in of tiny to put back" in done.stderr, done.stderr
    assert _database(tmp_path / "grades.db") == stored


def test_a_database_from_before_retractions_gets_the_column_and_keeps_its_rows(tmp_path):
    db = tmp_path / "grades.db"
    with Store(db):
        pass
    with sqlite3.connect(db) as connection:
        connection.execute("ALTER TABLE history DROP COLUMN retracted")
    with Store(db) as store:
        assert store.history("tiny") == []
    with sqlite3.connect(db) as connection:
        assert set(ADDED) <= {row[1] for row in connection.execute("PRAGMA table_info(history)")}


def _gradebook(tmp_path: Path) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as book:
        return {s.student.id: s.score for s in book.find_assignment("tiny").submissions}


def test_exporting_to_nbgrader_again_takes_a_fully_retracted_student_out_of_the_gradebook(tmp_path):
    course = _course(tmp_path, "last")
    _cli("grade", "tiny", tiny_class(tmp_path / "class", {"a_good": RIGHT, "reference": RIGHT}, 1.70e9), course=course)
    _cli("export", "nbgrader", "--root", tmp_path, course=course)
    assert _gradebook(tmp_path) == {"a_good": 2, "reference": 2}
    _cli("retract", "tiny", "reference", course=course)
    done = _cli("export", "nbgrader", "--root", tmp_path, course=course)
    assert "retracted: reference: every hand-in is retracted, so their submission of tiny was removed" in done.stderr
    assert _gradebook(tmp_path) == {"a_good": 2}
    again = _cli("export", "nbgrader", "--root", tmp_path, course=course)  # nothing left to take out: said nothing
    assert "retracted:" not in again.stderr and _gradebook(tmp_path) == {"a_good": 2}


def _nbgrader_export(tmp_path: Path) -> dict[str, str]:
    """student -> score of tiny in the real `nbgrader export`'s grades.csv."""
    from nbgrader_course import nbgrader

    out = tmp_path / "nbgrader-grades.csv"
    done = nbgrader("export", f"--db=sqlite:///{tmp_path / 'gradebook.db'}", f"--to={out}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return {row["student_id"]: row["score"] for row in csv.DictReader(out.open()) if row["assignment"] == "tiny"}


def test_a_fully_retracted_student_is_said_to_be_listed_with_0_by_nbgrader_export_and_its_command_removes_them(
        tmp_path):
    course = _course(tmp_path, "last")
    _cli("grade", "tiny", tiny_class(tmp_path / "class", {"a_good": RIGHT, "reference": RIGHT}, 1.70e9), course=course)
    _cli("export", "nbgrader", "--root", tmp_path, course=course)
    _cli("retract", "tiny", "reference", course=course)
    said = _cli("export", "nbgrader", "--root", tmp_path, course=course).stderr
    assert "`nbgrader export` lists them with 0 points for tiny" in said, said
    assert _nbgrader_export(tmp_path) == {"a_good": "2.0", "reference": "0.0"}  # what the message says
    remove = said.split("remove the student: `")[1].split("`")[0]
    assert remove.startswith("nbgrader db student remove reference --db=sqlite:///") and "--force" not in remove
    done = subprocess.run(remove, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert _nbgrader_export(tmp_path) == {"a_good": "2.0"}


def test_a_fully_retracted_student_a_ta_graded_by_hand_keeps_the_tas_grade_and_loses_ours(tmp_path):
    from nbgrader.api import Gradebook

    course = _course(tmp_path, "last")
    _cli("grade", "tiny", tiny_class(tmp_path / "class", {"a_good": RIGHT, "stray": RIGHT}, 1.70e9), course=course)
    _cli("export", "nbgrader", "--root", tmp_path, course=course)
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as book:
        grade = book.find_submission("tiny", "stray").notebooks[0].grades[0]
        grade.manual_score = 1.0
        book.db.commit()
    _cli("retract", "tiny", "stray", course=course)
    done = _cli("export", "nbgrader", "--root", tmp_path, course=course)
    assert "a TA graded this submission by hand, so it was kept" in done.stderr, done.stderr
    assert "`autograder retract tiny stray --undo`" in done.stderr
    assert "`nbgrader export` lists them with the TA's points alone" in done.stderr
    assert _nbgrader_export(tmp_path) == {"a_good": "2.0", "stray": "1.0"}
    assert "`nbgrader db student remove stray --db=sqlite:///" in done.stderr
    assert "--force` (this removes their grades of tiny too)" in done.stderr
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as book:
        grades = book.find_submission("tiny", "stray").notebooks[0].grades
        assert [(g.name, g.auto_score, g.manual_score) for g in grades] == [("test_double", 0, 1.0)]


def test_exporting_to_gradescope_again_removes_only_what_an_earlier_export_wrote_of_a_retracted_student(tmp_path):
    course = _course(tmp_path, "last")
    _cli("grade", "tiny", tiny_class(tmp_path / "class", {"a_good": RIGHT, "reference": RIGHT}, 1.70e9), course=course)
    out = tmp_path / "gs"
    (out / "someone").mkdir(parents=True)
    (out / "someone" / "results.json").write_text("{}")  # never written by an export: never removed
    _cli("export", "gradescope", "--out", out, course=course)
    (out / "reference" / "notes.txt").write_text("a TA's")
    _cli("retract", "tiny", "reference", course=course)
    done = _cli("export", "gradescope", "--out", out, course=course)
    assert "an earlier export wrote for 1 students with no result now (reference;" in done.stderr
    assert "delete it in Gradescope by hand" in done.stderr
    assert not (out / "reference" / "results.json").exists() and (out / "reference" / "notes.txt").exists()
    assert (out / "someone" / "results.json").exists() and (out / "a_good" / "results.json").exists()
    again = _cli("export", "gradescope", "--out", out, course=course)
    assert "removed" not in again.stderr


def test_an_lms_export_with_missing_blank_names_a_fully_retracted_student_whose_old_grade_stays_in_the_lms(tmp_path):
    course = _course(tmp_path, "last")
    _cli("grade", "tiny", tiny_class(tmp_path / "class", {"a_good": RIGHT, "wrong_id": RIGHT}, 1.70e9), course=course)
    (tmp_path / "roster.csv").write_text("student,name,lms_id,sis_user_id\na_good,A Good,1,S1\n"
                                         "wrong_id,W Id,2,S2\nnever,N Ever,3,S3\n")
    _cli("retract", "tiny", "wrong_id", course=course)
    out = tmp_path / "canvas.csv"
    done = _cli("export", "canvas", "--roster", tmp_path / "roster.csv", "--out", out, course=course)
    assert "1 student of the file had every hand-in of tiny retracted (wrong_id), so their cell is blank" in done.stderr
    assert "a grade of theirs uploaded before stays there. Clear it in the LMS by hand" in done.stderr, done.stderr
    assert "never" not in done.stderr.split("warning:")[-1]  # never graded: nothing uploaded before
    course.write_text(course.read_text().replace("{policy: last}", "{policy: last, missing: zero}"))
    done = _cli("export", "canvas", "--roster", tmp_path / "roster.csv", "--out", out, course=course)
    assert "retracted" not in done.stderr, done.stderr  # a 0 replaces the old grade


def test_grade_meeting_a_retracted_file_names_its_hand_in_and_lists_the_student_at_the_total_that_counts(tmp_path):
    course = _course(tmp_path, "last")
    _cli("grade", "tiny", tiny_class(tmp_path / "round1", {"-x": RIGHT, "mary ann": RIGHT}, 1.70e9), course=course)
    round2 = tiny_class(tmp_path / "round2", {"-x": WRONG, "mary ann": WRONG}, 1.71e9)
    _cli("grade", "tiny", round2, course=course)
    for student in ("-x", "mary ann"):
        done = _first(course, "retract", "tiny", "--handin", "2", "--", student)
    assert "`autograder retract tiny 'mary ann' --handin 2 --undo` puts it back" in done.stderr, done.stderr
    assert "(`autograder history tiny 'mary ann'` shows it)" in done.stderr
    preview = _first(course, "retract", "--handin", "2", "--preview", "--undo", "--", "tiny", "-x")
    pasted = "`autograder retract --handin 2 --undo -- tiny -x` (without --preview)"
    assert pasted in preview.stderr, preview.stderr
    graded = _cli("grade", "tiny", round2, course=course)  # round2 holds the retracted files again
    assert "hand-in 2 of theirs" in graded.stderr and "--handin 2 --undo" in graded.stderr, graded.stderr
    assert "`autograder retract tiny 'mary ann' --handin 2 --undo`" in graded.stderr
    # Listed, at the total of hand-in 1, which counts (the table leaves out only a student with none left).
    assert "-x: 2 / 2 points" in graded.stdout and "mary ann: 2 / 2 points" in graded.stdout, graded.stdout
    assert _totals(course) == {"'-x": "2", "mary ann": "2"}  # the CSV's guard against a formula: '-x
    args = pasted.split("`")[1].split()[1:]  # the printed command, pasted, works
    assert _first(course, *args).returncode == 0 and _totals(course)["'-x"] == "0"


def _first(course: Path, command: str, *args):
    """The CLI with --course and --db first: what follows a `--` is positional."""
    done = run_cli(command, "--course", course, "--db", course.parent / "grades.db", *args)
    assert done.returncode == 0, done.stderr
    return done


def test_replay_regrade_and_a_hand_in_number_0_name_the_retraction_and_how_to_put_it_back(tmp_path):
    course = _course(tmp_path, "last")
    _cli("grade", "tiny", tiny_class(tmp_path / "class", {"a_good": RIGHT, "bob": RIGHT}, 1.70e9), course=course)
    _cli("retract", "tiny", "bob", course=course)
    for args in (("replay", "bob", "double.small"), ("regrade", "tiny", "--students", "Bob")):
        done = _run(*args, course=course)
        assert done.returncode == 2, done.stderr
        assert "every hand-in of bob for tiny is retracted" in done.stderr, done.stderr
        assert "put it back first (`autograder retract tiny bob --undo`;" in done.stderr
        assert "grade the submission first" not in done.stderr and "no stored hand-in" not in done.stderr
    done = _run("retract", "tiny", "a_good", "--handin", "0", course=course)
    assert done.returncode == 2 and "'0' is no hand-in number: hand-ins are numbered from 1" in done.stderr
    assert "leave --handin out to retract every hand-in of the student" in done.stderr, done.stderr


def test_a_reason_on_several_lines_stays_one_row_and_a_second_retraction_keeps_the_first_ones_reason(tmp_path):
    course = _two_hand_ins(tmp_path, "last", RIGHT, WRONG)
    _cli("retract", "tiny", "multi", "--handin", "2", "--reason", "wrong folder\nsee mail", course=course)
    shown = _cli("history", "tiny", "multi", course=course).stdout
    assert "wrong folder\\nsee mail (`autograder retract tiny multi --handin 2 --undo` puts it back)" in shown, shown
    assert not any(line.startswith("see mail") for line in shown.splitlines())
    again = _run("retract", "tiny", "multi", "--handin", "2", "--reason", "other", course=course)
    assert again.returncode == 2 and "is retracted already" in again.stderr  # refused: the first reason stays
    _cli("retract", "tiny", "multi", "--reason", "the rest", course=course)  # every one left: hand-in 1 only
    notes = [row["retracted"] for row in _history(course, "multi")]
    assert notes[0].endswith(": the rest") and notes[1].endswith(": wrong folder\\nsee mail"), notes


def _canvas_download(folder: Path, upload: str, body: str, when: float) -> Path:
    """A Canvas download of one student's upload `upload` (its file id), dated `when`: its only time."""
    folder.mkdir(parents=True)
    path = folder / f"smithjohn_4101_{upload}_tiny.py"
    path.write_text(f"def double(x):\n    return {body}\n")
    os.utime(path, (when, when))
    return folder


def test_a_copy_of_a_retracted_canvas_upload_stays_out_though_a_later_upload_has_its_bytes(tmp_path):
    """Uploads A, B, then A again (a new upload id: a hand-in of its own); hand-in 1 retracted. A copy of the first
    download (newer file times) had been graded back in beside its retracted row, `history` and the exports then
    numbering the student's hand-ins differently: the same bytes under upload 3 still stand, so the retracted
    bytes were no reason to keep it out."""
    course = _course(tmp_path, "last")
    first = _canvas_download(tmp_path / "d1", "90001", RIGHT, 1.70e9)
    for download in (first, _canvas_download(tmp_path / "d2", "90002", WRONG, 1.71e9),
                     _canvas_download(tmp_path / "d3", "90003", RIGHT, 1.72e9)):
        _cli("grade", "tiny", download, course=course)
    _cli("retract", "tiny", "smithjohn_4101", "--handin", "1", course=course)
    copy = shutil.copytree(first, tmp_path / "d1-copy")
    os.utime(copy / "smithjohn_4101_90001_tiny.py", (1.75e9, 1.75e9))  # a copy's newer time
    graded = _cli("grade", "tiny", copy, course=course)
    assert "is hand-in 1 of theirs again, retracted earlier: not graded" in graded.stderr, graded.stderr
    assert "--handin 1 --undo` puts it back" in graded.stderr and "[1/1]" not in graded.stderr
    rows = _history(course, "smithjohn_4101")
    assert len(rows) == 3 and sum(1 for row in rows if row.get("retracted")) == 1, rows


def _browser_copies(folder: Path, first: str, second: str, when: float) -> Path:
    """A flat class folder where carl downloaded his file twice (`carl.py`, then `carl (1).py`), dated alike."""
    folder.mkdir(parents=True)
    for name, body in (("carl.py", first), ("carl (1).py", second)):
        (folder / name).write_text(f"def double(x):\n    return {body}\n")
        os.utime(folder / name, (when, when))
    return folder


def test_retracting_the_file_the_rules_picked_grades_the_students_other_file(tmp_path):
    """carl.py (right) beside `carl (1).py` (wrong): the later download was graded, and retracted. Graded again,
    the class folder had said `carl (1).py` stays out and never looked at carl.py: carl had no result, where
    any other file of his is to be graded as usual."""
    course = _course(tmp_path, "last")
    folder = _browser_copies(tmp_path / "class", RIGHT, WRONG, 1.70e9)
    first = _cli("grade", "tiny", folder, "--json", course=course)
    assert [json.loads(line)["file"].endswith("carl (1).py") for line in first.stdout.splitlines()] == [True]
    _cli("retract", "tiny", "carl", "--handin", "1", course=course)
    again = _cli("grade", "tiny", folder, "--json", course=course)
    (result,) = [json.loads(line) for line in again.stdout.splitlines()]
    assert result["file"].endswith("/carl.py") and result["score"] == 2, result
    said = " ".join(result["notes"])
    assert ("graded carl.py instead: carl (1).py, which the rules pick, is a hand-in of theirs that was retracted "
            "when this was graded" in said), said
    assert ("`autograder history tiny carl` lists it and whether it is still retracted; `autograder retract` with "
            "--undo and the hand-in's number" in said), said
    assert "several files were handed in; the rules pick carl (1).py, not carl.py" in said
    assert "not graded: carl (1).py" not in again.stderr, again.stderr
    assert _totals(course) == {"carl": "2"}
    rows = _history(course, "carl")
    assert [bool(row.get("retracted")) for row in rows] == [True, False], rows
    skipped = _cli("grade", "tiny", folder, course=course)  # graded now: a rerun skips it
    assert "1 submission already graded with this suite and unchanged: skipped" in skipped.stderr, skipped.stderr
    assert len(_history(course, "carl")) == 2


def test_a_copy_of_a_class_folder_grades_the_same_file_of_two_alike_so_the_rerun_skips_it(tmp_path):
    """`cp -r` gives both files new times microseconds apart, in whatever order it copies them: the other file had
    been picked, by nanoseconds, and stored as a new, late hand-in. Times within 2 seconds are equally new, and the
    browser's later download wins, in either folder."""
    course = _course(tmp_path, "last")
    folder = _browser_copies(tmp_path / "class", RIGHT, WRONG, 1.70e9)
    _cli("grade", "tiny", folder, course=course)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", folder, copy], check=True)
    os.utime(copy / "carl (1).py", ns=(1_750_000_000_000_000_000,) * 2)
    os.utime(copy / "carl.py", ns=(1_750_000_000_000_001_000,) * 2)  # copied a microsecond later
    graded = _cli("grade", "tiny", copy, course=course)
    assert "1 submission already graded with this suite and unchanged: skipped" in graded.stderr, graded.stderr
    assert len(_history(course, "carl")) == 1


def _student_folder(folder: Path, files: dict[str, tuple[str, float]]) -> Path:
    """A flat class folder with carl/ holding these files: name -> (what `double` returns, its time)."""
    (folder / "carl").mkdir(parents=True)
    for name, (body, when) in files.items():
        (folder / "carl" / name).write_text(f"def double(x):\n    return {body}\n")
        os.utime(folder / "carl" / name, (when, when))
    return folder


def _graded(done) -> dict:
    (result,) = [json.loads(line) for line in done.stdout.splitlines()]
    return result


def test_a_copy_of_a_graded_folder_grades_the_stored_one_of_two_files_its_times_tie_by_name_order(tmp_path):
    """work.py (newest) was graded; `cp -r` gave both files the copy's time, final.py then won on its name, and was
    stored as a new, late hand-in. Of files tied up to their times, the one already stored is graded (skipped)."""
    course = _course(tmp_path, "last")
    folder = _student_folder(tmp_path / "class", {"work.py": (RIGHT, 1.70e9 + 7200), "final.py": (WRONG, 1.70e9)})
    assert _graded(_cli("grade", "tiny", folder, "--json", course=course))["file"].endswith("/work.py")
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", folder, copy], check=True)
    for name, ns in (("work.py", 1_750_000_000_000_000_000), ("final.py", 1_750_000_000_000_001_000)):
        os.utime(copy / "carl" / name, ns=(ns, ns))  # copied a microsecond apart: equally new
    graded = _cli("grade", "tiny", copy, course=course)
    assert "1 submission already graded with this suite and unchanged: skipped" in graded.stderr, graded.stderr
    assert len(_history(course, "carl")) == 1 and _totals(course) == {"carl": "2"}


def test_a_folder_and_its_zip_grade_the_same_file_as_a_zip_keeps_times_to_two_seconds(tmp_path):
    """final.py at :00 and work.py at :03 (newer); a zip without exact times keeps 2-second steps, :00 and :02,
    which had counted as equally new, and final.py won on its name: the zip graded another file than its folder."""
    course = _course(tmp_path, "last")
    folder = _student_folder(tmp_path / "class", {"work.py": (RIGHT, 1_700_000_003),
                                                  "final.py": (WRONG, 1_700_000_000)})
    assert _graded(_cli("grade", "tiny", folder, "--json", course=course))["file"].endswith("/work.py")
    zipped = shutil.make_archive(str(tmp_path / "class"), "zip", tmp_path, "class")  # DOS times: 2 s steps
    graded = _cli("grade", "tiny", zipped, "--json", course=course)
    assert _graded(graded)["file"].endswith("/work.py"), graded.stdout


def test_a_student_retracted_whole_stays_out_though_their_folder_holds_another_file(tmp_path):
    """`retract tiny reference` (no --handin: the instructor's files graded as a student): the next `grade` graded
    reference's other file as a new hand-in, bringing the student back."""
    course = _course(tmp_path, "last")
    folder = tiny_class(tmp_path / "class", {"ann": RIGHT}, 1.70e9)
    (folder / "reference").mkdir()
    for name, body in (("tiny.py", RIGHT), ("tiny_v2.py", "x + x")):
        (folder / "reference" / name).write_text(f"def double(x):\n    return {body}\n")
    _cli("grade", "tiny", folder, course=course)
    done = _cli("retract", "tiny", "reference", "--reason", "instructor's files", course=course)
    assert "does not grade it again until then, nor another file of theirs in its place" in done.stderr, done.stderr
    again = _cli("grade", "tiny", folder, course=course)
    assert "not graded: tiny.py of reference" in again.stderr, again.stderr
    assert [bool(row.get("retracted")) for row in _history(course, "reference")] == [True]
    assert _totals(course) == {"ann": "2"}


def test_retracting_two_picked_files_names_both_and_no_hand_in_number_that_goes_stale(tmp_path):
    """tiny.py, then mine.py retracted: the note of mine2.py named only the last passed over, and stored `hand-in 2`
    and an undo command that an undo or a renumbering makes wrong."""
    course = _course(tmp_path, "last")
    folder = _student_folder(tmp_path / "class", {"tiny.py": (WRONG, 1.70e9), "mine.py": ("3 * x", 1.70e9),
                                                  "mine2.py": (RIGHT, 1.70e9)})
    _cli("grade", "tiny", folder, course=course)
    done = _cli("retract", "tiny", "carl", "--handin", "1", course=course)
    assert "where the student handed in other files beside it, `grade` grades their best other one" in done.stderr
    assert _graded(_cli("grade", "tiny", folder, "--json", course=course))["file"].endswith("/mine.py")
    _cli("retract", "tiny", "carl", "--handin", "2", course=course)
    result = _graded(_cli("grade", "tiny", folder, "--json", course=course))
    said = " ".join(result["notes"])
    assert result["file"].endswith("/mine2.py") and result["score"] == 2, result
    assert ("graded mine2.py instead: tiny.py and mine.py, which the rules pick first, are hand-ins of theirs "
            "that were retracted when this was graded" in said), said
    assert "`autograder history tiny carl` lists them" in said and "--handin 1" not in said and "hand-in 2" not in said


def test_a_retracted_canvas_re_upload_grades_the_earlier_upload(tmp_path):
    """The re-upload (`tiny-1.py`, a larger file id) retracted: the first upload, dropped before the hand-in rule,
    was never considered, and the student had no result."""
    course = _course(tmp_path, "last")
    folder = tmp_path / "canvas"
    folder.mkdir()
    for name, body in (("carl_4101_90001_tiny.py", RIGHT), ("carl_4101_90002_tiny-1.py", WRONG),
                       ("ann_4102_90003_tiny.py", RIGHT)):
        (folder / name).write_text(f"def double(x):\n    return {body}\n")
        os.utime(folder / name, (1.70e9, 1.70e9))
    _cli("grade", "tiny", folder, course=course)
    _cli("retract", "tiny", "carl_4101", "--handin", "1", course=course)
    again = _cli("grade", "tiny", folder, "--json", course=course)
    (carl,) = [json.loads(line) for line in again.stdout.splitlines() if '"carl_4101"' in line]
    said = " ".join(carl["notes"])
    assert carl["file"].endswith("carl_4101_90001_tiny.py") and carl["score"] == 2, carl
    assert "the rules pick the later upload; graded carl_4101_90001_tiny.py instead" in said, said
    assert _totals(course) == {"ann_4102": "2", "carl_4101": "2"}


def test_a_retracted_blackboard_attempt_grades_the_earlier_attempt_at_its_own_time(tmp_path):
    """The latest attempt retracted: the earlier one, dropped before the hand-in rule, was never considered."""
    course = _course(tmp_path, "last")
    folder = tmp_path / "blackboard"
    folder.mkdir()
    for user, attempt, body in (("carl", "2026-12-05-09-00-00", RIGHT), ("carl", "2026-12-05-10-00-00", WRONG),
                                ("ann", "2026-12-05-10-00-00", RIGHT)):
        (folder / f"HW7_{user}_attempt_{attempt}_tiny.py").write_text(f"def double(x):\n    return {body}\n")
        (folder / f"HW7_{user}_attempt_{attempt}.txt").write_text(f"Name: {user} ({user})\nAssignment: HW7\n")
    _cli("grade", "tiny", folder, course=course)
    _cli("retract", "tiny", "carl", "--handin", "1", course=course)
    carl = [json.loads(line) for line in _cli("grade", "tiny", folder, "--json", course=course).stdout.splitlines()
            if '"carl"' in line]
    assert len(carl) == 1 and carl[0]["file"].endswith("2026-12-05-09-00-00_tiny.py"), carl
    assert carl[0]["submitted_at"].startswith("2026-12-05"), carl
    assert "the rules pick the latest, of 2026-12-05 10:00:00; graded" in " ".join(carl[0]["notes"]), carl
    rows = _history(course, "carl")
    assert rows[-1]["submitted_at"] != rows[0]["submitted_at"], rows  # the earlier attempt's own time


def test_a_student_retracted_whole_stays_out_after_a_copy_or_a_touch_makes_another_file_the_one_picked(tmp_path):
    """carl/ holds a.py and b.py (newer, graded); carl retracted whole. `cp -r` gave both files the copy's time, a.py
    then won on its name, and its bytes being no retracted hand-in, it was graded: carl was back, at 2 points."""
    course = _course(tmp_path, "last")
    folder = _student_folder(tmp_path / "class", {"a.py": (RIGHT, 1.70e9), "b.py": (WRONG, 1.70e9 + 60)})
    assert _graded(_cli("grade", "tiny", folder, "--json", course=course))["file"].endswith("/b.py")
    _cli("retract", "tiny", "carl", "--reason", "not enrolled", course=course)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", folder, copy], check=True)
    for name in ("a.py", "b.py"):
        os.utime(copy / "carl" / name, ns=(1_750_000_000_000_000_000,) * 2)  # copied together: equally new
    os.utime(folder / "carl" / "a.py", (1.80e9, 1.80e9))  # a touch makes a.py the newest
    for place in (copy, folder):
        for force in ([], ["--force"]):
            done = _cli("grade", "tiny", place, *force, course=course)
            assert "not graded: a.py of carl, retracted whole on " in done.stderr, done.stderr
            assert "(not enrolled): no file of theirs is graded until the retraction is undone" in done.stderr
            assert "`autograder retract tiny carl --undo` puts them back" in done.stderr, done.stderr
    assert [bool(row.get("retracted")) for row in _history(course, "carl")] == [True]
    with Store(tmp_path / "grades.db") as store:
        assert store.students("tiny") == set()


def test_a_new_hand_in_of_a_student_retracted_whole_is_held_and_said_to_be_after_the_retraction(tmp_path):
    """nbgrader's timestamp.txt states the time: a new file of the student, handed in after the retraction."""
    course = _course(tmp_path, "last")
    folder = tmp_path / "submitted" / "s01" / "tiny"
    folder.mkdir(parents=True)
    (folder / "tiny.py").write_text(f"def double(x):\n    return {RIGHT}\n")
    (folder / "timestamp.txt").write_text("2020-11-18 12:00:00.000000 UTC")
    _cli("grade", "tiny", tmp_path / "submitted", course=course)
    _cli("retract", "tiny", "s01", course=course)
    (folder / "tiny.py").write_text(f"def double(x):\n    return {RIGHT}  # again\n")
    (folder / "timestamp.txt").write_text("2099-11-18 12:00:00.000000 UTC")
    done = _cli("grade", "tiny", tmp_path / "submitted", course=course)
    assert "not graded: tiny.py of s01, retracted whole on " in done.stderr, done.stderr
    assert ("no file of theirs is graded (it was handed in 2099-11-18T12:00:00+00:00, after the retraction, and "
            "is held too: the retraction is of the student, not of a file)" in done.stderr), done.stderr
    assert len(_history(course, "s01")) == 1
    with Store(tmp_path / "grades.db") as store:
        assert store.students("tiny") == set()


def test_an_undo_after_another_file_was_graded_in_the_retracted_ones_place_says_what_counts_now(tmp_path):
    """nbgrader: tiny.py (2 points) graded and retracted; `grade` then graded my_solution.py (0) in its place, at the
    same timestamp. The undo said "they count again as before the retraction" while, under policy last, the other
    file went on counting; and that file's note said the retracted one "stays out of every grade"."""
    course = _course(tmp_path, "last")
    folder = tmp_path / "submitted" / "s01" / "tiny"
    folder.mkdir(parents=True)
    (folder / "timestamp.txt").write_text("2026-11-18 12:00:00.000000 UTC")
    (folder / "tiny.py").write_text(f"def double(x):\n    return {RIGHT}\n")
    (folder / "my_solution.py").write_text(f"def double(x):\n    return {WRONG}\n")
    _cli("grade", "tiny", tmp_path / "submitted", course=course)
    _cli("retract", "tiny", "s01", "--handin", "1", course=course)
    instead = _graded(_cli("grade", "tiny", tmp_path / "submitted", "--json", course=course))
    said = " ".join(instead["notes"])
    assert instead["file"].endswith("my_solution.py") and "stays out" not in said, said
    assert "is a hand-in of theirs that was retracted when this was graded" in said, said
    undone = _cli("retract", "tiny", "s01", "--handin", "1", "--undo", course=course)
    assert "as before the retraction" not in undone.stderr.replace("not 2 (hand-in 1) as before", ""), undone.stderr
    assert ("their counted total is now 0 (hand-in 2), not 2 (hand-in 1) as before the retraction; hand-in 2 "
            "(my_solution.py) was graded in the retracted one's place while it was retracted, and counts now: "
            "`autograder retract tiny s01 --handin 2` retracts it, and the total is then 2 (hand-in 1)"
            in undone.stderr), undone.stderr
    assert _totals(course) == {"s01": "0"}
    _cli("retract", "tiny", "s01", "--handin", "2", course=course)
    assert _totals(course) == {"s01": "2"}
