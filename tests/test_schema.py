"""Issue 23: one schema for a result. A field declared once reaches the JSON, the store, grades.csv and results.json.

A result class with more fields (a subclass, as a new field would be added) goes
through the same functions the grader's results go through; none of them names
its fields, so each output carrying them shows that output is made from the schema.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import shlex
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.grading.results import CheckResult, SubmissionResult, flags
from autograder.grading.schema import described, fields_of, from_plain, to_plain
from autograder.grading.store import Store, StoreError
from autograder.outputs import grades_csv, gradescope, terminal

from conftest import PLAIN, ROOT, repository_env

# Gradescope's documented top-level keys (https://gradescope-autograders.readthedocs.io/en/latest/specs/).
GRADESCOPE_KEYS = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
                   "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
GRADESCOPE_TEST_KEYS = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
                        "tags", "visibility", "extra_data"}


@dataclass(frozen=True)
class ReviewedCheck(CheckResult):
    reviewer: str = described("who looked at this check by hand", "")


@dataclass(frozen=True)
class LabResult(SubmissionResult):
    tests: tuple[ReviewedCheck, ...] = described("one verdict per check")
    lab_group: int = described("the student's lab group", 0)
    regraded: bool = described("whether a TA asked for a regrade", False)
    weight: float | None = described("the assignment's weight in the course, if set", None)
    tags: tuple[str, ...] = described("labels a TA gave the submission", ())


def _lab_result(student: str = "ann") -> LabResult:
    checks = (ReviewedCheck("f.a", "f", "public", "passed", 2.0, 2.0, reviewer="ta-bo"),
              ReviewedCheck("f.b", "f", "hidden", "failed", 0.0, 1.0, "wrong", reviewer="ta-cy"))
    return LabResult(student, "w01", f"{student}.py", "ab" * 32, "v1", 7, "bwrap", checks, graded_at="2026-12-01T10:00",
                     printed="hello", lab_group=4, regraded=True, weight=0.25, tags=("late-ok", "viva"))


def test_the_new_fields_reach_the_json_and_come_back_whole():
    result = _lab_result()
    plain = json.loads(json.dumps(result.to_json()))
    assert (plain["lab_group"], plain["regraded"], plain["weight"], plain["tags"]) == \
        (4, True, 0.25, ["late-ok", "viva"])
    assert [t["reviewer"] for t in plain["tests"]] == ["ta-bo", "ta-cy"]
    assert from_plain(LabResult, plain) == result
    assert from_plain(LabResult, _before_the_renames(plain)) == result  # as a worker of the last release sends it
    with pytest.raises(ValueError, match=r"result\.regraded: expected bool, got int"):
        from_plain(LabResult, {**plain, "regraded": 1})
    with pytest.raises(ValueError, match=r"result\.lab_group: expected int, got bool"):
        from_plain(LabResult, {**plain, "lab_group": True})
    with pytest.raises(ValueError, match=r"result\.tests\[1\]\.reviewer: expected str"):
        from_plain(LabResult, {**plain, "tests": [plain["tests"][0], {**plain["tests"][1], "reviewer": None}]})


def _before_the_renames(plain: dict) -> dict:
    """`plain` as the release before `message` and `printed` wrote it: both were `output`."""
    older = {name: value for name, value in plain.items() if name != "printed"}
    older["output"] = plain["printed"]
    older["tests"] = [{("output" if name == "message" else name): value for name, value in test.items()}
                      for test in plain["tests"]]
    return older


def test_the_new_fields_are_columns_of_a_real_database(tmp_path):
    db = tmp_path / "grades.db"
    with Store(db) as store:  # a database of the fields as they were
        store.save(SubmissionResult("old", "w01", "old.py", "0" * 64, "v1", 1, "bwrap",
                                    (CheckResult("f.a", "f", "public", "passed", 2.0, 2.0),)))
    result = _lab_result()
    with Store(db, kind=LabResult) as store:  # opened with the new fields: their columns are added
        store.save(result)
    with Store(db, kind=LabResult) as store:
        back = {r.student: r for r in store.results("w01")}
    assert back["ann"] == result
    assert (back["old"].lab_group, back["old"].regraded, back["old"].weight, back["old"].tests[0].reviewer) == \
        (0, False, None, "")  # a row stored before the fields existed reads their defaults
    with sqlite3.connect(db) as raw:
        assert raw.execute("SELECT lab_group, regraded, weight, tags FROM submissions WHERE student='ann'").fetchone() \
            == (4, 1, 0.25, '["late-ok", "viva"]')
        assert raw.execute("SELECT reviewer FROM checks ORDER BY position").fetchall()[-2:] == [("ta-bo",), ("ta-cy",)]


def test_the_new_fields_are_columns_of_grades_csv():
    stream = io.StringIO()
    grades_csv.write_csv([_lab_result()], stream)
    header = stream.getvalue().splitlines()[0].split(",")
    row = next(csv.DictReader(io.StringIO(stream.getvalue())))
    assert (row["lab_group"], row["regraded"], row["weight"], row["tags"]) == ("4", "1", "0.250", "late-ok; viva")
    assert header[:4] == ["student", "total", "max", "f()"] and row["total"] == "2" and row["f()"] == "2"
    assert len(header) == len(row) == len(set(header))  # header and cells from one list of columns


def test_students_are_listed_as_a_roster_lists_them_whatever_their_case(tmp_path):
    """The store, grades.csv and the terminal summary list "adam" before "Zoe", as a roster and an LMS do."""
    ids = ["Zoe", "adam", "Bea", "carl"]
    with Store(tmp_path / "grades.db", kind=LabResult) as store:
        for student in ids:
            store.save(_lab_result(student))
        stored = [r.student for r in store.results("w01")]
    stream = io.StringIO()
    grades_csv.write_csv([_lab_result(s) for s in ids], stream)
    summary = terminal.format_summary([terminal.summary_row(_lab_result(s), None) for s in ids])
    listed = [line.split()[0] for line in summary.splitlines()[1:5]]
    assert stored == [row["student"] for row in csv.DictReader(io.StringIO(stream.getvalue()))] == listed == \
        ["adam", "Bea", "carl", "Zoe"]


def test_the_new_fields_reach_results_json_in_extra_data():
    document = gradescope.gradescope_results(_lab_result())
    assert set(document) <= GRADESCOPE_KEYS and all(set(t) <= GRADESCOPE_TEST_KEYS for t in document["tests"])
    extra = document["extra_data"]
    assert (extra["lab_group"], extra["regraded"], extra["weight"], extra["tags"]) == \
        (4, True, 0.25, ["late-ok", "viva"])
    assert [t["extra_data"]["reviewer"] for t in document["tests"]] == ["ta-bo", "ta-cy"]
    assert document["score"] == extra["raw_score"] == 2.0 and extra["max_score"] == 3.0
    json.dumps(document)  # plain data throughout


def test_the_stored_score_is_the_score_read_back(tmp_path):
    """The score is set once, when a result is built, and the store gives back what it holds."""
    db = tmp_path / "grades.db"
    with Store(db) as store:
        store.save(_lab_result())
    with sqlite3.connect(db) as raw:  # a TA's correction, made in SQL
        raw.execute("UPDATE submissions SET score = 2.5 WHERE student = 'ann'")
    with Store(db) as store:
        assert store.result("w01", "ann").score == 2.5


def test_every_field_is_described_and_typed():
    for kind in (CheckResult, SubmissionResult):
        assert all(field.doc for field in fields_of(kind))

    @dataclass(frozen=True)
    class Undescribed(CheckResult):
        extra: str = ""

    @dataclass(frozen=True)
    class Unsupported(CheckResult):
        extra: dict = described("anything", None)

    with pytest.raises(TypeError, match="Undescribed.extra has no description"):
        fields_of(Undescribed)
    with pytest.raises(TypeError, match="Unsupported.extra: the result schema cannot hold"):
        fields_of(Unsupported)
    assert to_plain(CheckResult("f.a", "f", "public", "passed", 1.0, 1.0))["misconception"] is None


# The tables as the release before this schema wrote them, by hand: a database from then must still open.
OLD_TABLES = """
CREATE TABLE submissions (
    id INTEGER PRIMARY KEY, assignment TEXT NOT NULL, student TEXT NOT NULL, file TEXT NOT NULL,
    sha256 TEXT NOT NULL, suite_version TEXT NOT NULL, seed INTEGER NOT NULL, sandbox TEXT NOT NULL,
    score REAL NOT NULL, max_score REAL NOT NULL, problem TEXT NOT NULL, notes TEXT NOT NULL, output TEXT NOT NULL,
    killed_processes INTEGER NOT NULL, seconds REAL NOT NULL, graded_at TEXT NOT NULL,
    internal_error TEXT NOT NULL DEFAULT '', submitted_at TEXT NOT NULL DEFAULT '',
    submitted_at_source TEXT NOT NULL DEFAULT '', UNIQUE (assignment, student));
