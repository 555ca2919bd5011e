"""Issue 15: deadlines and late work — course.yaml's rule, submission times, and the totals every output shows.

Fast: real course.yaml files, a real SQLite store, the real CLI on stored results; nothing is graded here
(tests/test_nbgrader_export.py grades a class end to end).
"""
from __future__ import annotations

import csv
import dataclasses
import datetime
import io
import json
import os
import shutil
import sqlite3
import struct
import time
import zipfile
from pathlib import Path

import pytest
import yaml
from nbgrader.utils import parse_utc

from autograder.grading.course import CourseError, load_course
from autograder.grading.discover import find_submissions
from autograder.grading.gradescope_handin import MetadataError, gradescope_extension, gradescope_time
from autograder.grading.late import (
    FILE_TIME,
    GRADESCOPE_METADATA,
    LMS_LOCAL_TIME,
    NBGRADER_TIMESTAMP,
    LateRule,
    TimeError,
    assess,
    parse_timestamp,
    with_extension,
)
from autograder.grading.results import CheckResult, SubmissionResult
from autograder.grading.store import Store
from autograder.outputs import grades_csv, gradescope
from autograder.outputs.report import write_reports

from conftest import PLAIN, ROOT, run_cli

ASSIGNMENT = "w07_attention"
DUE = "2026-11-20T23:59:00-05:00"
DUE_UTC = datetime.datetime(2026, 11, 21, 4, 59, tzinfo=datetime.UTC)
RULE = {"due": DUE, "late": {"penalty_per_day": 0.1, "grace_minutes": 15, "max_days_late": 3},
        "extensions": {"ext": "2026-11-23T23:59:00-05:00"}}


def _course(tmp_path: Path, **entry) -> Path:
    """A copy of the course's course.yaml whose assignment has `entry`'s keys added (None removes one)."""
    data = yaml.safe_load((ROOT / "course.yaml").read_text())
    settings = data["assignments"][ASSIGNMENT]
    for key, value in entry.items():
        settings.pop(key, None) if value is None else settings.__setitem__(key, value)
    settings["source"] = str(ROOT / "assignments" / ASSIGNMENT)  # absolute: the copy lives elsewhere
    settings["solution"] = str(ROOT / "solutions" / ASSIGNMENT)
    path = tmp_path / "course.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _at(hours_after_due: float) -> str:
    return (DUE_UTC + datetime.timedelta(hours=hours_after_due)).isoformat()


def _result(student: str, got: float, submitted_at: str = "", source: str = NBGRADER_TIMESTAMP) -> SubmissionResult:
    """A stored result worth 100 points, of which `got` were earned, handed in at `submitted_at`."""
    tests = (CheckResult("score.a", "score", "public", "passed" if got else "failed", got, got),
             CheckResult("score.b", "score", "hidden", "failed", 0.0, 100.0 - got, message="wrong"))
    return SubmissionResult(student=student, assignment=ASSIGNMENT, file=f"{student}.ipynb", sha256="0" * 64,
                            suite_version="v", seed=1, sandbox="bwrap", tests=tests, graded_at="2026-11-30T00:00:00",
                            submitted_at=submitted_at, submitted_at_source=source if submitted_at else "")


# ---------------------------------------------------------------- course.yaml


def test_the_rule_is_read_from_course_yaml(tmp_path):
    rule = load_course(_course(tmp_path, **RULE)).assignment(ASSIGNMENT).late
    assert rule.due == DUE_UTC and rule.penalty_per_day == 0.1 and rule.grace_minutes == 15
    assert rule.max_days_late == 3
    assert rule.deadline("ext") == datetime.datetime(2026, 11, 24, 4, 59, tzinfo=datetime.UTC)
    assert rule.deadline("anyone") == DUE_UTC
    assert load_course(ROOT / "course.yaml").assignment(ASSIGNMENT).late == LateRule()  # no due: nothing is late


