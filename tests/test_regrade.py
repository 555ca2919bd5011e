"""Issue 25: regrade with a preview, every hand-in kept, and the submissions policy — through the real CLI.

A tiny course (one function, `double`) is graded with the real sandbox into a
real SQLite file; a planted change to its hidden check is then previewed,
committed and read back from the history.
"""
from __future__ import annotations

import csv
import dataclasses
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.grading.attempts import SubmissionPolicy, choose, counted_results
from autograder.grading.course import CourseError, load_course
from autograder.grading.history import Attempt, Entry, attempts
from autograder.grading.late import LateRule
from autograder.grading.results import CheckResult, SubmissionResult
from autograder.grading.store import Store

from conftest import FIXTURES, ROOT, repository_env, run_cli, tiny_class

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
{extra}"""
# The planted fix: the hidden check tries only non-negative inputs, so `2 * abs(x)` passes it from now on.
PLANTED = ("x = normal(t.rng, (*t.sizes[\"batch\"], t.sizes[\"n\"]))",
           "x = abs(normal(t.rng, (*t.sizes[\"batch\"], t.sizes[\"n\"])))")
STUDENTS = {"a_good": "2 * x", "b_abs": "2 * abs(x)", "c_zero": "0 * x", "d_sum": "x + x"}


def _course(root: Path, extra: str = "") -> Path:
    for part in ("assignments", "solutions"):
        if not (root / part / "tiny").exists():
            shutil.copytree(FIXTURES / "tiny" / part / "tiny", root / part / "tiny")
    (root / "course.yaml").write_text(COURSE.format(extra=extra))
    return root / "course.yaml"


def _cli(*args, course: Path):
    done = run_cli(*args, "--course", course, "--db", course.parent / "grades.db")
    assert done.returncode == 0, done.stderr
    return done


def _rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as connection:
        return (connection.execute("SELECT * FROM submissions ORDER BY student").fetchall()
                + connection.execute("SELECT * FROM checks ORDER BY submission_id, position").fetchall()
                + connection.execute("SELECT id, student, suite_version, score FROM history ORDER BY id").fetchall())


def test_a_regrade_stopped_midway_says_it_kept_nothing(tmp_path):
    """`grade` commits each result as it lands and says so when stopped; a regrade commits at its end, and a stop
    before then must not say its results were kept."""
    course = _course(tmp_path)
    _cli("grade", "tiny", tiny_class(tmp_path / "class", STUDENTS, 1.7e9), course=course)
    stored = _rows(tmp_path / "grades.db")
    started = subprocess.Popen([sys.executable, "-m", "autograder", "regrade", "tiny", "--course", course,
                                "--db", tmp_path / "grades.db"], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                               env=repository_env())
    said = [started.stderr.readline()]
    while said[-1] and not said[-1].startswith("regrading "):  # its grading has begun: its sandboxes are starting
        said.append(started.stderr.readline())
    started.send_signal(signal.SIGTERM)
    stderr = "".join(said) + started.communicate(timeout=120)[1]
    assert started.returncode == 128 + signal.SIGTERM, stderr
    assert "a stop before then kept none of them" in stderr and "results already stored are kept" not in stderr
    assert _rows(tmp_path / "grades.db") == stored


def test_regrade_of_a_database_with_no_results_says_to_grade_first(tmp_path):
    course = _course(tmp_path)
    with Store(tmp_path / "grades.db"):  # a grade stopped before its first result leaves it so
        pass
    done = run_cli("regrade", "tiny", "--course", course, "--db", tmp_path / "grades.db")
    assert done.returncode == 2 and "holds no results of tiny to regrade" in done.stderr, done.stderr
    assert "autograder grade tiny" in done.stderr
    # Ids asked for that the database lacks are named as such.
    done = run_cli("regrade", "tiny", "--students", "zed", "--course", course, "--db", tmp_path / "grades.db")
    assert done.returncode == 2 and "no stored hand-in of zed" in done.stderr, done.stderr


@pytest.mark.slow  # end to end: three commands, each starting its sandbox
def test_a_previews_advice_commits_with_its_own_options_and_nothing_else(tmp_path):
    """The command a preview says commits it repeats the preview's students, --no-decrease and database, quoted for
    the shell: without them it regraded everyone, into the default database."""
    course, db = _course(tmp_path), tmp_path / "their grades.db"
    assert run_cli("grade", "tiny", tiny_class(tmp_path / "class", STUDENTS, 1.7e9), "--course", course,
                   "--db", db).returncode == 0
    hidden = tmp_path / "solutions" / "tiny" / "hidden_checks.py"
    hidden.write_text(hidden.read_text().replace(*PLANTED))
    preview = run_cli("regrade", "tiny", "--students", "b_abs", "c_zero", "--no-decrease", "--preview", "--db", db,
                      "--course", course)
    said = re.search(r"`(autograder regrade [^`]*)` commits it", preview.stderr)
    assert preview.returncode == 0 and said, preview.stderr
    words = shlex.split(said.group(1))
    assert "--preview" not in words and words[words.index("--db") + 1] == str(db) and "--no-decrease" in words
    assert words[words.index("--students") + 1:][:2] == ["b_abs", "c_zero"], words
    committed = run_cli(*words[1:])
    assert committed.returncode == 0, committed.stderr
    with sqlite3.connect(db) as connection:
        kept = dict(connection.execute("SELECT student, count(*) FROM history GROUP BY student").fetchall())
    assert kept == {"a_good": 1, "b_abs": 2, "c_zero": 2, "d_sum": 1} and not (tmp_path / "grades.db").exists()


@pytest.mark.slow  # end to end: eight commands, each starting its sandbox
def test_a_planted_suite_change_is_previewed_exactly_then_committed_and_both_results_are_kept(tmp_path):
    course = _course(tmp_path)
    folder = tiny_class(tmp_path / "class", STUDENTS, 1.7e9)
    _cli("grade", "tiny", folder, "--json", course=course)
    hidden = tmp_path / "solutions" / "tiny" / "hidden_checks.py"
    hidden.write_text(hidden.read_text().replace(*PLANTED))
    stored = _rows(tmp_path / "grades.db")

    again = _cli("grade", "tiny", folder, course=course)  # meets the changed suite: leaves the results, says so
    assert "regrade tiny --preview" in again.stderr and "4 unchanged hand-ins" in again.stderr, again.stderr
    assert _rows(tmp_path / "grades.db") == stored

    preview = _cli("regrade", "tiny", "--preview", "--json", course=course)
    moved = [json.loads(line) for line in preview.stdout.splitlines()]
    assert [m["student"] for m in moved] == ["b_abs"]
    assert (moved[0]["before"], moved[0]["after"]) == (1, 2)
    assert moved[0]["flipped"] == [{"check": "double.matches_reference", "before": "failed", "after": "passed"}]
    assert _rows(tmp_path / "grades.db") == stored  # a preview stores nothing
    # A TA who moved the due time is told that this shows in the exports, not here.
    assert "which every report and export applies to the stored results without a regrade" in preview.stderr
    table = _cli("regrade", "tiny", "--preview", course=course).stdout
    assert "b_abs" in table and "double.matches_reference failed→passed" in table and "a_good" not in table

    shutil.rmtree(folder)  # the store kept the hand-ins: the regrade needs no class folder
    committed = _cli("regrade", "tiny", "--json", course=course)
    assert [json.loads(line)["student"] for line in committed.stdout.splitlines()] == ["b_abs"]
    history = [json.loads(line) for line in _cli("history", "tiny", "b_abs", "--json", course=course)
               .stdout.splitlines()]
    assert [(h["score"], h["counts"]) for h in history] == [(1, False), (2, True)]
    assert history[0]["suite_version"] != history[1]["suite_version"]
    assert history[0]["sha256"] == history[1]["sha256"] and history[0]["hand_in"] == history[1]["hand_in"] == 1
    shown = _cli("history", "tiny", "b_abs", course=course).stdout
    assert "replaced by a later grading" in shown and "counts" in shown
    assert _cli("history", "tiny", "B_ABS", course=course).stdout == shown  # ids compare as everywhere: case folded
    grades = {r["student"]: r["total"] for r in csv.DictReader(_cli("export", "csv", course=course).stdout
                                                               .splitlines())}
    assert grades == {"a_good": "2", "b_abs": "2", "c_zero": "0", "d_sum": "2"}

    hidden.write_text(hidden.read_text().replace(PLANTED[1], PLANTED[0]))  # reverted: b_abs would go down again
    kept = _cli("regrade", "tiny", "--students", "B_ABS", "a_good", "--no-decrease", "--json", course=course)
    assert [(m["student"], m["before"], m["after"], m["kept_earlier"]) for m in map(json.loads, kept.stdout
                                                                                    .splitlines())] == \
        [("b_abs", 2, 1, True)]
    assert json.loads(kept.stdout)["flipped"] == [{"check": "double.matches_reference", "before": "passed",
                                                   "after": "failed"}]
    history = [json.loads(line) for line in _cli("history", "tiny", "b_abs", "--json", course=course)
               .stdout.splitlines()]
    assert [(h["score"], h["counts"]) for h in history] == [(1, False), (2, True), (1, False)]
    assert "held back" in history[2]["status"]
    report = tmp_path / "report"
    _cli("report", "--out", report, course=course)
    feedback = next((report / "feedback").glob("b_abs*")).read_text()
    assert "the earlier result is kept" in feedback


@pytest.mark.slow
def test_three_hand_ins_are_all_kept_and_the_policy_picks_which_one_counts(tmp_path):
    course = _course(tmp_path)
    for number, (body, when) in enumerate((("0 * x + x", 1.70e9), ("2 * x", 1.71e9), ("0 * x", 1.72e9)), start=1):
        tiny_class(tmp_path / f"round{number}", {"multi": body, **({"other": "2 * x"} if number == 1 else {})}, when)
        _cli("grade", "tiny", tmp_path / f"round{number}", course=course)
    history = [json.loads(line) for line in _cli("history", "tiny", "multi", "--json", course=course)
               .stdout.splitlines()]
    assert [(h["hand_in"], h["score"]) for h in history] == [(1, 0), (2, 2), (3, 0)]
    assert len({h["sha256"] for h in history}) == 3
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name,lms_id\nmulti,Multi Hand,11\nother,Other One,12\n")

    def exported(extra: str) -> dict[str, str]:
        _course(tmp_path, extra)
        out = tmp_path / "canvas.csv"
        _cli("export", "canvas", "--roster", roster, "--out", out, course=course)
        rows = list(csv.reader(out.read_text().splitlines()))
        return {row[1]: row[5] for row in rows[2:]}

    assert exported("") == {"11": "0", "12": "2"}  # last, the default
    assert exported("    submissions: {policy: last}\n") == {"11": "0", "12": "2"}
    assert exported("    submissions: {policy: best}\n") == {"11": "2", "12": "2"}
    assert exported("    submissions: {policy: last, max: 2}\n") == {"11": "2", "12": "2"}
    done = run_cli("export", "csv", "--course", course, "--db", tmp_path / "grades.db")
    assert "1 student handed in more than 2 times (multi)" in done.stderr
    shown = _cli("history", "tiny", "multi", course=course).stdout
    assert "over the limit of 2 hand-ins: not counted" in shown
    report = tmp_path / "report"
    _cli("report", "--out", report, course=course)
    feedback = next((report / "feedback").glob("multi*")).read_text()
    assert "Hand-in 2 of 3 counts" in feedback and "Hand-in 3 came after the limit of 2" in feedback


def test_grades_table_shows_the_hand_in_that_counts_as_the_exports_do(tmp_path):
    # Under `policy: best` the table showed the latest hand-in's total (0) while every export gave the best (2).
    course = _course(tmp_path, "    submissions: {policy: best}\n")
    for number, (body, when) in enumerate((("2 * x", 1.70e9), ("0 * x", 1.71e9)), start=1):
        done = _cli("grade", "tiny", tiny_class(tmp_path / f"round{number}", {"multi": body}, when), course=course)
    row = next(line for line in done.stdout.splitlines() if line.startswith("multi"))
    assert row.split()[1] == "2", done.stdout
    assert "the hand-in that counts under `submissions: best`" in done.stdout


def test_replay_runs_the_hand_in_that_counts_and_says_which(tmp_path):
    """Under `policy: best` replay ran the latest hand-in's file (0 * x) and said the stored verdict, the counted
    hand-in's pass, "reproduces" a fail. It replays the counted one, from the bytes the store kept of it."""
    course = _course(tmp_path, "    submissions: {policy: best}\n")
    folder = tmp_path / "class"
    for body, when in (("2 * x", 1.70e9), ("0 * x", 1.71e9)):  # the same file changed: hand-in 2 replaces it
        _cli("grade", "tiny", tiny_class(folder, {"multi": body}, when), course=course)
    done = _cli("replay", "multi", "double.matches_reference", course=course)
    assert "replaying hand-in 1 of multi's 2, the one that counts (policy: best)" in done.stderr, done.stderr
    assert "changed since" not in done.stderr and "passed" in done.stdout and "failed" not in done.stdout, done.stdout