CREATE TABLE checks (
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE, position INTEGER NOT NULL,
    name TEXT NOT NULL, function TEXT NOT NULL, visibility TEXT NOT NULL, status TEXT NOT NULL, score REAL NOT NULL,
    max_score REAL NOT NULL, output TEXT NOT NULL, hint TEXT NOT NULL, misconception TEXT, seconds REAL NOT NULL,
    explanation TEXT NOT NULL DEFAULT '', example TEXT NOT NULL DEFAULT '', stopped TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (submission_id, name));
INSERT INTO submissions VALUES (1, 'w01', 'ann', 'ann.py', 'aa', 'v1', 3, 'bwrap', 1.0, 2.0, '', '["a note"]',
    'printed by ann', 0, 1.5, '2026-11-01T09:00:00', '', '', '');
INSERT INTO submissions VALUES (2, 'w01', 'bo', 'bo.py', 'bb', 'v1', 4, 'fallback', 0.0, 2.0, '', '[]', '', 2, 0.5,
    '2026-11-01T09:01:00', '', '2026-10-31T23:00:00+00:00', 'file time (unreliable)');
INSERT INTO submissions VALUES (3, 'w01', 'cat', 'cat.py', 'cc', 'v1', 5, 'bwrap', 0.0, 2.0,
    'not loaded: cat.py, line 3: invalid syntax', '[]', '', 0, 0.5, '2026-11-01T09:02:00', '', '', '');