@pytest.mark.parametrize("entry, key, words", [
    ({"due": "next Friday"}, "assignments.w07_attention.due", "ISO 8601"),
    ({"due": "2026-11-20T23:59:00"}, "assignments.w07_attention.due", "no offset"),
    ({"due": "2026-11-20"}, "assignments.w07_attention.due", "no offset"),
    ({"due": DUE, "late": {"penalty_per_day": -0.1}}, "assignments.w07_attention.late.penalty_per_day", ">= 0"),
    ({"due": DUE, "late": {"penalty_per_day": 10}}, "assignments.w07_attention.late.penalty_per_day", "at most 1"),
    ({"due": DUE, "late": {"grace_minutes": -5}}, "assignments.w07_attention.late.grace_minutes", ">= 0"),
    ({"due": DUE, "late": {"max_days_late": "two"}}, "assignments.w07_attention.late.max_days_late", "number"),
    ({"due": DUE, "late": {"penalty_per_hour": 0.1}}, "assignments.w07_attention.late.penalty_per_hour",
     "unknown key"),
    ({"due": DUE, "extensions": {"s0007": "Monday"}}, "assignments.w07_attention.extensions.s0007", "ISO 8601"),
    ({"late": {"penalty_per_day": 0.1}}, "assignments.w07_attention.late", "needs the assignment's due time"),
    ({"due": DUE, "time_zone": "Eastern"}, "assignments.w07_attention.time_zone", "IANA database names it"),
    ({"due": DUE, "time_zone": "EST"}, "assignments.w07_attention.time_zone", "stays on standard time all summer"),
    ({"due": DUE, "time_zone": "PST8PDT"}, "assignments.w07_attention.time_zone", "America/New_York"),
    ({"extensions": {"s0007": DUE}}, "assignments.w07_attention.extensions", "needs the assignment's due time"),
    ({"due": DUE, "extensions": {12345: DUE}}, "assignments.w07_attention.extensions.12345", "write the id in quotes"),
    ({"due": DUE, "extensions": {"S0007": DUE, "s0007": DUE}}, "assignments.w07_attention.extensions",
     "names one student twice, as 'S0007' and 's0007'"),
])
def test_bad_values_are_refused_naming_the_key(tmp_path, entry, key, words):
    with pytest.raises(CourseError) as raised:
        load_course(_course(tmp_path, **entry))
    assert f": {key}: " in str(raised.value) and words in str(raised.value)


# ---------------------------------------------------------------- the rule


@pytest.mark.parametrize("hours, penalty, days", [
    (-1, 0, 0),  # on time
    (0.2, 0, 0),  # 12 minutes late: within the 15-minute grace
    (0.3, 8, 1),  # the first started day after due + grace: 10% of 80
    (24.25, 8, 1),  # exactly one day after due + grace
    (24.26, 16, 2),  # a second day has started
    (72.25, 24, 3),  # three days after due + grace: the limit itself
    (72.3, 80, 4),  # beyond max_days_late: the total is 0
])
def test_the_penalty_follows_the_rule(tmp_path, hours, penalty, days):
    rule = load_course(_course(tmp_path, **RULE)).assignment(ASSIGNMENT).late
    late = assess(rule, "s1", 80.0, _at(hours), NBGRADER_TIMESTAMP)
    assert (late.penalty, late.days) == (penalty, days)
    assert late.total == 80 - penalty and late.late_by_hours == round(max(0.0, hours), 2)
    assert ("late" in late.reason) == (hours > 0.25) and ("grace" in late.reason) == (0 < hours <= 0.25)


def test_a_hand_in_seconds_late_or_with_nothing_to_take_is_still_called_late(tmp_path):
    # 17 s after a due time without grace was "late by 0.0 hours" with 10 points taken; a file that did not load
    # (0 points), 5 hours late, was flagged "late, within the grace" beyond a grace of 0 minutes.
    rule = load_course(_course(tmp_path, **{**RULE, "late": {"penalty_per_day": 0.1, "grace_minutes": 0}})).assignment(
        ASSIGNMENT).late
    seconds_late = assess(rule, "s1", 80.0, _at(17 / 3600), NBGRADER_TIMESTAMP)
    assert seconds_late.penalty == 8 and seconds_late.late_by_hours == 0.01
    assert "handed in 17 seconds after the due time" in seconds_late.reason
    nothing = assess(rule, "s1", 0.0, _at(5.2), NBGRADER_TIMESTAMP)
    assert nothing.flags() == ["late (−0)"] and "handed in 5.2 hours after" in nothing.reason
    assert assess(rule, "s1", 80.0, _at(0.5), NBGRADER_TIMESTAMP).reason.startswith("handed in 30 minutes after")


def test_an_extension_moves_the_students_own_deadline(tmp_path):
    rule = load_course(_course(tmp_path, **RULE)).assignment(ASSIGNMENT).late
    two_days_late = _at(48)
    assert assess(rule, "ext", 80.0, two_days_late, NBGRADER_TIMESTAMP).penalty == 0
    assert assess(rule, "other", 80.0, two_days_late, NBGRADER_TIMESTAMP).penalty == 16
    assert rule.unknown_students({"other"}) == ["ext"]