def test_an_earlier_hand_in_graded_last_is_not_shown_as_the_one_that_counts(tmp_path):
    # Under the default policy (the last handed in counts) the table showed the result graded last.
    course = _course(tmp_path)
    _cli("grade", "tiny", tiny_class(tmp_path / "later", {"multi": "2 * x"}, 1.71e9), course=course)
    done = _cli("grade", "tiny", tiny_class(tmp_path / "earlier", {"multi": "0 * x"}, 1.70e9), course=course)
    row = next(line for line in done.stdout.splitlines() if line.startswith("multi"))
    exported = next(csv.DictReader(_cli("export", "csv", course=course).stdout.splitlines()))
    assert row.split()[1] == exported["total"] == "2", done.stdout


def test_a_mended_timestamp_makes_no_second_later_hand_in_of_the_same_file(tmp_path):
    """timestamp.txt unreadable: the file's own time stood in, and `grade` said to mend it and grade again. The
    mended time made a second hand-in of the same bytes, and the file's time (later) counted, late, for good.
    Now nothing is stored until the time can be read (found.held_for_their_time)."""
    course = _course(tmp_path, '    due: "2026-11-20T23:59:00+00:00"\n    late: {penalty_per_day: 0.5}\n')
    folder = tmp_path / "submitted" / "badts" / "tiny"
    folder.mkdir(parents=True)
    (folder / "tiny.py").write_text("def double(x):\n    return 2 * x\n")
    (folder / "timestamp.txt").write_text("yesterday-ish")
    first = run_cli("grade", "tiny", tmp_path / "submitted", "--course", course, "--db", course.parent / "grades.db")
    assert first.returncode != 0 and "not graded, nothing stored: badts: timestamp.txt could not be read" in \
        first.stderr and "fix timestamp.txt and grade again" in first.stderr, first.stderr
    (folder / "timestamp.txt").write_text("2026-11-20 21:00:00.000000 UTC")
    _cli("grade", "tiny", tmp_path / "submitted", course=course)
    history = [json.loads(line) for line in _cli("history", "tiny", "badts", "--json", course=course)
               .stdout.splitlines()]
    assert {h["hand_in"] for h in history} == {1}, history
    exported = next(csv.DictReader(_cli("export", "csv", course=course).stdout.splitlines()))
    assert exported["total"] == "2", exported