INSERT INTO checks VALUES (1, 0, 'f.a', 'f', 'public', 'passed', 1.0, 1.0, 'well done', '', NULL, 0.1, '', '', '');
INSERT INTO checks VALUES (1, 1, 'f.b', 'f', 'hidden', 'failed', 0.0, 1.0, 'wrong sign', 'look at f', 'sign', 0.1,
    'the sign matters', '{}', '');
INSERT INTO checks VALUES (2, 0, 'f.a', 'f', 'public', 'timeout', 0.0, 1.0, 'f did not return', '', NULL, 5.0, '',
    '', 'timeout');
"""


def test_a_database_of_the_previous_release_opens_and_reads_whole(tmp_path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as raw:
        raw.executescript(OLD_TABLES)
    with Store(db) as store:
        ann, bo, cat = store.results("w01")
        store.save(_lab_result("cy"))  # and takes new results beside the old ones
        assert store.result("w01", "cy").tests[1].message == "wrong"
    assert (ann.score, ann.max_score, bo.score) == (1.0, 2.0, 0.0)
    # The columns of renamed fields, under their new names: `output` was the check's message, and what was printed.
    assert ann.notes == ("a note",) and ann.printed == "printed by ann" and ann.seconds == 1.5
    assert [t.message for t in ann.tests] == ["well done", "wrong sign"] and ann.tests[1].misconception == "sign"
    assert (bo.killed_processes, bo.submitted_at_source, bo.tests[0].stopped) == \
        (2, "file time (unreliable)", "timeout")
    # Stored before `isolated` existed: strongly isolated exactly when bubblewrap ran it.
    assert (ann.isolated, bo.isolated) == (True, False)
    assert "reduced sandbox" in flags(bo) and "reduced sandbox" not in flags(ann)
    # Stored before `did_not_load` existed: a file that did not load was known by its problem's first words.
    assert (ann.did_not_load, cat.did_not_load) == (False, True) and "not loaded" in flags(cat)
    with Store(db) as store:  # the column is filled once, when it is added: a new result keeps its own
        store.save(dataclasses.replace(ann, student="dee", isolated=False))
        assert store.result("w01", "dee").isolated is False


def test_a_file_that_is_no_results_database_is_refused_with_what_to_do(tmp_path):
    """Not 'the damaged file' for every failure: a file that is no database is moved away; one that cannot be
    written is made writable or copied (SQLite writes -wal and -shm beside it, even to read)."""
    spoiled = tmp_path / "grades.db"
    spoiled.write_bytes(b"these are not the grades you are looking for" * 100)
    with pytest.raises(StoreError, match=r"it is not one, or it is damaged .*Move it away \(nothing is deleted\)"):
        Store(spoiled)
    assert spoiled.read_bytes().startswith(b"these are not")  # left as it was


def _read_only_here(share: Path, command: str) -> subprocess.CompletedProcess:
    """`command` (shell) run where `share` is mounted read-only, as a TA sees an instructor's share: even root
    cannot write it (a mount namespace of its own, so nothing outside changes)."""
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m is refused here, so no read-only mount can be made")
    mount = f"mount --bind {share} {share} && mount -o remount,bind,ro {share} && {command}"
    return subprocess.run(["unshare", "-m", "sh", "-c", mount], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=repository_env())


def test_a_database_on_a_read_only_share_is_read_where_it_lies(tmp_path, grade_once):
    """report, export and history only read the grades: they open a database they cannot write read-only (SQLite
    would write -wal and -shm beside it), and write nothing there."""
    share, out = tmp_path / "share", tmp_path / "out"
    share.mkdir()
    result = dataclasses.replace(grade_once(PLAIN, "ann"), student="ann")
    with Store(share / "grades.db") as store:
        store.save(result)
    python = shlex.quote(sys.executable)
    ran = _read_only_here(share, f"{python} -m autograder export csv --db {share}/grades.db --out {out}/g.csv && "
                                 f"{python} -m autograder history w07_attention ann --db {share}/grades.db && "
                                 f"{python} -m autograder report --db {share}/grades.db --out {out}/report")
    assert ran.returncode == 0, ran.stderr
    assert next(csv.DictReader(io.StringIO((out / "g.csv").read_text())))["student"] == "ann"
    assert f"{result.score:g} / {result.max_score:g}" in ran.stdout  # history's line of the hand-in
    assert (out / "report" / "feedback").is_dir()
    assert sorted(p.name for p in share.iterdir()) == ["grades.db"]


def test_an_old_database_on_a_read_only_share_is_refused_with_what_to_do(tmp_path):
    """One that needs new columns (or its history recorded) cannot be brought up to date where it lies."""
    share = tmp_path / "share"
    share.mkdir()
    with sqlite3.connect(share / "old.db") as raw:
        raw.executescript(OLD_TABLES)
    ran = _read_only_here(share, f"{shlex.quote(sys.executable)} -m autograder export csv --assignment w01 "
                                 f"--db {share}/old.db --out {tmp_path}/g.csv")
    assert ran.returncode != 0
    assert "written by an earlier version of autograder" in ran.stderr
    assert "Copy it to a writable folder and pass --db with the copy" in ran.stderr
    with Store(share / "old.db") as store:  # the copy's way: writable, it is brought up to date as it opens
        assert len(store.results("w01")) == 3


def test_a_database_this_user_cannot_write_is_refused_when_opened_for_grading(tmp_path):
    """It opened, and failed at the first result, after the sandbox's start and the reference's timing: `grade` said
    to rerun. An immutable file (chattr +i) is one even root cannot write."""
    db = tmp_path / "grades.db"
    with Store(db) as store:
        store.save(_lab_result("ann"))
    if subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is refused on this file system, so no file here is unwritable by root")
    try:
        with pytest.raises(StoreError, match=r"must be writable by this user.*copy the database to a writable folder"):
            Store(db)
        with Store.for_reading(db) as store:  # reading it needs no write: report and export still can
            assert [r.student for r in store.results("w01")] == ["ann"]
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True)