def test_a_file_time_is_flagged_and_an_unknown_time_applies_no_penalty(tmp_path):
    rule = load_course(_course(tmp_path, **RULE)).assignment(ASSIGNMENT).late
    late = assess(rule, "s1", 80.0, _at(30), FILE_TIME)
    assert late.penalty == 16 and "unreliable" in late.reason and "time from the file" in late.flags()
    unknown = assess(rule, "s1", 80.0, "", "")
    assert unknown.penalty == 0 and unknown.late_by_hours is None and "again with --force" in unknown.reason
    assert assess(None, "s1", 80.0, _at(1000), FILE_TIME).total == 80  # no rule: nothing is late


@pytest.mark.slow  # the whole command
def test_blackboard_times_are_read_on_the_institutions_clock_however_the_due_time_is_written(tmp_path):
    """A Blackboard attempt time has no zone. Read in the due time's offset, it was three hours late against
    `due: ...-05:00` and on time against the same instant written in UTC. With `time_zone` it is read on the
    institution's clock, summer time included, and both forms of the due time agree."""
    attempt = "2026-11-20T22:00:00"  # 22:00 in New York, 03:00 UTC the next day: 2 minutes before the due time
    for due in ("2026-11-20T22:02:00-05:00", "2026-11-21T03:02:00Z"):
        rule = load_course(_course(tmp_path, due=due, time_zone="America/New_York")).assignment(ASSIGNMENT).late
        assert assess(rule, "s1", 80.0, attempt, LMS_LOCAL_TIME).penalty == 0, due
    summer = load_course(_course(tmp_path, due="2026-07-01T12:00:00Z", time_zone="America/New_York",
                                 late={"penalty_per_day": 0.1})).assignment(ASSIGNMENT).late
    assert assess(summer, "s1", 80.0, "2026-07-01T07:30:00", LMS_LOCAL_TIME).late_by_hours == 0  # EDT, −04:00
    assert assess(summer, "s1", 80.0, "2026-07-01T08:30:00", LMS_LOCAL_TIME).late_by_hours == 0.5
    # 01:00 in New York is 06:00 UTC, three hours late; without a zone it is read as 01:00 UTC, on time.
    zoned = load_course(_course(tmp_path, due="2026-11-21T03:00:00Z", time_zone="America/New_York",
                                late={"penalty_per_day": 0.1})).assignment(ASSIGNMENT).late
    assert assess(zoned, "s1", 80.0, "2026-11-21T01:00:00", LMS_LOCAL_TIME).late_by_hours == 3
    zoneless = dataclasses.replace(zoned, time_zone="")
    assert assess(zoneless, "s1", 80.0, "2026-11-21T01:00:00", LMS_LOCAL_TIME).late_by_hours == 0


