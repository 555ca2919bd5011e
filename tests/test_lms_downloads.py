"""An LMS's "download all submissions" zip graded as it comes: each student read from the names the LMS gave
their files, one student however many files or attempts they handed in, the LMS's own files not named."""
from __future__ import annotations

import csv
import dataclasses
import datetime
import json
import os
import re
import shutil
import time
import zipfile

import nbformat
import pytest

from autograder.grading.discover import find_submissions
from autograder.grading.late import LateRule, assess
from autograder.grading.lms_downloads import canvas_user, moodle_participant, read_download
from autograder.outputs.lms import ROSTER_FIELDS, by_lms_user
from autograder.outputs.roster import read_roster

from conftest import PLAIN, SUBMISSIONS, run_cli

BUGGY = SUBMISSIONS / "buggy" / "padding_off_by_one.py"


def _notebook(path, code):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(code)]
    nbformat.write(notebook, path)


def _found(folder, tmp_path):
    return {item.student: item for item in find_submissions([folder], "w07_attention", "attention", tmp_path / "work")}


def test_a_canvas_download_is_one_student_per_user_whatever_the_files_and_marks(tmp_path):
    """Canvas names each file `<login>[_LATE]_<user id>_<file id>_<name>`, and a name the student used before
    gets `-1`: the user is the student, and among a student's files the one named after the assignment is graded."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    _notebook(folder / "smithjohn_4101_90001_attention-1.ipynb", PLAIN.read_text())
    shutil.copy(BUGGY, folder / "smithjohn_4101_90002_scratch.py")
    shutil.copy(PLAIN, folder / "obrienmarykate_LATE_4102_90003_attention.py")
    shutil.copy(PLAIN, folder / "zhang_4103_90004_my_attention_final.py")
    shutil.copy(PLAIN, folder / "_4104_90005_attention.py")  # a name with no letter or digit Canvas keeps
    found = _found(folder, tmp_path)
    assert sorted(found) == ["_4104", "obrienmarykate_4102", "smithjohn_4101", "zhang_4103"]
    assert {item.lms for item in found.values()} == {"Canvas"}
    assert found["smithjohn_4101"].path.name == "smithjohn_4101_90001_attention-1.ipynb"
    assert "not smithjohn_4101_90002_scratch.py" in found["smithjohn_4101"].note
    # A resubmission is a new file id: the same student, so history and regrades follow them.
    os.rename(folder / "zhang_4103_90004_my_attention_final.py", folder / "zhang_4103_91234_my_attention_final.py")
    assert "zhang_4103" in _found(folder, tmp_path)


def test_a_moodle_download_grades_the_student_its_folder_form_would(tmp_path):
    flat, folders = tmp_path / "flat", tmp_path / "folders"
    flat.mkdir()
    shutil.copy(PLAIN, flat / "Mary-Kate O'Brien_123456_assignsubmission_file_attention.py")
    _notebook(flat / "John Smith_123457_assignsubmission_file_attention.ipynb", PLAIN.read_text())
    (folders / "Mary-Kate O'Brien_123456_assignsubmission_file_").mkdir(parents=True)
    shutil.copy(PLAIN, folders / "Mary-Kate O'Brien_123456_assignsubmission_file_" / "attention.py")
    assert sorted(_found(flat, tmp_path)) == ["John Smith_123457_assignsubmission_file_",
                                              "Mary-Kate O'Brien_123456_assignsubmission_file_"]
    assert sorted(_found(folders, tmp_path)) == ["Mary-Kate O'Brien_123456_assignsubmission_file_"]
    # A Moodle folder holding no .py or .ipynb is still a hand-in: its student is listed with why nothing was graded,
    # as in nbgrader's layout, not left blank in the export.
    (folders / "Eve Ng_123458_assignsubmission_file_").mkdir()
    (folders / "Eve Ng_123458_assignsubmission_file_" / "attention.pdf").write_bytes(b"%PDF-1.4")
    eve = _found(folders, tmp_path)["Eve Ng_123458_assignsubmission_file_"]
    assert eve.problem.startswith("nothing to grade: this hand-in holds only attention.pdf"), eve.problem
    assert eve.submitted_at and eve.lms == "Moodle"  # the folder's time: the student's feedback has no TA advice
    assert _found(folders, tmp_path)["Mary-Kate O'Brien_123456_assignsubmission_file_"].lms == "Moodle"
    # The student's online text has a folder of its own beside their files': no hand-in missing there.
    (folders / "Mary-Kate O'Brien_123456_assignsubmission_onlinetext_").mkdir()
    (folders / "Mary-Kate O'Brien_123456_assignsubmission_onlinetext_" / "onlinetext.html").write_text("<p>Hi</p>")
    skipped: list = []
    found = find_submissions([folders], "w07_attention", "attention", tmp_path / "work", skipped)
    assert len(found) == 2 and skipped == [], skipped
    # Online text alone is no hand-in of files: the folder is named, so the student is not missed without a word.
    (folders / "Ann Lee_101_assignsubmission_onlinetext_").mkdir()
    skipped = []
    find_submissions([folders], "w07_attention", "attention", tmp_path / "work", skipped)
    assert [p.name for p in skipped] == ["Ann Lee_101_assignsubmission_onlinetext_"], skipped


def test_a_blackboard_download_grades_each_students_latest_attempt_and_leaves_out_its_receipts(tmp_path):
    folder = tmp_path / "gradebook"
    folder.mkdir()
    old, new = "2026-12-01-09-15-00", "2026-12-01-22-40-13"
    shutil.copy(PLAIN, folder / f"HW_7 Attention_j_smith_attempt_{new}_attention.py")
    shutil.copy(BUGGY, folder / f"HW_7 Attention_j_smith_attempt_{old}_attention.py")
    os.utime(folder / f"HW_7 Attention_j_smith_attempt_{old}_attention.py", (time.time() + 60,) * 2)  # newer file
    shutil.copy(PLAIN, folder / f"HW_7 Attention_bob_attempt_{old}_attention.py")
    for user, when in (("j_smith", old), ("j_smith", new), ("bob", old)):
        (folder / f"HW_7 Attention_{user}_attempt_{when}.txt").write_text(f"Name: {user}\nFiles:\n")
    found = _found(folder, tmp_path)
    assert sorted(found) == ["bob", "j_smith"]  # a username may hold `_`; the assignment's part is shared
    assert found["j_smith"].path.name == f"HW_7 Attention_j_smith_attempt_{new}_attention.py"
    assert found["j_smith"].note == "2 attempts were downloaded; graded the latest, of 2026-12-01 22:40:13"
    assert {item.lms for item in found.values()} == {"Blackboard"}
    # The attempt's time, not the file's (unzipping or copying sets that), decides lateness.
    assert (found["j_smith"].submitted_at, found["bob"].submitted_at) == ("2026-12-01T22:40:13", "2026-12-01T09:15:00")
    rule = LateRule(due=datetime.datetime.fromisoformat("2026-12-01T22:00:00-05:00"), penalty_per_day=0.5)
    late = [assess(rule, student, 10.0, found[student].submitted_at, found[student].submitted_at_source)
            for student in ("j_smith", "bob")]
    assert [(one.penalty, one.late_by_hours) for one in late] == [(5.0, 0.68), (0.0, 0.0)], late
    assert "unreliable" not in late[0].reason
    # `grade` says in which offset it reads them, and how to give the institution's clock instead.
    from autograder.cli.grading import _zoneless
    said = _zoneless(list(found.values()), rule)
    assert len(said) == 1 and "read in the due time's offset (-05:00)" in said[0] and "time_zone:" in said[0], said
    assert _zoneless(list(found.values()), dataclasses.replace(rule, time_zone="America/New_York")) == []
    skipped = []
    find_submissions([folder], "w07_attention", "attention", tmp_path / "work", skipped)
    assert skipped == []  # the receipts are the LMS's, not a student's missing hand-in


def test_blackboard_receipts_name_each_username_where_every_username_shares_a_first_word(tmp_path):
    """Every username starts with `s_`: from the names alone that word looks like the assignment's, but each
    attempt's receipt names its username on its first line."""
    folder = tmp_path / "gradebook"
    folder.mkdir()
    when = "2026-12-01-22-40-13"
    for user in ("s_1234", "s_5678"):
        shutil.copy(PLAIN, folder / f"HW7_{user}_attempt_{when}_attention.py")
    assert sorted(_found(folder, tmp_path)) == ["1234", "5678"]  # no receipts: the shared `HW7_s` is taken
    for user, name in (("s_1234", "Ann Lee"), ("s_5678", "Bo Chan")):
        (folder / f"HW7_{user}_attempt_{when}.txt").write_text(
            f"Name: {name} ({user})\nAssignment: HW7\nDate Submitted: Tuesday, December 1, 2026 10:40:13 PM GMT\n\n"
            "Files:\n\tOriginal filename: attention.py\n")
    assert sorted(_found(folder, tmp_path)) == ["s_1234", "s_5678"]
    # A receipt that names someone else's username (edited, or of another download) decides nothing; nor does a
    # `Name:` line below the first, where the student's own comments are.
    (folder / f"HW7_s_1234_attempt_{when}.txt").write_text("Name: Ann Lee (ann)\n")
    (folder / f"HW7_s_5678_attempt_{when}.txt").write_text("Assignment: HW7\nComments:\nName: Bo Chan (s_5678)\n")
    assert sorted(_found(folder, tmp_path)) == ["1234", "5678"]