def test_a_hand_in_with_nothing_to_grade_is_regraded_as_nothing(tmp_path):
    """A folder holding only a PDF: no bytes kept, none to find. Every regrade said it could not regrade it and
    exited 1, and `grade` pointed at `regrade` for it ever after."""
    course = _course(tmp_path)
    for student in ("pdfonly", "a_good"):
        (tmp_path / "submitted" / student / "tiny").mkdir(parents=True)
    (tmp_path / "submitted" / "pdfonly" / "tiny" / "tiny.pdf").write_bytes(b"%PDF-1.4\n")
    (tmp_path / "submitted" / "a_good" / "tiny" / "tiny.py").write_text("def double(x):\n    return 2 * x\n")
    _cli("grade", "tiny", tmp_path / "submitted", course=course)
    hidden = tmp_path / "solutions" / "tiny" / "hidden_checks.py"
    hidden.write_text(hidden.read_text().replace(*PLANTED))
    done = _cli("regrade", "tiny", course=course)  # _cli: exit code 0
    assert "not regraded" not in done.stderr, done.stderr
    again = _cli("grade", "tiny", tmp_path / "submitted", course=course)
    assert "2 submissions already graded with this suite and unchanged" in again.stderr, again.stderr
    rows = {r["student"]: r for r in csv.DictReader(_cli("export", "csv", course=course).stdout.splitlines())}
    assert rows["pdfonly"]["total"] == "0" and "nothing to grade" in rows["pdfonly"]["problem"], rows["pdfonly"]