def test_blackboard_times_on_a_clock_change_are_flagged_and_every_time_is_exported_in_utc(tmp_path):
    """Blackboard's attempt times carry no zone. On the night the clocks go back 01:30 happens twice: it is read as
    the earlier, and said so; on the night they skip an hour 02:30 does not exist: said too. The CSV writes each
    time in UTC with its offset, and its source names the zone it was read in."""
    course = _course(tmp_path, due="2026-11-01T01:45:00-04:00", time_zone="America/New_York",
                     late={"penalty_per_day": 0.1, "grace_minutes": 15, "max_days_late": 5})
    folder = tmp_path / "download"
    folder.mkdir()
    for student, attempt in {"amb": "2026-11-01-01-30-00", "gap": "2026-03-08-02-30-00",
                             "late1": "2026-11-01-03-30-00"}.items():
        shutil.copy(PLAIN, folder / f"HW7_{student}_attempt_{attempt}_attention.py")
        (folder / f"HW7_{student}_attempt_{attempt}.txt").write_text(f"Name: {student}\nAssignment: HW7\n")
    done = run_cli("grade", ASSIGNMENT, folder, "--course", course, "--db", "g.db", "--jobs", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "amb: Blackboard's attempt time 2026-11-01 01:30:00 happened twice in America/New_York (the clocks went " \
           "back that night): it was read as the earlier, 2026-11-01T05:30:00+00:00" in done.stderr, done.stderr
    assert "gap: Blackboard's attempt time 2026-03-08 02:30:00 does not exist in America/New_York" in done.stderr
    assert "Check the attempt's time in Blackboard" in done.stderr and "late1: Blackboard" not in done.stderr
    # Each one's table says how its time was read, as the flag says in a class's summary and in the CSV.
    assert "late rule: handed in on time (Blackboard's attempt time 2026-11-01 01:30:00 happened twice" in done.stdout
    assert "late rule: handed in on time (Blackboard's attempt time 2026-03-08 02:30:00 does not exist" in done.stdout
    exported = run_cli("export", "csv", "--db", "g.db", "--course", course, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    table = {row["student"]: row for row in csv.DictReader(io.StringIO(exported.stdout))}
    assert table["late1"]["submitted_at"] == "2026-11-01T08:30:00+00:00"  # 03:30 EST: after the clocks went back
    assert table["late1"]["late_by"] == "2.75" and table["late1"]["total"] == "90"
    assert {row["submitted_at_source"] for row in table.values()} == {"Blackboard attempt time (in America/New_York)"}
    assert table["amb"]["submitted_at"] == "2026-11-01T05:30:00+00:00" and "happened twice" in \
        table["amb"]["penalty_reason"] and "time on a clock change" in table["amb"]["flags"]
    assert table["gap"]["submitted_at"] == "2026-03-08T07:30:00+00:00" and "does not exist" in \
        table["gap"]["penalty_reason"] and "time on a clock change" in table["gap"]["flags"]
    assert "time on a clock change" not in table["late1"]["flags"]


def test_a_blackboard_time_stored_without_a_zone_is_exported_in_utc_in_the_due_times_offset(tmp_path):
    """Stores written before keep Blackboard's time as it wrote it, under its first label: read as before, and
    exported in UTC, the source naming the offset used."""
    course = _course(tmp_path, **RULE)
    db = tmp_path / "grades.db"
    with Store(db) as store:
        store.save(_result("bb", 80.0, "2026-11-21T01:00:00", LMS_LOCAL_TIME))
        store.save(_result("nb", 80.0, "2026-11-20T20:00:00+00:00", NBGRADER_TIMESTAMP))
    exported = run_cli("export", "csv", "--db", db, "--course", course, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    table = {row["student"]: row for row in csv.DictReader(io.StringIO(exported.stdout))}
    assert table["bb"]["submitted_at"] == "2026-11-21T06:00:00+00:00" and table["bb"]["late_by"] == "1.02"
    assert table["bb"]["submitted_at_source"] == "Blackboard attempt time (in the due time's offset, UTC-05:00)"
    assert table["nb"]["submitted_at"] == "2026-11-20T20:00:00+00:00"
    assert table["nb"]["submitted_at_source"] == NBGRADER_TIMESTAMP
    done = run_cli("export", "gradescope", "--db", db, "--course", course, "--out", "gs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    extra = json.loads((tmp_path / "gs" / "bb" / "results.json").read_text())["extra_data"]
    assert extra["submitted_at"] == "2026-11-21T06:00:00+00:00" and "UTC-05:00" in extra["submitted_at_source"]


def test_grade_shows_each_total_after_the_late_rule_and_names_hand_ins_timed_by_their_files(tmp_path):
    course = _course(tmp_path, **RULE)
    times = {"ontime": "2026-11-20 20:00:00.000000 -0500", "late": "2026-11-22 11:00:00.000000 -0500",
             "early": "2026-11-19 09:00:00.000000 -0500", "garbled": "yesterday-ish", "untimed": None}
    for student, stamp in times.items():
        folder = tmp_path / "course" / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        shutil.copy(PLAIN, folder / "attention.py")
        if stamp is not None:
            (folder / "timestamp.txt").write_text(stamp)
    done = run_cli("grade", ASSIGNMENT, "course", "--course", course, "--db", "g.db", "--jobs", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()
            if line.split()[:1] and line.split()[0] in times and not line.startswith(" ")}  # not the legend
    assert "garbled" not in rows  # held back: no result to list
    assert rows["ontime"].split()[1:4] == ["100", "/", "100"] and "late" not in rows["ontime"]
    assert rows["late"].split()[1:4] == ["80", "/", "100"] and "late (−20)" in rows["late"]  # 2 started days × 10 %
    assert "late (−N): handed in after the due time" in done.stdout  # the legend says what the flag means
    exported = run_cli("export", "csv", "--db", "g.db", "--course", course, cwd=tmp_path)
    totals = {row["student"]: float(row["total"]) for row in csv.DictReader(io.StringIO(exported.stdout))}
    # garbled's timestamp.txt cannot be read: held back, not stored at its file's time (it had been late −100).
    assert "garbled" not in totals
    assert {student: float(rows[student].split()[1]) for student in times if student != "garbled"} == totals
    # Every output says so too: a due time added after grading had zeroed such hand-ins in an LMS file unsaid.
    assert "the late rule cuts 1 total by the hand-in's file modification time, which copying or extracting the " \
           "class folder changes (untimed)" in exported.stderr, exported.stderr
    assert "not graded, nothing stored: garbled: timestamp.txt could not be read ('yesterday-ish' is not a time" \
           in done.stderr and "; fix timestamp.txt and grade again" in done.stderr, done.stderr
    # Nothing is stored of it, so later commands cannot name it: this run says what they will do.
    assert "Until then `report` and every export leave this student out, as nothing is stored" in done.stderr
    assert "1 hand-in has no timestamp.txt" in done.stderr and "(untimed)" in done.stderr


# ---------------------------------------------------------------- submission times


@pytest.mark.parametrize("text", ["2026-11-30 20:46:00.123456 UTC", "2026-11-30 21:46:00.123456 +0100",
                                  "2026-11-30 15:46:00.123456 America/New_York", "2026-11-30T20:46:00.123456Z",
                                  "2026-11-30 20:46:00.123456", "\ufeff2026-11-30 20:46:00.123456 UTC\r\n"])
def test_nbgrader_timestamps_are_read_in_utc(text):
    # The last as an editor on Windows saves it: a byte order mark, CRLF. It had been unreadable.
    assert parse_timestamp(text) == datetime.datetime(2026, 11, 30, 20, 46, 0, 123456, tzinfo=datetime.UTC)


@pytest.mark.parametrize("text", ["2026-13-45 99:99:99 UTC", "2026-11-20 25:00:00 UTC", "2026-02-30 10:00:00 UTC"])
def test_a_timestamp_of_no_real_time_is_refused_with_what_to_do(text):
    """Of nbgrader's form, but no such time: it had stopped `grade` for the whole class with a traceback."""
    with pytest.raises(TimeError, match="is no real time .*; write the time the hand-in came in"):
        parse_timestamp(text)


@pytest.mark.parametrize("text", ["2026-07-30 16:46:00.5 EDT", "2026-07-30 13:46:00.5 PDT",
                                  "2026-07-30 22:46:00.5 CEST", "2026-01-31 07:46:00.5 AEDT",
                                  "2026-07-30 20:46:00.5 utc"])
def test_the_zone_abbreviations_nbgrader_writes_for_a_place_are_read(text):
    # With nbgrader's `timezone = "America/New_York"`, a summer hand-in's timestamp.txt ends in EDT: it had been
    # refused, and the file's time taken instead, which made a hand-in ten minutes late 100 % late.
    assert parse_timestamp(text).astimezone(datetime.UTC).time() == datetime.time(20, 46, 0, 500000)
    with pytest.raises(TimeError, match="names several zones, as CST, IST or BST"):
        parse_timestamp("2026-07-30 20:46:00.5 IST")


def test_nbgrader_reads_its_own_format_as_we_do():
    """The formgrader counts a submission as autograded only if both readings of timestamp.txt agree."""
    text = "2026-11-30 20:46:00.123456 UTC"
    assert parse_utc(text) == parse_timestamp(text).replace(tzinfo=None)
    with pytest.raises(TimeError, match="not a time"):
        parse_timestamp("yesterday")


def test_discover_takes_nbgrader_timestamps_else_the_file_time(tmp_path):
    for student, stamp in (("a", "2026-11-20 10:00:00.5 UTC"), ("b", "garbage"), ("c", None)):
        folder = tmp_path / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / "attention.py").write_text("x = 1\n")
        if stamp:
            (folder / "timestamp.txt").write_text(stamp + "\n")
    os.utime(tmp_path / "submitted" / "c" / ASSIGNMENT / "attention.py", (1.8e9, 1.8e9))
    found = {f.student: f for f in find_submissions([tmp_path], ASSIGNMENT, "attention", tmp_path)}
    assert (found["a"].submitted_at, found["a"].submitted_at_source) == \
        ("2026-11-20T10:00:00.500000+00:00", NBGRADER_TIMESTAMP)
    assert found["b"].submitted_at_source == FILE_TIME and "timestamp.txt could not be read" in found["b"].note
    assert found["c"].submitted_at == datetime.datetime.fromtimestamp(1.8e9, datetime.UTC).isoformat()
    assert found["c"].submitted_at_source == FILE_TIME


def test_one_students_part_of_a_submitted_tree_is_that_student_at_their_timestamp(tmp_path):
    """A TA grading one student's hand-in names their folder, its assignment folder or the notebook in it: each is
    the student, at their timestamp.txt, as grading the class finds them. It had been stored as a student named
    after the assignment's folder or the file (`w07_attention`, `attention`), at the file's time: late, and one
    "student" for every hand-in graded so."""
    folder = tmp_path / "submitted" / "s0121" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / "attention.ipynb").write_text("{}")
    (folder / "scratch.py").write_text("x = 1\n")
    (folder / "timestamp.txt").write_text("2026-11-21 01:00:00.000000 UTC\n")
    for path in (folder.parent, folder, folder / "attention.ipynb"):
        [found] = find_submissions([path], ASSIGNMENT, "attention", tmp_path)
        assert (found.student, found.submitted_at_source) == ("s0121", NBGRADER_TIMESTAMP), path
        assert found.submitted_at == "2026-11-21T01:00:00+00:00" and found.path.name == "attention.ipynb"
        assert found.stored and not found.problem
    # Another file of theirs, named: stored, it would replace their hand-in at the same time. Refused, said why.
    [scratch] = find_submissions([folder / "scratch.py"], ASSIGNMENT, "attention", tmp_path)
    assert scratch.student == "s0121" and not scratch.stored
    assert "scratch.py is not the file grading the class takes from s0121's hand-in (attention.ipynb)" in \
        scratch.problem


def test_a_zipped_file_keeps_the_time_the_zip_records(tmp_path):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr(zipfile.ZipInfo("alice.py", date_time=(2026, 11, 19, 8, 30, 0)), "x = 1\n")
    [found] = find_submissions([archive], ASSIGNMENT, "attention", tmp_path)
    expected = datetime.datetime.fromtimestamp(time.mktime((2026, 11, 19, 8, 30, 0, 0, 0, -1)), datetime.UTC)
    assert found.submitted_at == expected.isoformat() and found.submitted_at_source == FILE_TIME


def test_a_zip_made_elsewhere_keeps_its_utc_time_and_its_utf8_names(tmp_path):
    """Info-ZIP (Linux, macOS) writes UTF-8 names without the flag that says so, and keeps the UTC time beside the
    zip's zoneless local one: a zip made in Berlin of an on-time hand-in was read an hour late, and "Zoë Ünicode"
    became the student "Zo├½ ├£nicode" beside the real one."""
    moment = datetime.datetime(2026, 11, 20, 23, 20, tzinfo=datetime.UTC)
    berlin = (2026, 11, 21, 0, 20, 0)  # the same instant on a Berlin clock, as the zip's own time holds it
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for name, extra in (("Zo__X__nicode.py", b""),
                            ("ontime.py", struct.pack("<HHBi", 0x5455, 5, 1, int(moment.timestamp())))):
            member = zipfile.ZipInfo(name, date_time=berlin)
            member.extra = extra
            bundle.writestr(member, "x = 1\n")
    # The name's UTF-8 bytes where the placeholder's (as many) are, with no UTF-8 flag: Info-ZIP's way.
    archive.write_bytes(archive.read_bytes().replace(b"Zo__X__nicode", "Zoë Ünicode".encode()))
    found = {item.student: item for item in find_submissions([archive], ASSIGNMENT, "attention", tmp_path)}
    assert set(found) == {"Zoë Ünicode", "ontime"}
    assert found["ontime"].submitted_at == moment.isoformat()


def test_gradescope_time_comes_from_its_metadata(tmp_path):
    metadata = tmp_path / "submission_metadata.json"
    metadata.write_text(json.dumps({"created_at": "2026-11-21T06:59:00.5-05:00", "users": []}))
    picked = tmp_path / "attention.py"
    picked.write_text("x = 1\n")
    assert gradescope_time(metadata, picked) == ("2026-11-21T11:59:00.500000+00:00", GRADESCOPE_METADATA)
    metadata.write_text(json.dumps({"created_at": "yesterday", "users": []}))
    with pytest.raises(MetadataError, match="created_at` that is not a time"):
        gradescope_time(metadata, picked)  # a wrong time would be judged late or not: no time is taken then
    metadata.unlink()  # a local run of the bundle has no metadata: the file's time stands in, flagged
    assert gradescope_time(metadata, picked)[1] == FILE_TIME


# ---------------------------------------------------------------- the store


def test_the_store_keeps_the_raw_score_and_the_time_and_upgrades_an_old_database(tmp_path):
    db = tmp_path / "grades.db"
    with sqlite3.connect(db) as old:  # a database from before submission times were kept
        old.execute("CREATE TABLE submissions (id INTEGER PRIMARY KEY, assignment TEXT NOT NULL, student TEXT NOT "
                    "NULL, file TEXT NOT NULL, sha256 TEXT NOT NULL, suite_version TEXT NOT NULL, seed INTEGER NOT "
                    "NULL, sandbox TEXT NOT NULL, score REAL NOT NULL, max_score REAL NOT NULL, problem TEXT NOT NULL,"
                    " notes TEXT NOT NULL, output TEXT NOT NULL, killed_processes INTEGER NOT NULL, seconds REAL NOT "
                    "NULL, graded_at TEXT NOT NULL, internal_error TEXT NOT NULL DEFAULT '', UNIQUE (assignment, "
                    "student))")
        old.execute("INSERT INTO submissions VALUES (1, ?, 'old', 'f', 'h', 'v', 1, 'bwrap', 0, 0, '', '[]', '', 0, "
                    "0, '', '')", (ASSIGNMENT,))
    late = _result("late", 80.0, _at(30))
    with Store(db) as store:
        assert store.result(ASSIGNMENT, "old").submitted_at == ""
        store.save(late)
        stored = store.result(ASSIGNMENT, "late")
        assert stored.score == 80 and (stored.submitted_at, stored.submitted_at_source) == (_at(30), NBGRADER_TIMESTAMP)
        assert store.is_current(ASSIGNMENT, "late", "0" * 64, "v", _at(30))
        assert not store.is_current(ASSIGNMENT, "late", "0" * 64, "v", _at(31))  # handed in again: graded again
    row = sqlite3.connect(db).execute("SELECT score FROM submissions WHERE student='late'").fetchone()
    assert row == (80.0,)  # raw: the penalty is derived when grades are written out


# ---------------------------------------------------------------- outputs


def _class() -> list[SubmissionResult]:
    return [_result("ontime", 90.0, _at(-2)), _result("late", 80.0, _at(30)), _result("ext", 80.0, _at(48)),
            _result("gone", 70.0, _at(100)), _result("filetime", 60.0, _at(1), FILE_TIME)]


def test_csv_totals_follow_the_rule_and_honour_the_extension(tmp_path):
    rule = load_course(_course(tmp_path, **RULE)).assignment(ASSIGNMENT).late
    stream = io.StringIO()
    grades_csv.write_csv(_class(), stream, rule)
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(stream.getvalue()))}
    expected = {"ontime": ("90", "90", "0", "0"), "late": ("64", "80", "16", "30"), "ext": ("80", "80", "0", "0"),
                "gone": ("0", "70", "70", "100"), "filetime": ("54", "60", "6", "1")}
    for student, (total, raw, penalty, late_by) in expected.items():
        row = rows[student]
        assert (row["total"], row["raw_total"], row["penalty"], row["late_by"]) == (total, raw, penalty, late_by)
    assert rows["late"]["submitted_at"] == _at(30) and rows["late"]["submitted_at_source"] == NBGRADER_TIMESTAMP
    assert "2 started days" in rows["late"]["penalty_reason"] and "unreliable" in rows["filetime"]["penalty_reason"]
    assert "more than 3 days late" in rows["gone"]["penalty_reason"]