@pytest.mark.parametrize("names", [
    ["ann.py", "ben.ipynb"],  # named by the TA
    ["smithjohn_4101_90001_attention.py", "ann.py"],  # half the names have Canvas's form: not a download
    ["lab_1_2.py"],  # too few parts for Canvas
    ["HW7_bob_attempt_2026-12-01-22-40-13_attention.py", "W8_ann_attempt_2026-12-01-22-40-13_attention.py"],
])
def test_a_folder_is_read_as_a_download_only_when_most_names_are_one_lms(names):
    assert read_download(names) == {}


def test_a_file_the_ta_added_to_a_download_keeps_its_stem(tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name in ("smithjohn_4101_90001_attention.py", "doejane_4102_90002_attention.py", "latecomer.py"):
        shutil.copy(PLAIN, folder / name)
    found = _found(folder, tmp_path)
    assert sorted(found) == ["doejane_4102", "latecomer", "smithjohn_4101"] and found["latecomer"].lms == ""


# Canvas's gradebook export, as it downloads it: a "Points Possible" row, then one row per student.
CANVAS_GRADEBOOK = """Student,ID,SIS User ID,SIS Login ID,Section,Week 7 (1234)
    Points Possible,,,,,100.00
"Smith, John",4101,S4101,jsmith,ML 1,
"Doe, Jane",4102,S4102,jdoe,ML 1,
"Roe, Rick",4103,S4103,rroe,ML 2,
"""


def test_canvas_gradebook_export_is_a_roster_that_finds_each_downloaded_student_by_user_id(tmp_path):
    path = tmp_path / "grades.csv"
    path.write_text(CANVAS_GRADEBOOK)
    roster = read_roster(path, ROSTER_FIELDS)
    assert list(roster) == ["4101", "4102", "4103"]  # no Points Possible row
    assert roster["4101"] == {"name": "Smith, John", "lms_id": "4101", "sis_user_id": "S4101", "sis_login_id": "jsmith",
                              "section": "ML 1"}
    keyed = by_lms_user(roster, {"smithjohn_4101", "doejane_4102", "4103", "ann"}, canvas_user)
    assert list(keyed) == ["smithjohn_4101", "doejane_4102", "4103"]  # in the roster's order; 4103 is its own id
    assert keyed["doejane_4102"]["name"] == "Doe, Jane"
    # Two stored students of one user (a download and a renamed copy): neither is guessed.
    assert list(by_lms_user(roster, {"smithjohn_4101", "johnsmith_4101"}, canvas_user)) == ["4101", "4102", "4103"]


@pytest.mark.slow
def test_a_canvas_zip_is_graded_and_its_students_are_canvas_users(tmp_path):
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.write(PLAIN, "smithjohn_4101_90001_attention.py")
        bundle.write(BUGGY, "doejane_LATE_4102_90002_attention-2.py")
    done = run_cli("grade", "w07_attention", archive, "--json", "--db", tmp_path / "g.db", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert sorted(results) == ["doejane_4102", "smithjohn_4101"]
    # The TA is told the ids before anything is stored under them.
    assert "2 submissions of w07_attention found; all of them in a Canvas download, each named as login_userid " \
           "(smithjohn_4101)" in done.stderr
    assert results["smithjohn_4101"]["score"] == 100 > results["doejane_4102"]["score"]
    # Canvas's own gradebook export is the roster: each user gets their grade, and one with no hand-in none.
    (tmp_path / "grades.csv").write_text(CANVAS_GRADEBOOK)
    out = tmp_path / "canvas.csv"
    done = run_cli("export", "canvas", "--roster", tmp_path / "grades.csv", "--db", tmp_path / "g.db", "--out", out)
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert lines[2].startswith('"Smith, John",4101,S4101,jsmith,ML 1,100') and lines[3].startswith('"Doe, Jane",4102')
    assert lines[4] == '"Roe, Rick",4103,S4103,rroe,ML 2,' and "not on the roster" not in done.stderr


# Moodle's grading worksheet, as an assignment's "Download grading worksheet" gives it: an earlier feedback may
# hold a line break, and a student not yet graded has "-" for the grade's time.
MOODLE_WORKSHEET = """Identifier,"Full name","Email address",Status,Grade,"Maximum Grade","Grade can be changed",\
"Last modified (submission)","Last modified (grade)","Feedback comments"
"Participant 123456","Mary-Kate O'Brien",mk@uni.example,"Submitted for grading",,100.00,Yes,\
"Friday, 4 December 2026, 10:15 AM",-,
"Participant 123457","John Smith",js@uni.example,"Submitted for grading - Graded",40.00,100.00,Yes,\
"Friday, 4 December 2026, 9:02 AM","Saturday, 5 December 2026, 8:00 PM","Good start.
See the notes."
"Participant 123458","Rick Roe",rr@uni.example,"No submission",,100.00,Yes,-,-,
"""


def test_moodle_grading_worksheet_is_a_roster_that_finds_each_downloaded_student_by_participant(tmp_path):
    path = tmp_path / "worksheet.csv"
    path.write_text(MOODLE_WORKSHEET)
    roster = read_roster(path, ROSTER_FIELDS)
    assert list(roster) == ["123456", "123457", "123458"]
    assert roster["123457"] == {"participant": "Participant 123457", "name": "John Smith", "email": "js@uni.example",
                                "max_grade": "100.00"}
    stored = {"Mary-Kate O'Brien_123456_assignsubmission_file_", "John Smith_123457_assignsubmission_file_", "ann"}
    assert moodle_participant("John Smith_123457_assignsubmission_file_") == "123457"
    assert moodle_participant("smithjohn_4101") is None
    keyed = by_lms_user(roster, stored, moodle_participant)
    assert list(keyed) == ["Mary-Kate O'Brien_123456_assignsubmission_file_",
                           "John Smith_123457_assignsubmission_file_", "123458"]  # Rick handed nothing in


@pytest.mark.slow
def test_a_moodle_download_is_graded_and_its_worksheet_filled_in_for_upload(tmp_path):
    folder = tmp_path / "download"
    folder.mkdir()
    shutil.copy(PLAIN, folder / "Mary-Kate O'Brien_123456_assignsubmission_file_attention.py")
    shutil.copy(BUGGY, folder / "John Smith_123457_assignsubmission_file_attention.py")
    done = run_cli("grade", "w07_attention", folder, "--json", "--db", tmp_path / "g.db", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    scores = {r["student"]: r["score"] for r in map(json.loads, done.stdout.splitlines())}
    assert scores["Mary-Kate O'Brien_123456_assignsubmission_file_"] == 100
    # The worksheet Moodle gave is the roster; what comes back is the worksheet Moodle's upload reads.
    (tmp_path / "worksheet.csv").write_text(MOODLE_WORKSHEET)
    out = tmp_path / "upload.csv"
    done = run_cli("export", "moodle", "--roster", tmp_path / "worksheet.csv", "--db", tmp_path / "g.db", "--out", out)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert list(rows[0]) == ["Identifier", "Full name", "Email address", "Grade", "Last modified (grade)",
                             "Feedback comments"]
    graded = {row["Identifier"]: row for row in rows}
    assert graded["Participant 123456"]["Grade"] == "100" and graded["Participant 123456"]["Full name"] == \
        "Mary-Kate O'Brien"
    john = scores["John Smith_123457_assignsubmission_file_"]
    assert graded["Participant 123457"]["Grade"] == f"{john:g}" and john < 100
    assert graded["Participant 123457"]["Feedback comments"].startswith(f"{john:g} of 100 points")
    # No hand-in: left out. Moodle's upload skips a blank grade but imports the row's feedback all the same, over
    # whatever a TA wrote there.
    assert "Participant 123458" not in graded and "left out of the file" in done.stderr
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000", graded["Participant 123456"]["Last modified (grade)"])
    assert "not on the roster" not in done.stderr
    # A Moodle assignment out of another maximum would skip the grades above it: the TA is told, nothing written.
    (tmp_path / "worksheet.csv").write_text(MOODLE_WORKSHEET.replace(",100.00,", ",10.00,"))
    out.unlink()
    done = run_cli("export", "moodle", "--roster", tmp_path / "worksheet.csv", "--db", tmp_path / "g.db", "--out", out)
    assert done.returncode != 0 and not out.exists()
    assert "gives the assignment a maximum grade of 10.00, but w07_attention is out of 100" in done.stderr


# Blackboard's Grade Center download (Work Offline > Download, tab-delimited): UTF-16 with a byte order mark.
BLACKBOARD_GRADE_CENTER = ('"Last Name"\t"First Name"\t"Username"\t"Student ID"\t"Last Access"\t"Availability"\t'
                           '"Week 7, Attention [Total Pts: 100 Score] |1234567"\n'
                           '"Lee"\t"Ann"\t"s_1234"\t"1234"\t"2026-12-01 10:00:00"\t"Available"\t""\n'
                           '"Chan"\t"Bo"\t"s_5678"\t"5678"\t"2026-12-01 11:00:00"\t"Available"\t""\n')


def test_blackboard_grade_center_download_is_a_roster_keyed_by_username(tmp_path):
    path = tmp_path / "gc.xls"
    path.write_bytes(BLACKBOARD_GRADE_CENTER.encode("utf-16"))
    roster = read_roster(path, ROSTER_FIELDS)
    assert roster == {"s_1234": {"last_name": "Lee", "first_name": "Ann", "username": "s_1234", "sis_user_id": "1234"},
                      "s_5678": {"last_name": "Chan", "first_name": "Bo", "username": "s_5678", "sis_user_id": "5678"}}
    path = tmp_path / "gc.csv"  # its comma-separated form, in UTF-8
    path.write_text(BLACKBOARD_GRADE_CENTER.replace("\t", ","), encoding="utf-8-sig")
    assert list(read_roster(path, ROSTER_FIELDS)) == ["s_1234", "s_5678"]


@pytest.mark.slow
def test_a_blackboard_download_is_graded_and_exported_against_its_grade_center(tmp_path):
    folder = tmp_path / "gradebook"
    folder.mkdir()
    when = "2026-12-01-22-40-13"
    for user, name in (("s_1234", "Ann Lee"), ("s_5678", "Bo Chan")):
        shutil.copy(PLAIN if user == "s_1234" else BUGGY, folder / f"HW7_{user}_attempt_{when}_attention.py")
        (folder / f"HW7_{user}_attempt_{when}.txt").write_text(f"Name: {name} ({user})\nFiles:\n")
    done = run_cli("grade", "w07_attention", folder, "--json", "--db", tmp_path / "g.db", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    scores = {r["student"]: r["score"] for r in map(json.loads, done.stdout.splitlines())}
    assert scores["s_1234"] == 100 > scores["s_5678"]
    (tmp_path / "gc.xls").write_bytes(BLACKBOARD_GRADE_CENTER.encode("utf-16"))
    out = tmp_path / "upload.xls"
    done = run_cli("export", "blackboard", "--roster", tmp_path / "gc.xls", "--db", tmp_path / "g.db", "--out", out,
                   "--column", "Week 7, Attention", "--column-id", "1234567")
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == "Last Name\tFirst Name\tUsername\tStudent ID\tWeek 7, Attention [Total Pts: 100 Score] |1234567"
    assert lines[1:] == ["Lee\tAnn\ts_1234\t1234\t100", f"Chan\tBo\ts_5678\t5678\t{scores['s_5678']:g}"]
    assert "not on the roster" not in done.stderr


# Gradescope's Export Submissions download: the metadata as Gradescope writes it (Ruby's YAML, symbol keys), one
# submission from a group, one whose submitter has no email (its sid names it), and one file in a subfolder.
GRADESCOPE_METADATA = """submission_101:
  :submitters:
  - :name: Ann Lee
    :sid: '4101'
    :email: ann@uni.example
  :created_at: 2026-11-20 23:41:07.123456000 -05:00
  :score:
  :status: !ruby/symbol processed
submission_102:
  :submitters:
  - :name: Ben Roe
    :sid: '4102'
    :email: ben@uni.example
  - :name: Ada Cho
    :sid: '4103'
    :email: ada@uni.example
  :created_at: 2026-11-21 08:00:00.000000000 +01:00
submission_103:
  :submitters:
  - :name: Cy Poe
    :sid: '4104'
  :created_at: 2026-11-19 12:00:00.000000000 -05:00
submission_104:
  :submitters: []
  :created_at: 2026-11-19 12:00:00.000000000 -05:00
"""


def _gradescope_download(tmp_path):
    export = tmp_path / "assignment_777_export"
    for folder, source in [("submission_101", PLAIN), ("submission_102", BUGGY), ("submission_103/work", PLAIN),
                           ("submission_104", PLAIN), ("submission_105", PLAIN)]:
        (export / folder).mkdir(parents=True)
        shutil.copy(source, export / folder / "attention.py")
    (export / "submission_metadata.yml").write_text(GRADESCOPE_METADATA)
    return export


def test_a_gradescope_download_names_each_submission_as_gradescope_run_does_at_its_own_time(tmp_path):
    """The student is the submitters' emails (joined for a group, the sid where no email is given), as
    `gradescope-run` names the submission on Gradescope; the time is Gradescope's, in UTC, not the file's."""
    found = _found(_gradescope_download(tmp_path), tmp_path)
    assert sorted(found) == ["4104", "ada@uni.example,ben@uni.example", "ann@uni.example", "submission_104",
                             "submission_105"]
    ann = found["ann@uni.example"]
    assert ann.submitted_at == "2026-11-21T04:41:07.123456+00:00" and ann.submitted_at_source == "gradescope metadata"
    assert ann.lms == "Gradescope" and ann.stored
    assert found["ada@uni.example,ben@uni.example"].submitted_at == "2026-11-21T07:00:00+00:00"
    assert found["4104"].path.parts[-2:] == ("work", "attention.py")
    # No submitter named: not stored under a made-up id, and the TA is told what to fix.
    assert not found["submission_104"].stored and "does not say whose submission_104/ is" in \
        found["submission_104"].problem
    # Not in the metadata: graded under its folder's name, at its file's time, said so.
    assert "is not in the download's submission_metadata.yml" in found["submission_105"].note
    assert found["submission_105"].submitted_at_source == "file time (unreliable)"


def test_a_gradescope_download_is_found_zipped_and_in_the_folder_it_was_extracted_to(tmp_path):
    downloads = tmp_path / "downloads"
    export = _gradescope_download(downloads)
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for path in sorted(export.rglob("*")):
            bundle.write(path, path.relative_to(downloads))
    (tmp_path / "work").mkdir()
    assert "ann@uni.example" in _found(archive, tmp_path)
    assert "ann@uni.example" in _found(downloads, tmp_path)  # the folder holding the extracted download


def test_a_gradescope_download_with_unreadable_metadata_is_refused_with_what_to_do(tmp_path):
    from autograder.grading.found import LayoutError
    export = _gradescope_download(tmp_path)
    (export / "submission_metadata.yml").write_text("submission_101: [unclosed\n")
    with pytest.raises(LayoutError, match="is not YAML .*download the submissions again from Gradescope"):
        _found(export, tmp_path)


def test_a_file_name_that_holds_another_lms_part_poses_as_no_other_student_or_time():
    """What follows the LMS's part of a name is the student's own file name: a second `_<n>_assignsubmission_file_`
    or `_attempt_<time>_` in it names neither another participant (whose worksheet row it would fill) nor an
    earlier attempt time (which the late rule would believe)."""
    moodle = read_download(["Mallory Moe_1002_assignsubmission_file_attention.py",
                            "Mallory Moe_1002_assignsubmission_file_x_1001_assignsubmission_file_attention.py",
                            "Bob Roe_1003_assignsubmission_file_attention.py"])
    assert {entry.student for entry in moodle.values()} == {"Mallory Moe_1002_assignsubmission_file_",
                                                            "Bob Roe_1003_assignsubmission_file_"}
    assert moodle_participant("Mallory Moe_1002_assignsubmission_file_") == "1002"
    name = "HW7_mallory_attempt_2026-11-25-10-00-00_a_attempt_2026-11-19-10-00-00_attention.py"
    blackboard = read_download([name, "HW7_eve_attempt_2026-11-25-10-00-00_attention.py"],
                               {"HW7_mallory_attempt_2026-11-25-10-00-00.txt": lambda: "Name: Mal Lory (mallory)"})
    assert blackboard[name].student == "mallory" and blackboard[name].attempt == "2026-11-25-10-00-00"
    assert blackboard[name].name == "a_attempt_2026-11-19-10-00-00_attention.py"


def test_a_canvas_re_upload_is_graded_rather_than_the_file_it_replaced(tmp_path):
    """The README's own example: `attention.ipynb`, then `attention-1.ipynb` uploaded again under the same name
    with a larger file id. The earlier one, with more functions defined, had been graded."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    _notebook(folder / "smithjohn_4101_90001_attention.ipynb", PLAIN.read_text() + "\n\ndef helper():\n    pass\n")
    _notebook(folder / "smithjohn_LATE_4101_90002_attention-1.ipynb", PLAIN.read_text())
    _notebook(folder / "doejane_4102_90003_attention.ipynb", PLAIN.read_text())
    shutil.copy(PLAIN, folder / "doejane_4102_90004_attention.py")
    found = _found(folder, tmp_path)
    assert found["smithjohn_4101"].path.name == "smithjohn_LATE_4101_90002_attention-1.ipynb"
    assert ("smithjohn_LATE_4101_90002_attention-1.ipynb was uploaded after smithjohn_4101_90001_attention.ipynb under "
            "the same name") in found["smithjohn_4101"].note
    # Two names are two files, not an upload again: the choice between them says which rule decided it.
    assert found["doejane_4102"].path.suffix == ".ipynb"
    assert found["doejane_4102"].note.endswith("(a notebook over a .py of as many functions)"), found["doejane_4102"]


def test_folders_nested_deeper_than_any_class_cost_nothing_but_their_own_depth(tmp_path, monkeypatch):
    """1,500 nested folders in one student's Gradescope submission, or one member nested so deep in a zip: os.walk and
    Path.mkdir ran out of recursion, and `grade` stopped with a traceback, grading no one."""
    export = _gradescope_download(tmp_path / "download")
    monkeypatch.chdir(export / "submission_102")
    for _ in range(1500):
        os.mkdir("a")
        os.chdir("a")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    assert "ann@uni.example" in _found(export, tmp_path)
    monkeypatch.chdir(export / "submission_102")  # removed here, from the bottom: pytest's own clean-up recurses
    for _ in range(1500):
        os.chdir("a")
    for _ in range(1500):
        os.chdir("..")
        os.rmdir("a")
    monkeypatch.chdir(tmp_path)
    archive = tmp_path / "deep.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("class/" + "a/" * 1500 + "notes.txt", "x")
        bundle.write(PLAIN, "class/ann.py")
    assert list(_found(archive, tmp_path)) == ["ann"]


def test_one_submission_of_a_gradescope_download_is_that_submission_whatever_it_holds(tmp_path):
    """A TA grading one submission folder of the download, or a file in it: stored under the submission's id at its
    time, not the folder's or the file's name. And what the student uploaded is never read as a layout: a
    submitted/ tree or a submission_metadata.yml in it had stored a 0 under another student's id."""
    export = _gradescope_download(tmp_path / "download")
    (tmp_path / "work").mkdir()
    planted = export / "submission_102" / "submitted" / "ann@uni.example" / "w07_attention"
    planted.mkdir(parents=True)
    (planted / "attention.py").write_text("def score(Q, K, scale=None):\n    return 0\n")
    (planted / "timestamp.txt").write_text("2026-11-25 10:00:00.000000 UTC\n")
    (export / "submission_101" / "submission_metadata.yml").write_text(
        "x:\n  :submitters:\n  - :email: bob@uni.example\n")
    for path, student in ((export / "submission_102", "ada@uni.example,ben@uni.example"),
                          (export / "submission_101", "ann@uni.example"),
                          (export / "submission_101" / "attention.py", "ann@uni.example")):
        [found] = find_submissions([path], "w07_attention", "attention", tmp_path / "work")
        assert found.student == student and found.submitted_at_source == "gradescope metadata", (path, found)
        assert (export / path.relative_to(export).parts[0]) in found.path.parents, found.path  # its own file


def test_a_file_the_ta_put_beside_a_students_blackboard_attempts_is_not_taken_for_an_earlier_attempt(tmp_path):
    # jsmith.py (emailed late work, say) beside jsmith's two attempts sorted first as an attempt of no time, and was
    # left out as an earlier attempt, without a word.
    folder = tmp_path / "gradebook"
    folder.mkdir()
    for when in ("2026-12-01-09-15-00", "2026-12-01-22-40-13"):
        shutil.copy(BUGGY, folder / f"HW7_jsmith_attempt_{when}_attention.py")
        (folder / f"HW7_jsmith_attempt_{when}.txt").write_text("Name: J Smith (jsmith)\nFiles:\n")
    shutil.copy(PLAIN, folder / "jsmith.py")
    found = _found(folder, tmp_path)["jsmith"]
    # Between it and the latest attempt, choose's own rules decide (the attempt's file is named after the
    # assignment), and the note names the one not graded.
    assert found.path.name == "HW7_jsmith_attempt_2026-12-01-22-40-13_attention.py", found
    assert "graded the latest, of 2026-12-01 22:40:13" in found.note
    assert "not jsmith.py (the file named after the assignment)" in found.note, found.note


def test_a_moodle_class_of_one_submission_is_said_to_be_one_not_all_of_them(tmp_path):
    """"1 submission of w07_attention found; all of them in a Moodle download" read wrong for a class of one."""
    (tmp_path / "class").mkdir()
    shutil.copy(PLAIN, tmp_path / "class" / "Kim Park_300002_assignsubmission_file_attention.py")
    done = run_cli("grade", "w07_attention", tmp_path / "class", "--db", tmp_path / "g.db", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert "1 submission of w07_attention found; it is in a Moodle download, named as Moodle's folder name " \
           "(Full Name_123456_assignsubmission_file_)" in done.stderr, done.stderr
    assert "all of them" not in done.stderr