def test_a_hand_in_with_nothing_to_grade_uses_up_no_hand_in_of_the_limit(tmp_path):
    """An nbgrader folder graded while it held only timestamp.txt, then again once the notebook was put in under the
    same timestamp: with `max: 1`, the empty one had counted and the real one, over the limit, had not (0 for a
    100 hand-in). An empty hand-in of its own time, before a real one, counts toward no limit either."""
    course = _course(tmp_path, "    submissions: {policy: best, max: 1}\n")
    folders = {student: tmp_path / "submitted" / student / "tiny" for student in ("same_time", "earlier")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    (folders["same_time"] / "timestamp.txt").write_text("2026-11-20 10:00:00 UTC")
    (folders["earlier"] / "timestamp.txt").write_text("2026-11-19 10:00:00 UTC")
    _cli("grade", "tiny", tmp_path / "submitted", course=course)
    (folders["earlier"] / "timestamp.txt").write_text("2026-11-20 10:00:00 UTC")
    for folder in folders.values():
        (folder / "tiny.py").write_text("def double(x):\n    return 2 * x\n")
    _cli("grade", "tiny", tmp_path / "submitted", course=course)
    rows = {r["student"]: r for r in csv.DictReader(_cli("export", "csv", course=course).stdout.splitlines())}
    assert rows["same_time"]["total"] == "2" and rows["earlier"]["total"] == "2", rows
    assert "over" not in _cli("history", "tiny", "earlier", course=course).stdout


def test_the_same_download_fetched_again_is_no_later_hand_in(tmp_path):
    """A class folder copied or downloaded again gives its files new times, the only times a flat folder has: the
    same bytes were graded again as a second, later hand-in, late for the whole class, and an attempt used up."""
    course = _course(tmp_path, '    due: "2026-11-20T23:59:00+00:00"\n    late: {penalty_per_day: 0.5}\n')
    _cli("grade", "tiny", tiny_class(tmp_path / "class", {"ann": "2 * x"}, 1795200000), course=course)  # on time
    again = _cli("grade", "tiny", tiny_class(tmp_path / "class", {"ann": "2 * x"}, 1795400000), course=course)  # late
    assert "already graded" in again.stderr, again.stderr
    history = [json.loads(line) for line in _cli("history", "tiny", "ann", "--json", course=course).stdout.splitlines()]
    assert len(history) == 1 and history[0]["hand_in"] == 1, history
    # Graded again all the same (--force), it joins the earliest hand-in of those bytes.
    _cli("grade", "tiny", tmp_path / "class", "--force", course=course)
    history = [json.loads(line) for line in _cli("history", "tiny", "ann", "--json", course=course).stdout.splitlines()]
    assert {h["hand_in"] for h in history} == {1} and len(history) == 2, history
    exported = next(csv.DictReader(_cli("export", "csv", course=course).stdout.splitlines()))
    assert exported["total"] == "2" and exported["penalty"] == "0", exported


def _nbgrader(root: Path, student: str, body: str, stamp: str) -> Path:
    """An nbgrader exchange folder of the tiny assignment holding one hand-in, at the time its timestamp.txt states."""
    folder = root / "submitted" / student / "tiny"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.py").write_text(f"def double(x):\n    return {body}\n")
    (folder / "timestamp.txt").write_text(stamp)
    return root / "submitted"


def test_a_file_handed_in_again_after_another_is_a_hand_in_of_its_own_and_an_earlier_copy_gives_its_time(tmp_path):
    """Joining same-bytes hand-ins must not swallow a real later one: a student who handed in A, then B, then A
    again at times stated for them is graded on the last A (the B in between had counted). And a copy with later
    file times graded first, then the class with its first times, gives the hand-in the earlier time."""
    course = _course(tmp_path, '    due: "2026-11-20T23:59:00+00:00"\n    late: {penalty_per_day: 0.5}\n')
    for number, (body, day) in enumerate((("2 * x", 10), ("3 * x", 11), ("2 * x", 12))):
        _cli("grade", "tiny", _nbgrader(tmp_path / f"n{number}", "ann", body, f"2026-11-{day} 10:00:00.000000 UTC"),
             course=course)
    exported = next(csv.DictReader(_cli("export", "csv", course=course).stdout.splitlines()))
    assert exported["total"] == "2", exported  # the last hand-in, A again (B scored 0 here)
    history = [json.loads(line) for line in _cli("history", "tiny", "ann", "--json", course=course).stdout.splitlines()]
    assert sorted({h["hand_in"] for h in history}) == [1, 2, 3], history

    late = tmp_path / "late"
    late.mkdir()
    _cli("grade", "tiny", tiny_class(tmp_path / "copy", {"bob": "2 * x"}, 1795400000), course=course)  # copied late
    _cli("grade", "tiny", tiny_class(tmp_path / "original", {"bob": "2 * x"}, 1795200000), course=course)
    rows = {r["student"]: r for r in csv.DictReader(_cli("export", "csv", course=course).stdout.splitlines())}
    assert rows["bob"]["penalty"] == "0", rows["bob"]
    history = [json.loads(line) for line in _cli("history", "tiny", "bob", "--json", course=course).stdout.splitlines()]
    assert {h["hand_in"] for h in history} == {1}, history


def _canvas_file(folder: Path, upload: int, body: str, when: float) -> Path:
    """A Canvas download of the tiny assignment holding one upload of ann (Canvas user 101), dated `when`: Canvas's
    names carry the upload's own id, and the file's time is the only time such a download has."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"ann_101_{upload}_tiny.py"
    path.write_text(f"def double(x):\n    return {body}\n")
    os.utime(path, (when, when))
    return folder


def _handins(course: Path, student: str) -> list[dict]:
    return [json.loads(line) for line in _cli("history", "tiny", student, "--json", course=course).stdout.splitlines()]


def _total(course: Path, student: str) -> str:
    rows = {r["student"]: r for r in csv.DictReader(_cli("export", "csv", course=course).stdout.splitlines())}
    return rows[student]["total"]


@pytest.mark.parametrize("layout", ["flat", "canvas"])
def test_an_earlier_hand_in_found_again_unchanged_is_skipped_and_said(tmp_path, layout):
    """Download 1, then download 2 (a later upload), then download 1 again, the same bytes at the same time: it was
    graded again, its 2 of 2 shown as if it counted, and its result stored as the student's latest."""
    course = _course(tmp_path)
    student = "ann" if layout == "flat" else "ann_101"

    def download(folder: Path, body: str, when: float) -> Path:
        if layout == "flat":
            return tiny_class(folder, {"ann": body}, when)
        return _canvas_file(folder, 1001 if body == "2 * x" else 2001, body, when)
    _cli("grade", "tiny", download(tmp_path / "dl1", "2 * x", 1795100000), course=course)
    _cli("grade", "tiny", download(tmp_path / "dl2", "3 * x", 1795150000), course=course)  # B scores 0
    graded = _handins(course, student)
    again = _cli("grade", "tiny", tmp_path / "dl1", course=course)
    assert f"{student}: " in again.stderr and "is hand-in 1 of 2 again, already graded with this suite: not graded " \
        "again, and hand-in 2 of 2 still counts (policy: last)" in again.stderr, again.stderr
    assert "graded 0 submissions" in again.stderr and "full marks 1" not in again.stderr, again.stderr
    assert _handins(course, student) == graded and _total(course, student) == "0"


def test_an_old_canvas_download_copied_is_that_upload_again_and_a_real_resubmission_counts(tmp_path):
    """A copy of an older Canvas download (cp -r: new file times, the only times it has) had been stored as a new,
    later hand-in that counted under `policy: last`, and the export went from B's total to A's without a word. The
    same Canvas file name is the same upload; a student who hands in A again makes a new upload, which counts."""
    course = _course(tmp_path)
    _cli("grade", "tiny", _canvas_file(tmp_path / "dl1", 1001, "2 * x", 1795100000), course=course)
    _cli("grade", "tiny", _canvas_file(tmp_path / "dl2", 2001, "3 * x", 1795150000), course=course)
    graded = _handins(course, "ann_101")
    copied = _cli("grade", "tiny", _canvas_file(tmp_path / "copy", 1001, "2 * x", 1795200000), course=course)
    assert "ann_101: ann_101_1001_tiny.py is hand-in 1 of 2 again (the same Canvas upload, downloaded again: only " \
           "its file time is newer), already graded" in copied.stderr, copied.stderr
    assert _handins(course, "ann_101") == graded and _total(course, "ann_101") == "0"
    # Handed in again for real: a new upload of the same bytes, a new hand-in, which counts.
    _cli("grade", "tiny", _canvas_file(tmp_path / "dl3", 3001, "2 * x", 1795250000), course=course)
    assert sorted({h["hand_in"] for h in _handins(course, "ann_101")}) == [1, 2, 3]
    assert _total(course, "ann_101") == "2"


def _file_timed(layout: str, folder: Path, students: dict[str, str], when: float) -> tuple[Path, dict[str, str]]:
    """A download whose only times are its files' (`when`), in `layout`: a flat folder, Moodle's folders, or
    Canvas's names (an upload id per body, as Canvas gives each upload its own); and student -> the id stored."""
    ids = {}
    folder.mkdir(parents=True, exist_ok=True)
    for number, (student, body) in enumerate(sorted(students.items()), start=101):
        if layout == "flat":
            tiny_class(folder, {student: body}, when)
            ids[student] = student
        elif layout == "moodle":
            ids[student] = f"{student.title()} Lee_{number}_assignsubmission_file_"
            tiny_class(folder / ids[student], {"tiny": body}, when)
        else:
            ids[student] = f"{student}_{number}"
            path = folder / f"{ids[student]}_{1001 if body == '2 * x' else 2001}_tiny.py"
            path.write_text(f"def double(x):\n    return {body}\n")
            os.utime(path, (when, when))
    return folder, ids


@pytest.mark.parametrize("layout", ["flat", "moodle", "canvas"])
def test_a_copy_of_an_old_download_timed_by_its_files_is_that_hand_in_again_even_with_force(tmp_path, layout):
    """Hand-ins A (full marks), then B: a copy of A's folder (cp -r: new file times, the only times these layouts
    have) had been stored as hand-in 3 of 3, which counted (policy: last) and, late by its copy time, lost the
    student's total; `--force` made it so in a Canvas download too. It is hand-in 1 found again, said once."""
    course = _course(tmp_path)
    dl1, ids = _file_timed(layout, tmp_path / "dl1", {"ann": "2 * x", "bob": "2 * x"}, 1795100000)
    _cli("grade", "tiny", dl1, course=course)
    _cli("grade", "tiny", _file_timed(layout, tmp_path / "dl2", {"ann": "3 * x", "bob": "3 * x"}, 1795150000)[0],
         course=course)  # B scores 0
    graded = _handins(course, ids["ann"])
    copy = tmp_path / "copy"
    shutil.copytree(dl1, copy, copy_function=shutil.copy)  # as `cp -r`: the files take the time of the copy
    copied = _cli("grade", "tiny", copy, course=course)
    assert "is hand-in 1 of 2 again" in copied.stderr and "graded 0 submissions" in copied.stderr, copied.stderr
    if layout != "canvas":  # a Canvas copy is known by its upload ids, not by its bytes alone
        assert "is hand-in 1 of 2 again (the same bytes; only its file time is newer)" in copied.stderr
        assert copied.stderr.count("If a student really handed the same code in again") == 1, copied.stderr
    assert _handins(course, ids["ann"]) == graded and _total(course, ids["ann"]) == "0"
    _cli("grade", "tiny", copy, "--force", course=course)  # graded again: hand-in 1's later result, not hand-in 3
    assert sorted({h["hand_in"] for h in _handins(course, ids["ann"])}) == [1, 2]
    assert _total(course, ids["ann"]) == "0" and _total(course, ids["bob"]) == "0"


def test_a_students_last_hand_in_found_again_is_no_news(tmp_path):
    """A copy graded with --force joins hand-in 1; the original graded again had said 'ann.py is hand-in 1 of 1
    again ... it still counts', as if an earlier hand-in were found again."""
    course = _course(tmp_path)
    _cli("grade", "tiny", tiny_class(tmp_path / "f", {"ann": "2 * x"}, 1795100000), course=course)
    _cli("grade", "tiny", tiny_class(tmp_path / "copy", {"ann": "2 * x"}, 1795200000), "--force", course=course)
    again = _cli("grade", "tiny", tmp_path / "f", course=course)
    assert "already graded with this suite and unchanged: skipped" in again.stderr, again.stderr
    assert " again" not in again.stderr.replace("grade again", ""), again.stderr


def test_a_whole_old_class_found_again_is_said_in_a_few_lines(tmp_path):
    """An old download of a whole class graded again had printed one long line per student: the first ten are
    said, then one line with how many more and where to see each."""
    course = _course(tmp_path)
    names = [f"s{number:02}" for number in range(13)]
    _cli("grade", "tiny", tiny_class(tmp_path / "week", dict.fromkeys(names, "2 * x"), 1795100000), course=course)
    _cli("grade", "tiny", tiny_class(tmp_path / "resub", dict.fromkeys(names, "3 * x"), 1795150000), course=course)
    again = _cli("grade", "tiny", tmp_path / "week", course=course)
    assert again.stderr.count("is hand-in 1 of 2 again") == 10, again.stderr
    assert "... and 3 more files are earlier hand-ins found again (s10, s11, s12): not graded again, and the " \
           "hand-in that counts is unchanged. `autograder history tiny STUDENT` lists" in again.stderr, again.stderr


def test_grade_warns_when_a_canvas_user_stored_under_one_id_comes_under_another(tmp_path):
    """Canvas's login follows the student's name: a name changed between two downloads stores one user under two
    ids, which `export canvas` cannot tell apart; `grade` said nothing as it stored the second."""
    course = _course(tmp_path)
    _cli("grade", "tiny", _canvas_file(tmp_path / "dl1", 1001, "2 * x", 1795100000), course=course)
    renamed = tmp_path / "dl2"
    renamed.mkdir()
    (renamed / "annie_101_2001_tiny.py").write_text("def double(x):\n    return 2 * x\n")
    done = _cli("grade", "tiny", renamed, course=course)
    assert "warning: annie_101, found now, and ann_101, stored before, are one Canvas user, 101" in done.stderr, \
        done.stderr
    assert "`autograder retract tiny STUDENT` the one stored by mistake" in done.stderr


@pytest.mark.parametrize("entry, message", [
    ("    submissions: {policy: first}\n", "submissions.policy: expected one of last, best, last_on_time"),
    ("    submissions: {max: 0}\n", "submissions.max: expected a whole number of hand-ins, at least 1"),
    ("    submissions: {missing: nil}\n", "submissions.missing: expected one of blank, zero"),
    ("    submissions: {polcy: best}\n", "submissions.polcy: unknown key"),
])
def test_a_wrong_submissions_setting_is_an_error_naming_the_key(tmp_path, entry, message):
    # Read in this process: how the command line shows a CourseError is test_course's.
    with pytest.raises(CourseError, match=re.escape(message)):
        load_course(_course(tmp_path, entry))


def _handed_in(student: str, got: float, at: str, order: int) -> Attempt:
    tests = (CheckResult("double.small", "double", "public", "passed" if got else "failed", got, 10.0),)
    result = SubmissionResult(student=student, assignment="tiny", file=f"{student}.py", sha256=f"{order:064d}",
                              suite_version="v", seed=1, sandbox="bwrap", tests=tests, graded_at=at,
                              submitted_at=at, submitted_at_source="nbgrader timestamp")
    return Attempt(order, (Entry(result, order),))


@pytest.mark.parametrize("penalty, policy, counted", [
    (0.5, "last", 3), (0.5, "best", 1), (0.5, "last_on_time", 1),
    (0.1, "best", 2),  # 10 points a day late, less 10%, beat 6 on time
])
def test_best_and_last_on_time_are_judged_after_the_late_rule(penalty, policy, counted):
    due = datetime.datetime(2026, 11, 20, 12, tzinfo=datetime.UTC)
    rule = LateRule(due=due, penalty_per_day=penalty)
    mine = [_handed_in("s", got, (due + datetime.timedelta(hours=hours)).isoformat(), n)
            for n, (got, hours) in enumerate(((6.0, -1), (10.0, 5), (4.0, 30)), start=1)]
    choice = choose(mine, SubmissionPolicy(policy), rule)
    assert choice.counted.number == counted
    assert choice.reason.startswith(f"Hand-in {counted} of 3 counts") and f"(policy: {policy})" in choice.reason


def test_an_old_database_opens_with_its_results_as_the_first_hand_ins(tmp_path):
    with Store(tmp_path / "grades.db") as store:
        store.save(_handed_in("s", 5.0, "2026-11-20T00:00:00+00:00", 1).first)
    with sqlite3.connect(tmp_path / "grades.db") as connection:  # as a database written before the history was
        connection.execute("DROP TABLE history")
        connection.execute("DROP TABLE handins")
    with Store(tmp_path / "grades.db") as store:
        found = attempts(store.history("tiny"))
        store.save(_handed_in("s", 10.0, "2026-11-21T00:00:00+00:00", 2).first)  # a new hand-in replaces the row
        both = attempts(store.history("tiny"))
    assert [(a.number, a.current.result.score) for a in found["s"]] == [(1, 5.0)]
    assert [(a.number, a.current.result.score) for a in both["s"]] == [(1, 5.0), (2, 10.0)]  # the old one kept


def test_a_result_rescored_under_the_same_grading_time_counts_and_the_same_result_is_kept_once(tmp_path):
    first = _handed_in("s", 4.0, "2026-11-20T00:00:00+00:00", 1).first
    rescored = dataclasses.replace(first, tests=tuple(dataclasses.replace(t, status="passed", score=t.max_score)
                                                      for t in first.tests), score=None)
    with Store(tmp_path / "grades.db") as store:
        store.save(first)
        store.save(first)  # the same result again: not a second row
        store.save(rescored)  # same hand-in, same graded_at, new checks: the later result of that hand-in
        mine = attempts(store.history("tiny"))["s"]
    assert [[e.result.score for e in a.entries] for a in mine] == [[4.0, 10.0]]
    counted, _ = counted_results({"s": mine}, SubmissionPolicy(), None)
    assert counted[0].score == 10.0


def test_a_file_put_back_under_the_same_timestamp_is_the_last_hand_in(tmp_path):
    """A TA copies the wrong file into a student's folder, grades, then puts the student's file back (the folder's
    timestamp untouched): the file graded last is the one in the folder, and counts."""
    own = _handed_in("s", 10.0, "2026-11-20T00:00:00+00:00", 1).first
    wrong = dataclasses.replace(own, sha256="f" * 64, tests=(dataclasses.replace(own.tests[0], status="failed",
                                                                                 score=0.0),), score=None)
    with Store(tmp_path / "grades.db") as store:
        for result in (own, wrong, dataclasses.replace(own, graded_at="2026-11-21T00:00:00+00:00")):
            store.save(result)
        mine = attempts(store.history("tiny"))["s"]
    assert [a.sha256 for a in mine] == [wrong.sha256, own.sha256]
    counted, _ = counted_results({"s": mine}, SubmissionPolicy(), None)
    assert counted[0].score == 10.0


def test_a_damaged_history_row_costs_only_its_student(tmp_path):
    """JSON that no longer reads: the same result in `submissions` stands in, or else that hand-in becomes an
    internal error naming how to grade it again; every other result reads as stored."""
    first, second, other = (_handed_in(*handed).entries[0].result for handed in (
        ("ann", 4.0, "2026-11-01T09:00:00", 1), ("ann", 10.0, "2026-11-02T09:00:00", 2),
        ("bo", 10.0, "2026-11-01T10:00:00", 3)))
    with Store(tmp_path / "g.db") as store:
        for result in (first, second, other):
            store.save(result)
    with sqlite3.connect(tmp_path / "g.db") as raw:
        raw.execute("UPDATE history SET result = '{' WHERE student = 'bo' OR sha256 = ?", (first.sha256,))
    with Store(tmp_path / "g.db") as store:
        kept = {(e.result.student, e.result.sha256): e.result for e in store.history("tiny")}
        assert kept["bo", other.sha256] == store.result("tiny", "bo")  # the submissions table's copy stands in
    damaged = kept["ann", first.sha256]
    assert damaged.score == 0 and "regrade tiny --students ann" in damaged.internal_error
    assert kept["ann", second.sha256].score == 10.0



def test_a_regrade_tells_the_student_of_their_file_by_the_name_they_handed_it_in_under(tmp_path):
    """A flat file that fails to load was told "not loaded: s004.py … Run `python s004.py`"; regraded from the
    bytes the store kept, it was told of `tiny.py`, a file it never had, while the CSV's file column still said
    s004.py. The stored bytes are graded under the hand-in's own name."""
    course = _course(tmp_path)
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "s004.py").write_text("raise ValueError('top-level demo')\n\ndef double(x):\n    return 2 * x\n")
    _cli("grade", "tiny", folder, course=course)
    first = next(csv.DictReader(_cli("export", "csv", course=course).stdout.splitlines()))
    assert "s004.py" in first["problem"], first
    shutil.rmtree(folder)  # the store kept the bytes: the regrade writes them out itself
    _cli("regrade", "tiny", course=course)
    history = [json.loads(line) for line in _cli("history", "tiny", "s004", "--json", course=course)
               .stdout.splitlines()]
    assert len(history) == 2, history  # graded again, not left as it was
    again = next(csv.DictReader(_cli("export", "csv", course=course).stdout.splitlines()))
    assert again["problem"] == first["problem"] and "tiny.py" not in again["problem"], again["problem"]
    assert again["file"] == first["file"]