def test_an_extension_applies_to_the_student_whatever_the_case_of_its_id(tmp_path):
    """Ids that differ only in case are one student everywhere (grading.ids), a hand-typed extension too."""
    rule = load_course(_course(tmp_path, **{**RULE, "extensions": {"Zoe@Example.com": RULE["extensions"]["ext"]}}))
    rule = rule.assignments["w07_attention"].late
    assert rule.deadline("zoe@example.com") == rule.extensions["Zoe@Example.com"] != rule.due
    assert rule.deadline("someone") == rule.due and rule.unknown_students({"ZOE@example.com"}) == []


def test_the_cli_exports_the_penalised_totals_and_warns_about_an_unknown_extension(tmp_path):
    course = _course(tmp_path, **{**RULE, "extensions": {"ext": RULE["extensions"]["ext"], "nobody": DUE}})
    db = tmp_path / "grades.db"
    with Store(db) as store:
        for result in _class():
            store.save(result)
    out = tmp_path / "out" / "grades.csv"
    done = run_cli("export", "csv", "--db", db, "--course", course, "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "assignments.w07_attention.extensions.nobody" in done.stderr and "check the id" in done.stderr
    rows = {row["student"]: row for row in csv.DictReader(out.open())}
    assert rows["late"]["total"] == "64" and rows["ext"]["total"] == "80"
    done = run_cli("export", "gradescope", "--db", db, "--course", course, "--out", "gs", cwd=tmp_path)
    assert done.returncode == 0 and str(tmp_path / "gs") in done.stderr  # the absolute place written
    document = json.loads((tmp_path / "gs" / "late" / "results.json").read_text())
    assert document["score"] == 64 and document["extra_data"]["raw_score"] == 80
    assert "Late penalty: −16 points" in document["output"] and "2 started days" in document["output"]


def test_gradescope_and_the_reports_show_the_penalty_with_its_reason(tmp_path):
    rule = load_course(_course(tmp_path, **RULE)).assignment(ASSIGNMENT).late
    results = _class()
    document = gradescope.gradescope_results(results[1], assess(rule, "late", 80.0, _at(30), NBGRADER_TIMESTAMP))
    assert document["score"] == 64 and sum(t["score"] for t in document["tests"]) == 80
    assert document["extra_data"]["late_penalty"] == 16 and document["extra_data"]["late_by_hours"] == 30
    write_reports(ASSIGNMENT, results, tmp_path / "report", rule)
    page = (tmp_path / "report" / "feedback" / "late.md").read_text()
    assert "**Total: 64 / 100 points.**" in page and "Late penalty: −16 points from 80" in page
    assert "within" not in page and "2 started days" in page
    index = (tmp_path / "report" / "index.html").read_text()
    assert 'data-student="late" data-score="64.0" data-raw-score="80.0"' in index and "late (−16)" in index
    assert "Late penalty" not in (tmp_path / "report" / "feedback" / "ontime.md").read_text()


def test_an_extension_granted_in_gradescope_counts_and_never_shortens_one_from_course_yaml(tmp_path):
    """Gradescope writes each submitter's own dates into submission_metadata.json: a due date later than the
    assignment's is an extension a TA granted there, which course.yaml cannot see."""
    metadata = {"created_at": "2026-11-22T10:00:00+00:00",
                "assignment": {"due_date": "2026-11-20T23:59:00-05:00"},
                "users": [{"email": "ann@example.edu", "assignment": {"due_date": "2026-11-23T23:59:00-05:00"}},
                          {"email": "bo@example.edu", "assignment": {"due_date": "2026-11-20T23:59:00-05:00"}}]}
    path = tmp_path / "submission_metadata.json"
    path.write_text(json.dumps(metadata))
    granted = gradescope_extension(path)
    assert granted == datetime.datetime.fromisoformat("2026-11-23T23:59:00-05:00")
    rule = LateRule(due=datetime.datetime.fromisoformat("2026-11-20T23:59:00-05:00"), penalty_per_day=0.1)
    assert assess(with_extension(rule, "ann", granted), "ann", 10.0, metadata["created_at"], "").penalty == 0
    assert assess(rule, "ann", 10.0, metadata["created_at"], "").penalty > 0  # without it: late
    later = LateRule(due=rule.due, extensions={"ann": datetime.datetime.fromisoformat("2026-11-30T00:00:00+00:00")})
    assert with_extension(later, "ann", granted) == later  # course.yaml's later extension stands
    earlier = LateRule(due=rule.due, extensions={"Ann": datetime.datetime.fromisoformat("2026-11-21T00:00:00+00:00")})
    assert with_extension(earlier, "ann", granted).deadline("ann") == granted  # its earlier one, in another case
    metadata["users"][0]["assignment"]["due_date"] = metadata["assignment"]["due_date"]
    path.write_text(json.dumps(metadata))
    assert gradescope_extension(path) is None  # every submitter on the assignment's own dates
    # Moved on Gradescope for everyone: course.yaml's rule stands, and the autograder's log says so.
    from autograder.cli.gradescope import _say_if_due_differs
    from autograder.grading.gradescope_handin import gradescope_due

    log = io.StringIO()
    _say_if_due_differs(rule, gradescope_due(path), log)
    assert log.getvalue() == ""
    metadata["assignment"]["due_date"] = "2026-11-22T16:00:00-05:00"
    path.write_text(json.dumps(metadata))
    _say_if_due_differs(rule, gradescope_due(path), log)
    assert "Gradescope's due time for this assignment is 2026-11-22T16:00:00-05:00, course.yaml's is " \
           "2026-11-20T23:59:00-05:00; the late rule uses course.yaml's" in log.getvalue(), log.getvalue()


def test_an_impossible_date_written_plainly_is_named_with_its_key(tmp_path):
    """YAML reads an unquoted time itself, and an impossible one (30 November has no 31st) failed the whole file with
    a traceback; the due time and extensions are read as the keys they are, valid unquoted times included."""
    path = _course(tmp_path, due=DUE, extensions={"ext": "2026-11-23T23:59:00-05:00"})
    later = "2026-11-23T23:59:00-05:00"
    plain = path.read_text().replace(f"'{DUE}'", DUE).replace(f"'{later}'", later)
    path.write_text(plain)
    assert load_course(path).assignment(ASSIGNMENT).late.deadline("ext") > DUE_UTC  # unquoted, read as times
    path.write_text(plain.replace(DUE, "2026-11-31T23:59:00-05:00"))
    with pytest.raises(CourseError, match=r"assignments\.w07_attention\.due: .*day is out of range for month"):
        load_course(path)