@pytest.mark.slow
def test_results_kept_by_no_decrease_are_named_as_such_in_exports_and_the_report(tmp_path):
    """After `regrade --no-decrease` on purpose, every export still said the kept results were graded under an
    earlier suite and that `autograder regrade` applies it; the report's table mixed 2 / 2 with 0 / 3 and its header
    said "maximum 2 points". The kept results are named as kept, and the report says why maximums differ."""
    course = _course(tmp_path)
    hidden = tmp_path / "solutions" / "tiny" / "hidden_checks.py"
    hidden.write_text(hidden.read_text().replace(*PLANTED))  # b_abs passes every check: 2 of 2
    _cli("grade", "tiny", tiny_class(tmp_path / "class", STUDENTS, 1.7e9), course=course)
    hidden.write_text(hidden.read_text().replace(PLANTED[1], PLANTED[0]))  # b_abs would fall to 1, now of 3:
    course.write_text(course.read_text().replace("double.matches_reference: 1", "double.matches_reference: 2"))
    _cli("regrade", "tiny", "--no-decrease", course=course)
    exported = _cli("export", "csv", course=course)
    rows = {r["student"]: (r["total"], r["max"]) for r in csv.DictReader(exported.stdout.splitlines())}
    assert rows["b_abs"] == ("2", "2") and rows["a_good"] == ("3", "3"), rows
    assert "1 result of 4 (b_abs) is kept from an earlier suite by `regrade --no-decrease`, since the current suite " \
           "scored them lower, and written out as graded then, out of 2 where the current suite is out of 3; nothing " \
           "to do unless the lower scores are to count" in exported.stderr, exported.stderr
    assert "`autograder regrade` applies it" not in exported.stderr  # the regrade was done, on purpose
    (tmp_path / "roster.csv").write_text("student,lms_id\n" + "".join(f"{s},{n}\n" for n, s in enumerate(STUDENTS)))
    canvas = _cli("export", "canvas", "--roster", tmp_path / "roster.csv", "--out", tmp_path / "c.csv", course=course)
    assert "1 total written is out of another maximum than the column's 3 (b_abs: 2 of 2), and the LMS takes them " \
           "as points of 3; 1 of them kept from an earlier suite by `regrade --no-decrease`, on purpose" \
           in canvas.stderr and "grades them under" not in canvas.stderr, canvas.stderr
    report = tmp_path / "report"
    _cli("report", "--out", report, course=course)
    page = (report / "index.html").read_text()
    assert "4 submissions · maximum 3 points (1 result kept from an earlier suite by regrade --no-decrease is out " \
           "of 2 (the current suite scored them lower))" in page, page[:2000]
    assert "2 / 2 (kept from an earlier suite by regrade --no-decrease)" in page
    assert "3 / 3 (" not in page


def test_two_hand_ins_with_nothing_read_are_no_evidence_of_one_file():
    """A Moodle hand-in of a PDF alone stores no hash: a later, different PDF-only hand-in had been taken for it
    found again ("" == ""), said to be "the same bytes", and left out, an earlier hand-in still counting."""
    from autograder.grading.history import found_again
    assert found_again([("", {"answers.pdf"}), ("1fad", {"attention.py"})], "", {"report.pdf"}) is None
    assert found_again([("1fad", {"attention.py"}), ("a3bb", {"attention.py"})], "1fad", {"attention.py"}) == 0
